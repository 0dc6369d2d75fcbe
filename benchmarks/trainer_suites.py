"""slime's and miles' own test suites, run against rewardrouter's hooks from their checkouts.

- **slime** ``tests/plugin_contracts``: the contract tests a plugin path must pass, pointed at
  ``rewardrouter.integrations.slime`` (``custom_rm``, then ``batched_custom_rm`` with
  ``--group-rm``, and ``post_process_rewards``) through the ``SLIME_CONTRACT_*`` variables the
  suite reads. Its samples name no dataset, so the router config here has a default route.
- **miles** ``tests/fast/ray/rollout/test_train_data_conversion.py``, classes
  ``TestConvertSamplesToTrainData``, ``TestPostProcessRewards`` and
  ``TestPostProcessRewardsProperties`` (the reward normalization and the train-data conversion
  around it), and ``test_multi_lora_train_data.py`` (heterogeneous LoRA groups). Where a test
  asks for miles' built-in normalization, the hook is handed to miles' own seam instead:
  ``miles.utils.misc.load_function("rewardrouter.integrations.miles.post_process_rewards")``
  becomes ``_post_process_rewards``'s ``custom_reward_post_process_func``, so miles calls it as
  it calls any custom hook, ``fn(args, samples)`` (never with ``prompt_group_sizes``). The
  router's advantage stage is the one miles' flags in each test ask for (``grpo`` with or
  without the std, centering only, or ``none``), so every expectation of the suite applies to
  the hook. The root ``conftest.py`` (it imports the generation stack) is not loaded.

**What was exercised.** Passing a contract test says little when the test never reaches
rewardrouter. During each run the module (loaded into the suite's pytest as a plugin,
``-p trainer_suites``) wraps rewardrouter's entry points (every function in the ``__all__`` of
``rewardrouter.integrations.slime`` and ``.miles``), ``Router.score`` and the post-process
chain, and records per test: which entry points the suite's code called, how many samples the
router scored (not those that arrived with a reward, status ``kept``, nor aborted ones), and how
many went through the post-process chain. The table prints, beside the pass counts, how many of
the counted tests called rewardrouter code at all, how many had samples scored, and how many
had rewards post-processed; the lines below it name each entry point and the tests that called
it.

Each suite runs in a pytest subprocess from the checkout; the table gives passed / failed /
total per run, then each failed test. A test in :data:`WORDING` fails by design (it matches the
framework's own error text, which rewardrouter words its own way), and one in
:data:`NOT_HANDED` asserts what miles hands its built-in normalization but not a custom hook;
any other failure makes the exit status 1.

    git clone https://github.com/THUDM/slime /tmp/slime
    git clone https://github.com/radixark/miles /tmp/miles
    python benchmarks/trainer_suites.py --slime /tmp/slime --miles /tmp/miles
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
MILES_FILE = "tests/fast/ray/rollout/test_train_data_conversion.py"
MILES_MULTI_LORA = "tests/fast/ray/rollout/test_multi_lora_train_data.py"
MILES_CLASSES = (
    "TestConvertSamplesToTrainData",
    "TestPostProcessRewards",
    "TestPostProcessRewardsProperties",
)
MILES_HOOK = "rewardrouter.integrations.miles.post_process_rewards"
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
#: An entry point called by this many tests or fewer has each of them listed.
FEW = 3
ENTRY_MODULES = ("rewardrouter.integrations.slime", "rewardrouter.integrations.miles")


# -- the pytest plugin (loaded into the suite's test run) -----------------------------------


@dataclass
class Reached:
    """What one test of a suite made rewardrouter do."""

    entries: Counter[str] = field(default_factory=Counter)  # entry point -> outermost calls
    scored: int = 0  # samples a reward function ran for (any status but kept / aborted)
    kept: int = 0  # samples that arrived with a reward (nothing scored)
    post_processed: int = 0  # samples through the shaping / advantage chain


_reached: dict[str, Reached] = {}
_test: list[str] = [""]  # the test running now ("" between tests)
_depth = [0]  # entry points nest (an entry calling another counts once)


def _now() -> Reached:
    return _reached.setdefault(_test[0], Reached())


def _entry(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` counting its outermost calls under ``name``; same signature, sync or async."""

    @contextlib.contextmanager
    def enter() -> Iterator[None]:
        if _depth[0] == 0:
            _now().entries[name] += 1
        _depth[0] += 1
        try:
            yield
        finally:
            _depth[0] -= 1

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def counted_async(*args: Any, **kwargs: Any) -> Any:
            with enter():
                return await fn(*args, **kwargs)

        return counted_async

    @functools.wraps(fn)
    def counted(*args: Any, **kwargs: Any) -> Any:
        with enter():
            return fn(*args, **kwargs)

    return counted


