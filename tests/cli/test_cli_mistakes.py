"""User mistakes in data and overrides: each ends in a located error or a counted warning.

The job runs in-process as ``rewardrouter`` runs it (compose, check, score, write); the exit
status is the one the command line gives (2 for a mistake, 1 for failed calls).
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rr_testfns
from rich.console import Console

from rewardrouter import ConfigError, load_config
from rewardrouter.cli import explain, validate
from rewardrouter.cli.compose import compose_job
from rewardrouter.cli.score import run_job
from rewardrouter.errors import RewardRouterError

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

MATH = {"metadata": {"dataset": "openai/gsm8k"}}


@dataclass
class Job:
    status: int
    output: str
    folder: Path

    @property
    def message(self) -> str:
        return " ".join(self.output.split())

    @property
    def rows(self) -> list[dict[str, Any]]:
        path = self.folder / "rewards.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    @property
    def summary(self) -> dict[str, Any]:
        def strict(name: str) -> Any:
            raise AssertionError(f"summary.json holds {name}, which is not JSON")

        return json.loads((self.folder / "summary.json").read_text(), parse_constant=strict)  # type: ignore[no-any-return]


def job(folder: Path, data: str | bytes, *overrides: str, config: Path | None = None) -> Job:
    """Run the main job on ``data`` (a JSONL text) with ``overrides``."""
    path = folder / "data.jsonl"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    console = Console(record=True, width=200)
    args = [f"data.path={path}", f"output.path={folder / 'rewards.jsonl'}", *overrides]
    try:
        run_job(compose_job(args, config), folder, console)
        status = 0
    except RewardRouterError as exc:
        console.print(f"error: {exc}")
        status = getattr(exc, "exit_status", 2)
    return Job(status, console.export_text(), folder)


def lines(*rows: dict[str, Any] | str) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


GOOD = {"response": "x", "label": "x"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        pytest.param('{"label": "x"}', "data.jsonl:2: `response` is missing", id="no_response"),
        pytest.param('{"response": null}', "data.jsonl:2: `response` is null", id="null_response"),
        pytest.param(
            '{"response": ["x"]}', "`response` must be a string", id="response_not_a_string"
        ),
        pytest.param(
            '{"response": "x", "solution": "x"}',
            "`label` is missing, but the row has 'solution'; rename the column to `label`, or "
            "map it with data.columns.label=solution",
            id="label_under_another_name",
        ),
        pytest.param(
            b'{"response": "\xff"}', "data.jsonl:2:15: byte 0xff is not UTF-8", id="not_utf8"
        ),
        pytest.param("[" * 100_000, "data.jsonl:2: JSON nested too deeply", id="deep_nesting"),
        pytest.param(
            '{"response": "x", "group_index": "a"}',
            "`group_index` must be an integer, found str 'a'",
            id="group_index_string",
        ),
        pytest.param(
            f'{{"response": "x", "group_index": {2**70}}}',
            "is outside the 64-bit integer range",
            id="group_index_huge",
        ),
        pytest.param(
            '{"response": "x", "group_index": 0.7}',
            "`group_index` must be an integer, found 0.7 (it would be truncated",
            id="group_index_fraction",
        ),
        pytest.param(
            f'{{"response": "x", "reward": 1{"0" * 400}}}',
            "`reward` holds 1000",
            id="reward_401_digits",
        ),
        pytest.param('{"response": "x\\ud800"}', "a lone UTF-16 surrogate", id="lone_surrogate"),
        pytest.param('{"response": "x", "reward": NaN}', "NaN is not JSON", id="nan_literal"),
        pytest.param(
            '{"response": "x", "status": "abortd"}',
            "`status` 'abortd' is not a sample status; did you mean 'aborted'?",
            id="status_typo",
        ),
        pytest.param(
            '{"response": "x", "metadata": "gsm8k"}',
            "`metadata` must be an object",
            id="metadata_not_an_object",
        ),
        pytest.param(
            '{"response": "x", "response_length": -3}',
            "`response_length` must be a non-negative number",
            id="negative_length",
        ),
        pytest.param('{"response": ', "data.jsonl:2:14: invalid JSON", id="bad_json"),
    ],
)
def test_rows_that_cannot_be_read_are_located_and_nothing_is_scored(
    tmp_path: Path, line: str | bytes, message: str
) -> None:
    data = lines(GOOD).encode() + (line if isinstance(line, bytes) else line.encode()) + b"\n"
    done = job(tmp_path, data)
    assert done.status == 2
    assert message in done.message
    assert "nothing was scored" in done.message
    assert not (tmp_path / "rewards.jsonl").exists()


def test_every_problem_of_a_file_is_listed_at_once(tmp_path: Path) -> None:
    done = job(tmp_path, lines({"label": "x"}, GOOD, {"response": None}))
    assert done.status == 2
    assert "2 problem(s)" in done.message
    assert "data.jsonl:1:" in done.message and "data.jsonl:3:" in done.message


def test_a_label_column_can_be_mapped(tmp_path: Path) -> None:
    done = job(tmp_path, lines({"response": "x", "solution": "x"}), "data.columns.label=solution")
    assert done.status == 0, done.output
    assert done.rows[0]["reward"] == 1.0


def test_a_mapped_column_a_row_lacks_is_located_with_the_mapping(tmp_path: Path) -> None:
    # Line 2 holds its answer under 'sol': scored, it would get no label and a plausible reward.
    data = lines(
        {"completion": "4", "solution": "4"},
        {"completion": "4", "sol": "4"},
    )
    done = job(tmp_path, data, "data.columns.response=completion", "data.columns.label=solution")
    assert done.status == 2
    assert (
        "data.jsonl:2: `data.columns.label` reads `label` from column 'solution', which this row "
        "does not have (columns: completion, sol); give every row a 'solution' column, or map "
        "`label` to the column that holds it: data.columns.label=<column>"
    ) in done.message
    assert "data.jsonl:1" not in done.message
    assert not (tmp_path / "rewards.jsonl").exists()


@pytest.mark.parametrize(
    ("row", "override", "said", "not_said"),
    [
        # the unmapped check's own advice (map it with data.columns.response=completion) is
        # left out
        pytest.param(
            {"completion": "4", "label": "4"},
            "data.columns.response=compltion",
            "data.jsonl:1: `data.columns.response` reads `response` from column 'compltion', "
            "which this row does not have (columns: completion, label); did you mean "
            "'completion'?",
            "`response` is missing",
            id="typo_in_the_column",
        ),
        # the value is fine; the field name is not (it was reported as "found 'solution'")
        pytest.param(
            GOOD,
            "data.columns.lable=solution",
            "data.columns.lable: unknown key 'lable' did you mean 'label'? expected one of: "
            "response, label, prompt, metadata, group_index",
            "found 'solution'",
            id="typo_in_the_field",
        ),
    ],
)
def test_a_typo_in_a_column_mapping_is_named_where_it_is(
    tmp_path: Path, row: dict[str, Any], override: str, said: str, not_said: str
) -> None:
    done = job(tmp_path, lines(row), override)
    assert done.status == 2
    assert said in done.message
    assert not_said not in done.message


def test_an_aborted_row_needs_no_mapped_response(tmp_path: Path) -> None:
    data = lines({"completion": "4", "label": "4"}, {"status": "aborted", "label": "4"})
    done = job(tmp_path, data, "data.columns.response=completion")
    assert done.status == 0, done.output
    assert [r["status"] for r in done.rows] == ["ok", "aborted"]


def test_explain_reads_the_mapped_columns_as_the_job_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(lines({"completion": "4", "solution": "4"}))
    mapped = ["data.columns.response=completion", "data.columns.label=solution"]
    assert explain.main([*mapped, "--data", str(data), "--line", "1"]) == 0
    assert "reward 1.0 status ok" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("data", [pytest.param("", id="empty"), pytest.param("\n \n", id="blank")])
def test_a_file_without_rows_is_an_error(tmp_path: Path, data: str) -> None:
    done = job(tmp_path, data)
    assert done.status == 2
    assert "data.jsonl: no rows to score" in done.message


def test_summary_json_is_strict_json_when_nothing_could_be_measured(tmp_path: Path) -> None:
    # `informative_groups` needs prompt groups, which these rows lack: the objective is NaN
    done = job(tmp_path, lines(GOOD), "objective.name=informative_groups")
    assert done.status == 0, done.output
    assert done.summary["objective"] == {"name": "informative_groups", "value": None}


# -- checked before the first reward call -------------------------------------------------------

COUNTED = """
allowed_modules: [rr_testfns]
default_route: counted
routes:
  counted:
    rewards:
      length: {path: rr_testfns.group_len}
