"""slime's and miles' own test suites, run against rewardrouter's hooks from their checkouts.

- **slime** ``tests/plugin_contracts``: the contract tests a plugin path must pass, pointed at
  ``rewardrouter.integrations.slime`` (``custom_rm``, then ``batched_custom_rm`` with
  ``--group-rm``, and ``post_process_rewards``) through the ``SLIME_CONTRACT_*`` variables the
  suite reads. Its samples name no dataset, so the router config here has a default route.
- **miles** ``tests/fast/ray/rollout/test_train_data_conversion.py``, classes
  ``TestConvertSamplesToTrainData``, ``TestPostProcessRewards`` and
  ``TestPostProcessRewardsProperties`` (the reward normalization and the train-data conversion
  around it), and ``test_multi_lora_train_data.py`` (heterogeneous LoRA groups): miles' built-in
  normalization is replaced by
  ``rewardrouter.integrations.miles.post_process_rewards`` with a router whose advantage stage
  is the one miles' flags in each test ask for (``grpo`` with or without the std, centering
  only, or ``none``), so every expectation of the suite applies to the router's hook. The root
  ``conftest.py`` (it imports the generation stack) is not loaded; the tests import their own
  helpers.

Each suite runs in a pytest subprocess from the checkout; the table gives passed / failed /
total per run, then each failed test. A test in :data:`WORDING` fails by design (it matches the
framework's own error text, which rewardrouter words its own way); any other failure makes the
exit status 1.

    git clone https://github.com/THUDM/slime /tmp/slime
    git clone https://github.com/radixark/miles /tmp/miles
    pip install httpx            # imported by both suites' helpers, not by rewardrouter
    python benchmarks/trainer_suites.py --slime /tmp/slime --miles /tmp/miles

The module is also the pytest plugin that swaps miles' normalization (``-p trainer_suites``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MILES_FILE = "tests/fast/ray/rollout/test_train_data_conversion.py"
MILES_MULTI_LORA = "tests/fast/ray/rollout/test_multi_lora_train_data.py"
MILES_CLASSES = (
    "TestConvertSamplesToTrainData",
    "TestPostProcessRewards",
    "TestPostProcessRewardsProperties",
)
SLIME_ROUTER = """\
default_route: any
routes:
  any:
    rewards:
      correct: {kind: exact_match}
post_process:
  - {kind: grpo}
"""
SLIME_RUNS = {
    "custom_rm": {"CUSTOM_RM_PATH": "rewardrouter.integrations.slime.custom_rm"},
    "batched_custom_rm, --group-rm": {
        "CUSTOM_RM_PATH": "rewardrouter.integrations.slime.batched_custom_rm",
        "GROUP_RM": "1",
    },
}
POST_PROCESS = {
    "CUSTOM_REWARD_POST_PROCESS_PATH": "rewardrouter.integrations.slime.post_process_rewards"
}


# -- the pytest plugin (loaded into miles' test run) -----------------------------------------


def miles_stage(args: Any) -> str:
    """The router advantage stage equal to miles' default normalization under ``args``."""
    estimator = getattr(args, "advantage_estimator", None)
    if not getattr(args, "rewards_normalization", False):
        return "{kind: none}"
    if estimator in ("grpo", "gspo"):
        std = "group" if getattr(args, "grpo_std_normalization", False) else "none"
        return f"{{kind: grpo, std: {std}, eps: 1.0e-6}}"
    if estimator == "reinforce_plus_plus_baseline":
        return "{kind: grpo, std: none}"  # miles centers; it does not whiten on this path
    return "{kind: none}"


def _router_file(stage: str) -> str:
    folder = Path(os.environ["RR_SUITE_DIR"])
    path = folder / f"router_{hashlib.sha1(stage.encode()).hexdigest()[:12]}.yaml"
    if not path.exists():
        path.write_text(f"routes: {{}}\npost_process:\n  - {stage}\n")
    return str(path)


