"""Find the program in a response: the last fenced code block, preferring the target language.

>>> extract_program("Idea first.\\n```python\\nprint(1)\\n```\\nand done", "python")
'print(1)\\n'
>>> extract_program("```python\\nprint(1)\\n```\\n```text\\nsample output\\n```", "python")
'print(1)\\n'
>>> extract_program("no code here", "python") is None
True
"""

from __future__ import annotations

import re

from rewardrouter.rewards.thinking import after_thinking

#: Tags that name each language in a fence (```py, ```python3, ...), lower case.
LANGUAGE_TAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"python", "python3", "py", "py3"}),
    "cpp": frozenset({"cpp", "c++", "cc", "cxx"}),
    "java": frozenset({"java"}),
    "go": frozenset({"go", "golang"}),
    "rust": frozenset({"rust", "rs"}),
    "nodejs": frozenset({"javascript", "js", "node", "nodejs"}),
    "typescript": frozenset({"typescript", "ts"}),
    "bash": frozenset({"bash", "sh", "shell"}),
}

# An opening fence: three or more backticks (or tildes) at the start of a line, and its tag.
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[^\s`]*)[^\n]*$", re.MULTILINE)


def _blocks(text: str) -> list[tuple[str, str]]:
    """Every closed fenced block as ``(tag, body)``, in order; a block left open is dropped."""
    blocks: list[tuple[str, str]] = []
    pos = 0
    while match := _FENCE.search(text, pos):
        fence = match["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, match.end())
        if end is None:
            blocks.append(("\0open", ""))  # truncated: whatever came before is not the answer
            break
        body = text[match.end() + 1 : end.start()]
        blocks.append((match["tag"].lower(), body))
        pos = end.end()
    return blocks


def extract_program(response: str, language: str, require_fence: bool = True) -> str | None:
    """The program in ``response`` (text after the last ``</think>``), or ``None`` when none.

    The last closed fenced block tagged with ``language`` wins; without one, the last untagged
    block. A response whose last fence is left open (cut off mid-program) has no program: an
    earlier draft is not graded in its place. Without any fence the whole answer is the program
    when ``require_fence`` is false.
    """
    text = after_thinking(response)
    blocks = _blocks(text)
    if blocks and blocks[-1][0] == "\0open":
        return None
    tags = LANGUAGE_TAGS.get(language, frozenset({language.lower()}))
    for wanted in (tags, frozenset({""})):
        for tag, body in reversed(blocks):
            if tag in wanted and body.strip():
                return body if body.endswith("\n") else body + "\n"
    if not blocks and not require_fence and text.strip():
        return text
    return None