post_process:
%s
"""


@pytest.mark.parametrize(
    ("stages", "row", "message"),
    [
        pytest.param(
            "  - {kind: grpo}",
            {"response": "abc"},
            "data.jsonl:3: no group_index, but the advantage stage `grpo` groups by it; give "
            "every sample its prompt group's group_index",
            id="group_index",
        ),
        pytest.param(
            "  - {kind: overlong_penalty, max_len: 10, buffer: 2}",
            {"response": "abc", "group_index": 0},
            "data.jsonl:3: no response_length, but post_process[0] (overlong_penalty) reads it",
            id="response_length",
        ),
    ],
)
def test_fields_the_shaping_needs_are_checked_before_any_reward_call(
    tmp_path: Path, stages: str, row: dict[str, Any], message: str
) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(COUNTED % stages)
    good = {"response": "ab", "group_index": 0, "response_length": 2}
    done = job(tmp_path, lines(good, good, row), config=config)
    assert done.status == 2
    assert message in done.message
    assert "post-processor" not in done.message  # the API's word, not the command line's
    assert rr_testfns.CALLS == []  # no reward function ran


def test_unroutable_rows_are_listed_before_any_reward_call(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text((COUNTED % "  []").replace("default_route: counted", "default_route: null"))
    done = job(
        tmp_path, lines(GOOD, {"response": "x", "metadata": {"dataset": "other"}}), config=config
    )
    assert done.status == 2
    assert "data.jsonl:1: no route matched" in done.message
    assert "data.jsonl:2: no route matched (dataset='other'" in done.message
    assert rr_testfns.CALLS == []


def test_a_router_without_routes_says_so(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text("routes: {}\n")  # a file of shaping stages alone, say, passed to the job
    done = job(tmp_path, lines(GOOD), config=config)
    assert done.status == 2
    assert "data.jsonl:1: no route matched (dataset=" in done.message
    assert "the config defines no routes (`routes:` is empty)" in done.message


# -- what was scored before a failure is kept ---------------------------------------------------

FAILING = """
allowed_modules: [rr_testfns]
default_route: values
routes:
  values:
    rewards:
      value: {path: rr_testfns.returns}