def pytest_configure(config: Any) -> None:
    """In miles' run: route its default normalization through the router's hook."""
    if os.environ.get("RR_SUITE") != "miles":
        return
    import miles.ray.rollout.train_data_conversion as conversion

    from rewardrouter.integrations.miles import post_process_rewards

    builtin = conversion._post_process_rewards

    def through_the_router(
        args: Any,
        samples: Sequence[Any],
        custom_reward_post_process_func: Any,
        prompt_group_sizes: Sequence[int] | None = None,
    ) -> Any:
        if custom_reward_post_process_func is not None:  # a test of the hook seam itself
            return builtin(args, samples, custom_reward_post_process_func, prompt_group_sizes)
        args.rewardrouter_config = _router_file(miles_stage(args))
        return post_process_rewards(args, samples, prompt_group_sizes)

    conversion._post_process_rewards = through_the_router


# -- the runner ------------------------------------------------------------------------------


#: Tests of a suite that fail by design, and why: they match the framework's own error text,
#: which rewardrouter words its own way (the error carries the same facts).
WORDING = {
    f"{MILES_FILE}::TestPostProcessRewards::test_grpo_rejects_different_sibling_rewards": (
        "matches miles' error text; rewardrouter refuses the same batch with its own words, "
        "naming the rollout, its samples and their rewards"
    ),
}


Run = tuple[str, int, int, str, list[str]]  # name, passed, failed, summary, failed tests


def _pytest(
    checkout: Path, targets: list[str], env: dict[str, str]
) -> tuple[int, int, str, list[str]]:
    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *targets]
    paths = [str(HERE), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    tail = lines[-1] if lines else done.stderr[-500:]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error)", tail)}
    failed = [line.split()[1] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return counts.get("passed", 0), counts.get("failed", 0) + counts.get("error", 0), tail, failed


def run_slime(checkout: Path, folder: Path) -> list[Run]:
    config = folder / "slime_router.yaml"
    config.write_text(SLIME_ROUTER)
    rows = []
    for name, paths in SLIME_RUNS.items():
        env = {f"SLIME_CONTRACT_{k}": v for k, v in {**paths, **POST_PROCESS}.items()}
        env["REWARDROUTER_CONFIG"] = str(config)
        rows.append(
            (
                f"slime plugin_contracts ({name})",
                *_pytest(checkout, ["tests/plugin_contracts"], env),
            )
        )
    return rows


def run_miles(checkout: Path, folder: Path) -> list[Run]:
    env = {"RR_SUITE": "miles", "RR_SUITE_DIR": str(folder)}
    runs = {
        "miles test_train_data_conversion (3 classes)": [
            f"{MILES_FILE}::{c}" for c in MILES_CLASSES
        ],
        "miles test_multi_lora_train_data": [MILES_MULTI_LORA],
    }
    rows = []
    for name, targets in runs.items():
        rows.append(
            (name, *_pytest(checkout, ["--noconftest", "-p", "trainer_suites", *targets], env))
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--slime", type=Path, help="a slime checkout")
    parser.add_argument("--miles", type=Path, help="a miles checkout")
    args = parser.parse_args(argv)
    if args.slime is None and args.miles is None:
        parser.error("give --slime and/or --miles checkout paths")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.slime is not None:
            rows += run_slime(args.slime.resolve(), Path(tmp))
        if args.miles is not None:
            rows += run_miles(args.miles.resolve(), Path(tmp))
    width = max(len(r[0]) for r in rows)
    print(f"{'suite':<{width}}  passed  failed  total")
    for name, passed, failed, _, _ in rows:
        print(f"{name:<{width}}  {passed:>6}  {failed:>6}  {passed + failed:>5}")
    for name, _, failed, tail, tests in rows:
        if failed or not tail:
            print(f"\n{name}: {tail}")
            for test in tests:
                print(f"  {test}: {WORDING.get(test, 'failed')}")
    # done: every run passed tests, and every failure is one of WORDING's
    ok = all(r[1] > 0 and r[2] == len(r[4]) and set(r[4]) <= WORDING.keys() for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