def _instrument() -> None:
    """Wrap the entry points, ``Router.score`` and the post-process chain in this process."""
    import importlib

    from rewardrouter.router import Router
    from rewardrouter.shape.processor import PostProcessor

    for module_name in ENTRY_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            fn = getattr(module, name)
            if inspect.isfunction(fn):
                setattr(module, name, _entry(f"{module_name}.{name}", fn))

    score = Router.score

    @functools.wraps(score)
    async def score_counted(self: Router, *args: Any, **kwargs: Any) -> Any:
        results = await score(self, *args, **kwargs)
        now = _now()
        for result in results:
            if result.status == "kept":
                now.kept += 1
            elif result.status != "aborted":
                now.scored += 1
        return results

    Router.score = score_counted  # type: ignore[method-assign]
    chain = PostProcessor.__call__

    @functools.wraps(chain)
    def chain_counted(self: PostProcessor, rewards: Sequence[float | None], **kw: Any) -> Any:
        _now().post_processed += len(rewards)
        return chain(self, rewards, **kw)

    PostProcessor.__call__ = chain_counted  # type: ignore[method-assign]


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


def _hand_miles_the_hook() -> None:
    """Where a miles test asks for its built-in normalization, give miles' seam the hook."""
    import miles.ray.rollout.train_data_conversion as conversion  # type: ignore[import-not-found]
    from miles.utils.misc import load_function  # type: ignore[import-not-found]

    builtin = conversion._post_process_rewards
    hook = load_function(MILES_HOOK)  # as miles loads --custom-reward-post-process-path

    def seam(
        args: Any,
        samples: Sequence[Any],
        custom_reward_post_process_func: Any,
        prompt_group_sizes: Sequence[int] | None = None,
    ) -> Any:
        if custom_reward_post_process_func is None:
            args.rewardrouter_config = _router_file(miles_stage(args))
            custom_reward_post_process_func = hook
        # miles' own code: a custom hook is called as fn(args, samples)
        return builtin(args, samples, custom_reward_post_process_func, prompt_group_sizes)

    conversion._post_process_rewards = seam


def pytest_configure(config: Any) -> None:
    """In a suite's run: count what reaches rewardrouter; in miles', hand it the hook."""
    suite = os.environ.get("RR_SUITE")
    if suite is None:
        return
    _instrument()
    if suite == "miles":
        _hand_miles_the_hook()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
    _test[0] = item.nodeid
    _reached.setdefault(item.nodeid, Reached())
    yield
    _test[0] = ""


def pytest_unconfigure(config: Any) -> None:
    out = os.environ.get("RR_SUITE_REACHED")
    if out is None or os.environ.get("RR_SUITE") is None:
        return
    rows = {
        test: {
            "entries": dict(r.entries),
            "scored": r.scored,
            "kept": r.kept,
            "post_processed": r.post_processed,
        }
        for test, r in _reached.items()
        if test
    }
    Path(out).write_text(json.dumps(rows, indent=1))


# -- the runner ------------------------------------------------------------------------------


#: Tests of a suite that fail by design, and why: they match the framework's own error text,
#: which rewardrouter words its own way (the error carries the same facts).
WORDING = {
    f"{MILES_FILE}::TestPostProcessRewards::test_grpo_rejects_different_sibling_rewards": (
        "matches miles' error text; rewardrouter refuses the same batch with its own words, "
        "naming the rollout, its samples and their rewards"
    ),
}

#: Tests that assert what miles hands its built-in normalization and never a custom hook.
NOT_HANDED = {
    f"{MILES_FILE}::TestPostProcessRewards::test_prompt_group_sizes_override_reused_group_index": (
        "passes prompt_group_sizes, which miles hands its built-in normalization only; its "
        "samples (no adapter, one group_index, n_samples_per_prompt rollouts) are one prompt "
        "group to a custom hook called as fn(args, samples), as to miles' own rule without it"
    ),
}


@dataclass
class Run:
    """One suite run: its pytest counts and what its tests made rewardrouter do."""

    name: str
    passed: int
    failed: int
    summary: str
    failures: list[str]
    reached: dict[str, dict[str, Any]]

    @property
    def total(self) -> int:
        return self.passed + self.failed

    def tests(self, what: Callable[[dict[str, Any]], bool]) -> int:
        return sum(1 for row in self.reached.values() if what(row))

    def entry_tests(self) -> Counter[str]:
        """Each entry point: how many tests called it."""
        return Counter(name for row in self.reached.values() for name in row["entries"])