"""


def test_a_failed_call_stops_the_job_and_keeps_what_was_scored(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(FAILING)
    rows = [{"response": "x", "metadata": {"value": v}} for v in (1.0, 0.5, "oops", 1.0, 0.0)]
    done = job(tmp_path, lines(*rows[:2], "", *rows[2:]), "data.batch_size=2", config=config)
    assert done.status == 1
    # batches [1, 2] and [4, 5] ran (line 3 is blank); line 6 was never scored
    assert [r["reward"] for r in done.rows] == [1.0, 0.5, None, 1.0]
    assert done.rows[2]["status"] == "invalid"
    assert "data.jsonl:4: route 'values': invalid" in done.message
    assert "1 row(s) after it were not scored" in done.message
    summary = done.summary
    assert (summary["rows"], summary["scored"], summary["complete"]) == (5, 4, False)
    [failure] = summary["failures"]
    assert (failure["line"], failure["status"]) == (4, "invalid")
    assert "returned str 'oops'" in failure["error"]


def test_a_failure_on_error_absorbed_is_a_warning_that_says_what_failed(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        FAILING.replace("{path: rr_testfns.returns}", "{path: rr_testfns.raises, on_error: skip}")
    )
    one = job(tmp_path, lines({"response": "first"}), config=config)
    assert one.status == 0, one.output
    assert "(status error) (line 1: value: ValueError: cannot score 'first'" in one.message
    two = job(tmp_path, lines({"response": "first"}, {"response": "second"}), config=config)
    assert "(status error) (lines 1, 2; the first: value: ValueError: cannot score 'first'" in (
        two.message
    )


def test_a_long_call_shows_a_sign_of_life(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(FAILING.replace("rr_testfns.returns", "rr_testfns.sleeps"))
    data = lines({"response": "x", "metadata": {"seconds": 1.0}})
    done = job(tmp_path, data, "output.heartbeat=0.25", config=config)
    assert done.status == 0, done.output
    assert "still scoring after " in done.message
    assert " s: 0 of 1 rows done; a call gives up after 60 s (`timeout`)" in done.message


# -- counted warnings ---------------------------------------------------------------------------


def test_a_term_that_does_not_apply_is_a_counted_warning(tmp_path: Path) -> None:
    rows = [
        {"response": "\\boxed{72}", "label": "72", "group_index": 0, **MATH},
        {"response": "\\boxed{72}", "label": "", "group_index": 0, **MATH},  # blank label
        {"response": "\\boxed{70}", "label": "72", "group_index": 0, **MATH},
    ]
    done = job(tmp_path, lines(*rows), "router=mixed")
    assert done.status == 0, done.output
    assert done.rows[1]["terms"] == {"correct": None, "format": 1.0}
    [warning] = done.summary["warnings"]
    assert (warning["code"], warning["where"], warning["count"], warning["lines"]) == (
        "not_applicable",
        "routes.gsm8k.rewards.correct",
        1,
        [2],
    )
    [gsm8k] = done.summary["routes"]
    assert gsm8k["terms_not_applied"] == 1
    assert "term n/a" in done.output
    assert "warning: routes.gsm8k.rewards.correct: 1 sample(s): returned None" in done.message


def test_a_file_without_labels_gets_a_hint_to_map_the_column(tmp_path: Path) -> None:
    # the answers are in a column of another name: every `correct` is None, the format bonus
    # alone is the reward; the warnings count it and the hint names the likely cause
    rows = [
        {"response": "\\boxed{72}", "target_text": "72", "group_index": 0, **MATH},
        {"response": "\\boxed{70}", "target_text": "72", "group_index": 0, **MATH},
    ]
    done = job(tmp_path, lines(*rows), "router=mixed")
    assert done.status == 0, done.output
    [hint] = done.summary["hints"]
    assert "no row of" in hint and "columns: group_index, metadata, response, target_text" in hint
    assert "hint: no row of" in done.message and "data.columns.label=<column>" in done.message
    mapped = job(tmp_path, lines(*rows), "router=mixed", "data.columns.label=target_text")
    assert mapped.summary["hints"] == [] and mapped.summary["warnings"] == []
    assert [r["terms"]["correct"] for r in mapped.rows] == [1.0, 0.0]


def test_a_blank_label_gets_no_hint(tmp_path: Path) -> None:
    rows = [{"response": "\\boxed{72}", "label": "", "group_index": 0, **MATH}]
    assert job(tmp_path, lines(*rows), "router=mixed").summary["hints"] == []


def test_extreme_kept_rewards_are_summarized_and_drawn(tmp_path: Path) -> None:
    # rows that carry their reward need no response; GRPO over 1e308s overflows to null
    rows = [{"reward": r, "group_index": 0} for r in (1e308, -1e308, 1e308)]
    done = job(tmp_path, lines(*rows), "post_process=[{kind: grpo}]")
    assert done.status == 0, done.output
    assert (tmp_path / "report.png").stat().st_size > 0
    [kept] = done.summary["routes"]
    assert kept["mean"] == pytest.approx(1e308 / 3)

    def strict(name: str) -> Any:
        raise AssertionError(f"rewards.jsonl holds {name}")

    for line in (tmp_path / "rewards.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=strict)


def test_constant_groups_are_counted_on_the_rewards_grpo_sees(tmp_path: Path) -> None:
    # raw rewards 1.2 and 1.5 differ, but `clip max 1` makes the group constant for GRPO
    config = tmp_path / "router.yaml"
    config.write_text(
        FAILING + "    shaping:\n      - {kind: clip, max: 1.0}\npost_process:\n  - {kind: grpo}\n"
    )
    rows = [{"response": "x", "group_index": 0, "metadata": {"value": v}} for v in (1.2, 1.5)]
    done = job(tmp_path, lines(*rows), "objective.name=informative_groups", config=config)
    assert done.status == 0, done.output
    assert "1 constant group(s), their advantages all exactly 0" in done.message
    [route] = done.summary["routes"]
    assert route["constant_groups"] == 1
    assert done.summary["objective"]["value"] == 0.0


def test_report_png_draws_the_rewards_grpo_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same clipped group: report.png shows the shaped 1.0s, not the raw 1.2 and 1.5
    import rewardrouter.cli.score as score

    drawn: list[tuple[Any, ...]] = []
    real = score.write_figure
    monkeypatch.setattr(score, "write_figure", lambda *args: (drawn.append(args), real(*args))[1])
    config = tmp_path / "router.yaml"
    config.write_text(
        FAILING + "    shaping:\n      - {kind: clip, max: 1.0}\npost_process:\n  - {kind: grpo}\n"
    )
    rows = [{"response": "x", "group_index": 0, "metadata": {"value": v}} for v in (1.2, 1.5)]
    done = job(tmp_path, lines(*rows), config=config)
    assert done.status == 0, done.output
    [(path, by_route, advantages, label)] = drawn
    assert path == tmp_path / "report.png" and path.stat().st_size > 0
    assert {route: list(values) for route, values in by_route.items()} == {"values": [1.0, 1.0]}
    assert list(advantages) == [0.0, 0.0]
    assert label == "shaped reward"


# -- overrides and config groups ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "where", "hint"),
    [
        pytest.param(
            "routes.gsm8kk.rewards.correct.kind=math",
            "routes.gsm8kk: the override routes.gsm8kk.rewards.correct.kind=... creates a new "
            "route 'gsm8kk'",
            "did you mean 'gsm8k'? (to add a route on purpose, write "
            "+routes.gsm8kk.rewards.correct.kind=...)",
            id="route",
        ),
        pytest.param(
            "routes.gsm8k.rewards.corect.kind=exact_match",
            "routes.gsm8k.rewards.corect: the override routes.gsm8k.rewards.corect.kind=... "
            "creates a new term 'corect' (terms: correct, format)",
            "did you mean 'correct'?",
            id="term",
        ),
    ],
)
def test_an_override_does_not_create_a_route_or_term_by_accident(
    tmp_path: Path, override: str, where: str, hint: str
) -> None:
    for load in (
        lambda: compose_job(["router=mixed", override]),
        lambda: load_config("conf/router/mixed.yaml", [override]),
    ):
        with pytest.raises(ConfigError) as caught:
            load()
        text = " ".join(str(caught.value).split())
        assert where in text and hint in text
    deliberate = compose_job(["router=mixed", "+" + override])
    assert (
        load_config("conf/router/mixed.yaml", ["+" + override]).routes.keys()
        == deliberate.routes.keys()
    )


def test_overrides_still_set_fields_a_yaml_leaves_to_defaults() -> None:
    job_config = compose_job(["router=mixed", "routes.gsm8k.rewards.correct.timeout=5"])
    assert job_config.routes["gsm8k"].rewards["correct"].timeout == 5


@pytest.mark.parametrize(
    ("override", "hint"),
    [
        pytest.param("shaping=grpoo", "did you mean 'grpo'?", id="shaping"),
        pytest.param("datasets=[gsm8k,gpqaa]", "did you mean 'gpqa'?", id="datasets"),
        pytest.param("router=mixd", "did you mean 'mixed'?", id="router"),
    ],
)
def test_a_config_group_option_that_does_not_exist_is_refused(
    override: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="no option") as caught:
        compose_job([override])
    assert hint in str(caught.value)
    assert validate.main([override]) == 1
    assert hint in capsys.readouterr().out


# -- config numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "where"),
    [
        pytest.param(
            "routes.exact.rewards.correct.weight=.nan",
            "routes.exact.rewards.correct.weight",
            id="weight_nan",
        ),
        pytest.param(
            "routes.exact.rewards.correct.on_error={value: .inf}",
            "on_error.value",
            id="fallback_inf",
        ),
        pytest.param("timeout=.inf", "timeout", id="timeout_inf"),
        pytest.param(
            "post_process=[{kind: clip, min: .nan}]", "post_process[0].min", id="clip_nan"
        ),
        pytest.param(
            "post_process=[{kind: quantize, step: 1e-320}]",
            "post_process[0].step",
            id="quantize_subnormal",
        ),
    ],
)
def test_config_numbers_must_be_finite(override: str, where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        compose_job([override])
    assert where in str(caught.value)
    assert validate.main([override]) == 1


def test_the_default_timeout_is_the_one_the_readme_states() -> None:
    from rewardrouter.config.models import RouterConfig

    page = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    [stated] = [line for line in page.splitlines() if "# router default, seconds" in line]
    assert float(stated.split(":")[1].split("#")[0]) == RouterConfig().timeout == 60.0


def test_an_output_path_that_cannot_be_written_is_refused_before_scoring(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    done = job(tmp_path, lines(GOOD), f"output.path={tmp_path / 'taken'}")
    assert done.status == 2
    assert "output.path: cannot write" in done.message and "it is a folder" in done.message


def test_an_objective_column_no_row_has_is_refused(tmp_path: Path) -> None:
    row = {**GOOD, "expected_reward": 1.0}
    done = job(tmp_path, lines(row), "objective.name=agreement", "objective.column=expected")
    assert done.status == 2
    assert "reads column 'expected', which no row of" in done.message
    assert "did you mean 'expected_reward'?" in done.message


def test_a_byte_order_mark_is_not_a_mistake(tmp_path: Path) -> None:
    done = job(tmp_path, b"\xef\xbb\xbf" + lines(GOOD, GOOD).encode())
    assert done.status == 0, done.output
    assert [r["reward"] for r in done.rows] == [1.0, 1.0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["chek", "router=mixed"], "did you mean 'check'?", id="command_typo"),
        pytest.param(
            ["serve", "--port", "99999"],
            "argument --port: 99999 is not a port: expected a whole number from 0 to 65535; "
            "pass another --port, e.g. --port 8000, or --port 0 for any free port",
            id="port_out_of_range",
        ),
        pytest.param(
            ["serve", "--port", "80a"],
            "argument --port: 80a is not a port: expected a whole number from 0 to 65535",
            id="port_not_a_number",
        ),
        pytest.param(
            ["serve", "--max-request-mb", "64MB"],
            "argument --max-request-mb: 64MB is not a size: expected a positive number of MiB; "
            "give one, or leave it out for the default 64",
            id="size_with_a_unit",
        ),
        pytest.param(
            ["serve", "--max-request-mb", "-1"],
            "argument --max-request-mb: -1 is not a size",
            id="negative_size",
        ),
    ],
)
def test_command_line_mistakes_exit_2(
    argv: list[str], message: str, run_cli: Callable[..., tuple[int, str]]
) -> None:
    status, output = run_cli(*argv)
    assert status == 2
    assert message in output


def test_a_port_in_use_is_named_with_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    from rewardrouter.cli import serve

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert serve.main(["--port", str(port)]) == 1
    assert (
        f"error: --port {port}: 127.0.0.1:{port} is in use by another program; pass another "
        f"--port, e.g. --port 8000, or --port 0 for any free port"
    ) in " ".join(capsys.readouterr().err.split())


def test_a_host_of_another_machine_is_named_with_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rewardrouter.cli import serve

    assert serve.main(["--host", "192.0.2.1", "--port", "0"]) == 1  # TEST-NET-1: nobody's
    assert (
        "error: --host 192.0.2.1: not an address of this machine; pass --host 127.0.0.1 (this "
        "machine only) or --host 0.0.0.0 (every interface)"
    ) in " ".join(capsys.readouterr().err.split())


def test_a_privileged_port_is_named_with_what_to_do() -> None:
    from rewardrouter.serve.main import listen_error

    denied = OSError(errno.EACCES, "Permission denied")  # as bind() raises it without root
    assert listen_error("0.0.0.0", 80, denied) == (
        "--port 80: permission denied: ports below 1024 need administrator rights; pass another "
        "--port, e.g. --port 8000, or --port 0 for any free port"
    )


@pytest.mark.parametrize("size", [0, -1.0, math.inf, math.nan, "64"])
def test_the_server_api_refuses_a_request_size_that_is_not_one(size: object) -> None:
    from rewardrouter.serve import make_app

    with pytest.raises(ConfigError, match=r"max_request_mb: .* is not a size: expected a positive"):
        make_app(
            {"routes": {"a": {"rewards": {"t": {"kind": "exact_match"}}}}}, max_request_mb=size
        )  # type: ignore[arg-type]


def test_the_server_api_refuses_a_config_the_scoring_process_cannot_be_sent() -> None:
    from rewardrouter.serve import make_app

    term = {"path": "rr_testfns.returns", "kwargs": {"scale": lambda: 1.0}}
    config = {"allowed_modules": ["rr_testfns"], "routes": {"a": {"rewards": {"t": term}}}}
    with pytest.raises(ConfigError, match=r"cannot be sent to the scoring process(.|\n)*plain"):
        make_app(config)


@pytest.mark.parametrize("port", [-1, 65536, 80.5, "8000"])
def test_the_server_api_refuses_a_port_that_is_not_one(port: object) -> None:
    from rewardrouter.config.models import RouterConfig
    from rewardrouter.serve import serve

    with pytest.raises(ConfigError, match=r"port: .* is not a port: expected a whole number"):
        asyncio.run(serve(RouterConfig(), "127.0.0.1", port))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("ignore", "on_error: Input should be 'raise' or 'skip'", id="unknown_policy"),
        pytest.param(
            "{value: x}", "on_error.value: Input should be a valid number", id="bad_value"
        ),
    ],
)
def test_a_bad_on_error_is_one_problem_at_its_yaml_path(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        compose_job([f"routes.exact.rewards.correct.on_error={value}"])
    assert len(caught.value.problems) == 1
    assert message in str(caught.value)
    assert "literal[" not in str(caught.value)


def test_a_folder_given_as_data_is_named_so(tmp_path: Path) -> None:
    with pytest.raises(RewardRouterError, match=r"data\.path: is a folder"):
        run_job(compose_job([f"data.path={tmp_path}"]), tmp_path, Console())


def test_a_failing_custom_stage_keeps_what_was_scored(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        FAILING.replace("[rr_testfns]", "[rr_testfns, rr_stagefns]")
        + "post_process:\n  - {kind: custom, path: rr_stagefns.makes_nan}\n"
    )
    rows = [{"response": "x", "metadata": {"value": v}} for v in (1.0, 0.5)]
    done = job(tmp_path, lines(*rows), config=config)
    assert done.status == 1
    assert "post-processing failed: data.jsonl:1: custom stage" in done.message.replace(
        str(tmp_path) + "/", ""
    )
    assert [r["reward"] for r in done.rows] == [1.0, 0.5]
    assert [r["shaped"] for r in done.rows] == [None, None]
    assert done.summary["complete"] is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["router=mixed", "hydra.run.dir=${oops}"],
            "error: invalid reward router config in the command line (1 problem): - hydra.run.dir: "
            "Interpolation key 'oops' not found fix the override or the YAML key it names (an "
            "interpolation `${a.b}` must name a key of the config); rewardrouter --cfg job prints "
            "the composed config",
            id="hydra_interpolation_in_hydra_settings",
        ),
        pytest.param(
            ["router=mixed", "data.path=${missing}"],
            "error: invalid reward router config in composed config (1 problem): - data.path: "
            "interpolation '${missing}' does not resolve: Interpolation key 'missing' not found "
            "fix the reference, or define the key it points to",
            id="interpolation_in_a_job_setting",
        ),
        pytest.param(
            ["router=mixed", "data.limit=[1"],
            "error: invalid reward router config in the command line (1 problem): - data.limit: "
            "the override 'data.limit=[1' cannot be read: no viable alternative at input '[1' "
            "close every bracket, and quote a value that holds brackets, braces or commas meant "
            "as text: 'key=\"a,b\"' (a bare a,b is a sweep)",
            id="unreadable_override",
        ),
        pytest.param(
            ["check", "router=mixed", "data.limit=[1"],
            "error: invalid reward router config in the command line (1 problem): - data.limit: "
            "the override 'data.limit=[1' cannot be read: no viable alternative at input '[1' "
            "close every bracket, and quote a value that holds brackets, braces or commas meant "
            "as text: 'key=\"a,b\"' (a bare a,b is a sweep)",
            id="check_unreadable_override",
        ),
    ],
)
def test_config_mistakes_exit_2_not_the_status_of_failed_calls(
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Callable[..., tuple[int, str]],
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    status, output = run_cli(*argv)
    # Hydra may print a line of its own before the error (it cannot format what it raised)
    assert (status, output[output.index("error: ") :]) == (2, message)


def test_a_hydra_override_error_keeps_hydras_advice() -> None:
    """Hydra's own override errors say what to do on their later lines: they are kept."""
    with pytest.raises(ConfigError) as caught:
        compose_job(["+data=1"])
    [problem] = caught.value.problems
    assert problem.path == "<overrides>"
    assert "Either remove + prefix: 'data=1'" in problem.message
    assert problem.hint is not None and "rewardrouter --cfg job" in problem.hint


