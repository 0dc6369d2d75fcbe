"""The ``code`` kind: run the program in a response against the tests in its label.

``extract`` (which fenced block is the program) → ``cases`` (the label's tests) → a backend runs
the program: ``local`` (this machine's sandbox, ``harness`` inside it) or ``fusion`` (a
SandboxFusion service) → ``compare`` (printed output and return values against the expected
ones, outside the sandbox) → ``kind`` (the settings and the reward callable).
"""

from rewardrouter.rewards.code.cases import Case, LabelError, parse_tests
from rewardrouter.rewards.code.extract import extract_program
from rewardrouter.rewards.code.local import LocalSandbox, SandboxError
from rewardrouter.rewards.code.settings import CodeLimits, CodeSettings

__all__ = [
    "Case",
    "CodeLimits",
    "CodeSettings",
    "LabelError",
    "LocalSandbox",
    "SandboxError",
    "extract_program",
    "parse_tests",
]