def _pytest(checkout: Path, name: str, targets: list[str], env: dict[str, str]) -> Run:
    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]
    command += ["-p", "trainer_suites", *targets]
    paths = [str(HERE), os.environ.get("PYTHONPATH", "")]
    with tempfile.TemporaryDirectory() as tmp:
        reached_file = Path(tmp) / "reached.json"
        env = {
            **os.environ,
            **env,
            "PYTHONPATH": os.pathsep.join(p for p in paths if p),
            "RR_SUITE_REACHED": str(reached_file),
        }
        done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
        reached = json.loads(reached_file.read_text()) if reached_file.exists() else {}
    lines = done.stdout.strip().splitlines()
    tail = lines[-1] if lines else done.stderr[-500:]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error)", tail)}
    failed = [line.split()[1] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return Run(
        name,
        counts.get("passed", 0),
        counts.get("failed", 0) + counts.get("error", 0),
        tail,
        failed,
        reached,
    )


def run_slime(checkout: Path, folder: Path) -> list[Run]:
    config = folder / "slime_router.yaml"
    config.write_text(SLIME_ROUTER)
    rows = []
    for name, paths in SLIME_RUNS.items():
        env = {f"SLIME_CONTRACT_{k}": v for k, v in {**paths, **POST_PROCESS}.items()}
        env.update(REWARDROUTER_CONFIG=str(config), RR_SUITE="slime")
        rows.append(
            _pytest(checkout, f"slime plugin_contracts ({name})", ["tests/plugin_contracts"], env)
        )
    return rows


MILES_RUNS = {
    "miles test_train_data_conversion (3 classes)": [f"{MILES_FILE}::{c}" for c in MILES_CLASSES],
    "miles test_multi_lora_train_data": [MILES_MULTI_LORA],
}


def run_miles(checkout: Path, folder: Path, names: Sequence[str] | None = None) -> list[Run]:
    """The runs of :data:`MILES_RUNS` (those in ``names``, or all)."""
    env = {"RR_SUITE": "miles", "RR_SUITE_DIR": str(folder)}
    return [
        _pytest(checkout, name, ["--noconftest", *targets], env)
        for name, targets in MILES_RUNS.items()
        if names is None or name in names
    ]


def _report(rows: list[Run]) -> None:
    width = max(len(r.name) for r in rows)
    print(f"{'suite':<{width}}  passed  failed  total  call rr  scored  post-proc")
    for r in rows:
        calls = r.tests(lambda t: bool(t["entries"]))
        scored = r.tests(lambda t: t["scored"] > 0)
        chained = r.tests(lambda t: t["post_processed"] > 0)
        print(
            f"{r.name:<{width}}  {r.passed:>6}  {r.failed:>6}  {r.total:>5}  "
            f"{calls:>7}  {scored:>6}  {chained:>9}"
        )
    print(
        "\ncall rr: tests that called a rewardrouter entry point; scored: tests in which the "
        "router ran a reward function on at least one sample (not a sample that arrived with "
        "a reward); post-proc: tests whose rewards went through the router's post-process chain"
    )
    for r in rows:
        print(f"\n{r.name}:")
        samples = sum(t["scored"] for t in r.reached.values())
        kept = sum(t["kept"] for t in r.reached.values())
        chained = sum(t["post_processed"] for t in r.reached.values())
        for entry, count in sorted(r.entry_tests().items()):
            print(f"  {entry}: called by {count} test(s)")
            if count <= FEW:  # few enough to say what each of them handed over
                for test, t in r.reached.items():
                    if entry in t["entries"]:
                        print(
                            f"    {test}: scored {t['scored']}, kept {t['kept']}, "
                            f"post-processed {t['post_processed']}"
                        )
        print(
            f"  samples scored {samples}, arrived with a reward (kept) {kept}, "
            f"post-processed {chained}"
        )
        if r.failed or not r.summary:
            print(f"  {r.summary}")
            for test in r.failures:
                why = WORDING.get(test) or NOT_HANDED.get(test) or "failed"
                print(f"  FAILED {test}: {why}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--slime", type=Path, help="a slime checkout")
    parser.add_argument("--miles", type=Path, help="a miles checkout")
    args = parser.parse_args(argv)
    if args.slime is None and args.miles is None:
        parser.error("give --slime and/or --miles checkout paths")
    rows: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.slime is not None:
            rows += run_slime(args.slime.resolve(), Path(tmp))
        if args.miles is not None:
            rows += run_miles(args.miles.resolve(), Path(tmp))
    _report(rows)
    # done: every run passed tests, and every failure is explained above
    explained = WORDING.keys() | NOT_HANDED.keys()
    ok = all(
        r.passed > 0 and r.failed == len(r.failures) and set(r.failures) <= explained for r in rows
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