def test_the_usage_text_gives_every_exit_status(run_cli: Callable[..., tuple[int, str]]) -> None:
    status, output = run_cli("--help")
    assert status == 0
    assert (
        "Exit status (the job and every command): 0 done (check: every example passed; "
        "validate: every target valid) 1 reward calls failed under on_error: raise (what was "
        "scored is written), a check failed (check: an example's reward differs; validate: a "
        "target is invalid), or the server stopped (serve) 2 a mistake in the config, the data "
        "or the command line, Hydra's own errors included"
    ) in output


IFEVAL_HF = {
    "prompt": "Write a haiku without commas.",
    "response": "leaves fall soft and slow",
    "instruction_id_list": ["punctuation:no_comma"],
    "kwargs": [{}],
    **MATH,
}
OUTPUT_ROW = {
    **GOOD,
    **MATH,
    "reward": 1.0,
    "route": "gsm8k",
    "level": "route",
    "status": "ok",
    "terms": {"correct": 1.0},
    "shaped": 1.0,
    "advantage": 0.0,
}


@pytest.mark.parametrize(
    ("data", "overrides", "message"),
    [
        # every response empty, the answers in another column: every reward 0.0 'ok' before
        pytest.param(
            lines(*[{"response": "", "completion": "42", "label": "42", **MATH}] * 3),
            [],
            "data.jsonl: `response` is empty on every row (3 rows), but column 'completion' "
            "holds text on 3; every reward would grade an empty answer. If 'completion' holds "
            "the model's answers, map it: data.columns.response=completion",
            id="empty_response_beside_completion",
        ),
        pytest.param(
            lines(*[{"answer": "", "output": "42", "label": "42", **MATH}] * 2),
            ["data.columns.response=answer"],
            "data.jsonl: column 'answer' (data.columns.response) is empty on every row (2 rows), "
            "but column 'output' holds text on 2; every reward would grade an empty answer. If "
            "'output' holds the model's answers, map it: data.columns.response=output",
            id="mapped_response_empty_beside_output",
        ),
        # IFEval's Hugging Face layout: the grader would find no instructions and not apply
        pytest.param(
            lines(IFEVAL_HF),
            [],
            "data.jsonl:1: `label` is missing, but the row has IFEval's instruction columns "
            "instruction_id_list and kwargs at the top level (the Hugging Face layout); the "
            "ifeval grader reads them from the label: write each row's label as "
            '{"instruction_id_list": [...], "kwargs": [...]}, e.g. jq -c \'.label = '
            "{instruction_id_list, kwargs} | del(.instruction_id_list, .kwargs)' in.jsonl > "
            "out.jsonl",
            id="ifeval_hf_layout",
        ),
        # Parquet read as JSONL failed on its first byte with "save the file as UTF-8"
        pytest.param(
            b"PAR1\x15\x04\x15\x00" + b"\x00" * 16,
            [],
            "is a Parquet file; rewardrouter reads JSONL only (one JSON object per line). "
            "Convert it, then pass data.path=",
            id="parquet_input",
        ),
        # the job's own output: rewards passed through, or refused for `status: ok`
        pytest.param(
            lines(OUTPUT_ROW),
            [],
            "data.jsonl:1: the row holds the columns a rewardrouter job writes (reward, route, "
            "level, status, terms, shaped, advantage): this file is a job's output "
            "(rewards.jsonl), not data to score; pass the data file that job read: "
            "data.path=<the input JSONL>",
            id="rewards_jsonl_fed_back",
        ),
    ],
)
def test_data_in_the_wrong_layout_names_the_cause_and_the_fix(
    tmp_path: Path, data: str | bytes, overrides: list[str], message: str
) -> None:
    done = job(tmp_path, data, "router=mixed", *overrides)
    assert done.status == 2
    assert message in done.message
    assert not (tmp_path / "rewards.jsonl").exists()


def test_parquet_input_gets_a_conversion_line(tmp_path: Path) -> None:
    path = tmp_path / "train.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 16)
    with pytest.raises(RewardRouterError) as raised:
        run_job(compose_job(["router=mixed", f"data.path={path}"]), tmp_path, Console())
    target = tmp_path / "train.jsonl"
    assert str(raised.value) == (
        f"data.path: {path} is a Parquet file; rewardrouter reads JSONL only (one JSON object "
        f'per line). Convert it, then pass data.path={target}: python -c "import pandas as pd; '
        f"pd.read_parquet('{path}').to_json('{target}', orient='records', lines=True, "
        f'force_ascii=False)"'
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        pytest.param('data.path="~/data.jsonl"', None, id="quoted_tilde_is_expanded"),
        pytest.param(
            "data.path=~/data.jsonl",
            "data.path: the override 'data.path=~/data.jsonl' cannot be read: "
            "LexerNoViableAltException: data.path=~/data.jsonl ^ Hydra's grammar reads no `~` "
            "in a value: quote the path, 'data.path=\"~/data.jsonl\"' (rewardrouter expands `~`), "
            "or write it from /",
            id="bare_tilde_says_to_quote",
        ),
    ],
)
def test_a_home_relative_data_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, message: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "data.jsonl").write_text(lines({**GOOD, **MATH, "group_index": 0}))
    out = f"output.path={tmp_path / 'out' / 'rewards.jsonl'}"
    if message is None:
        run_job(compose_job(["router=mixed", override, out]), tmp_path, Console())
        assert json.loads((tmp_path / "out" / "rewards.jsonl").read_text())["route"] == "gsm8k"
        return
    with pytest.raises(ConfigError) as raised:
        compose_job(["router=mixed", override, out])
    assert " ".join(str(raised.value.problems[0]).split()) == message
