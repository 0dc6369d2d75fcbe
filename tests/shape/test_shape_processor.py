"""The post-processing chain: route shaping, global shaping, estimator; compile-time problems."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest
import rr_stagefns
import torch

from rewardrouter.config.stages import (
    ClipStage,
    CustomStage,
    GRPOStage,
    NoAdvantageStage,
    OverlongPenaltyStage,
    PostProcessStage,
    RLOOStage,
    ScaleStage,
    ShapingStage,
)
from rewardrouter.errors import ConfigError, RewardError
from rewardrouter.shape import MissingInputError, PostProcessor, compile_post_process

CPU_GRPO = GRPOStage(device="cpu", dtype="float64")


@pytest.fixture(autouse=True)
def _clear_seen() -> Iterator[None]:
    rr_stagefns.SEEN.clear()
    yield
    rr_stagefns.SEEN.clear()


def custom(name: str, **kwargs: object) -> CustomStage:
    return CustomStage(path=f"rr_stagefns.{name}", kwargs=kwargs)


@pytest.mark.parametrize(
    ("post_process", "shaped"),
    [
        pytest.param([ScaleStage(mul=2), ClipStage(max=1)], [1.0, 1.0, 0.0], id="scale_then_clip"),
        pytest.param([ClipStage(max=1), ScaleStage(mul=2)], [2.0, 1.2, 0.0], id="clip_then_scale"),
        pytest.param(
            [custom("add_bonus", bonus=1.0), ScaleStage(mul=0.5)],
            [1.5, 0.8, 0.5],
            id="custom_then_scale",
        ),
        pytest.param(
            [ScaleStage(mul=0.5), custom("add_bonus", bonus=1.0)],
            [2.0, 1.3, 1.0],
            id="scale_then_custom",
        ),
    ],
)
def test_global_stages_run_in_declared_order(
    post_process: list[PostProcessStage], shaped: list[float]
) -> None:
    result = PostProcessor.compile({}, post_process)([2.0, 0.6, 0.0])
    assert result.shaped == pytest.approx(shaped)
    assert result.raw == [2.0, 0.6, 0.0]


def test_route_shaping_touches_only_its_route_and_runs_before_global_stages() -> None:
    processor = PostProcessor.compile(
        {"math": [ScaleStage(mul=10)], "qa": [], "code": [custom("record")]},
        [ClipStage(max=5), CPU_GRPO],
    )
    result = processor(
        [0.2, 0.9, 0.2, 0.9, None],
        routes=["math", "qa", "qa", "math", "code"],
        group_index=[0, 0, 1, 1, 1],
    )
    assert result.shaped == pytest.approx([2.0, 0.9, 0.2, 5.0, None])
    assert processor.route_names == ("math", "code")  # routes without stages cost nothing
    assert rr_stagefns.SEEN == []  # the only `code` sample has no reward: the stage never ran


def test_none_rewards_skip_stages_stay_out_of_groups_and_get_zero() -> None:
    processor = PostProcessor.compile({}, [custom("record"), CPU_GRPO])
    result = processor([1.0, None, 0.0, None], group_index=[3, 3, 3, 8])
    assert rr_stagefns.SEEN == [[1.0, 0.0]]
    assert result.raw == [1.0, None, 0.0, None]
    assert result.shaped == [1.0, None, 0.0, None]
    assert result.advantages[1] == 0.0 and result.advantages[3] == 0.0
    assert result.advantages[0] == pytest.approx(-result.advantages[2])  # a group of two, not three


@pytest.mark.parametrize(
    ("post_process", "advantages"),
    [
        pytest.param([], [1.0, 0.0, 0.3, 0.3], id="no_stage_passes_rewards"),
        pytest.param([NoAdvantageStage(device="cpu")], [1.0, 0.0, 0.3, 0.3], id="none_estimator"),
        pytest.param([RLOOStage(device="cpu", dtype="float64")], [1.0, -1.0, 0.0, 0.0], id="rloo"),
    ],
)
def test_estimator_choice(post_process: list[PostProcessStage], advantages: list[float]) -> None:
    result = PostProcessor.compile({}, post_process)([1.0, 0.0, 0.3, 0.3], group_index=[1, 1, 2, 2])
    assert result.advantages == pytest.approx(advantages)


def test_constant_group_check_comes_with_the_result() -> None:
    processor = PostProcessor.compile({}, [GRPOStage(device="cpu")])
    result = processor([0.3] * 16 + [1.0, 0.0], group_index=[0] * 16 + [1, 1])
    assert result.constant_groups is not None
    assert result.constant_groups.groups == 1 and result.constant_groups.all_zero
    assert result.advantages[:16] == [0.0] * 16


def test_position_grouping_needs_no_group_index() -> None:
    stage = GRPOStage(device="cpu", group_by="position", n_samples_per_prompt=2, dtype="float64")
    result = PostProcessor.compile({}, [stage])([1.0, 0.0, 0.5, 0.5])
    assert result.advantages[2:] == [0.0, 0.0]
    assert result.constant_groups is not None and result.constant_groups.groups == 1


def test_stages_read_per_sample_fields() -> None:
    processor = PostProcessor.compile(
        {"math": [custom("per_token")]},
        [OverlongPenaltyStage(max_len=100, buffer=50, factor=1.0)],
    )
    result = processor([10.0, 10.0], routes=["math", None], response_length=[100, 75])
    assert result.shaped == pytest.approx([10.0 / 100 - 1.0, 10.0 - 0.5])


def test_missing_field_names_the_stage() -> None:
    processor = PostProcessor.compile({}, [OverlongPenaltyStage(max_len=100, buffer=10)])
    with pytest.raises(MissingInputError, match=r"post_process\[0\] needs `response_length`"):
        processor([1.0])


def test_custom_stage_may_return_a_list() -> None:
    assert PostProcessor.compile({}, [custom("as_list")])([0.5, None]).shaped == [5.0, None]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param(
            "wrong_length", r"returned shape \(1,\) for rewards of shape \(3,\)", id="wrong_shape"
        ),
        pytest.param("makes_nan", r"returned nan for sample 0", id="nan"),
        pytest.param("raises", r"raised RuntimeError: boom", id="raises"),
        # torch said "could not infer dtype of NoneType", as if the stage had raised
        pytest.param(
            "in_place",
            r"returned None; a stage returns the shaped rewards, one per reward: end it with "
            r"`return rewards` \(or the tensor it computed\), since changing `rewards` in place "
            r"does not return it$",
            id="returns_none",
        ),
    ],
)
def test_a_failing_custom_stage_is_named(name: str, message: str) -> None:
    processor = PostProcessor.compile({"qa": [custom(name)]}, [])
    with pytest.raises(
        RewardError, match=rf"routes\.qa\.shaping\[0\] \(rr_stagefns\.{name}\) {message}"
    ) as info:
        processor([1.0, 2.0, 3.0], routes=["qa"] * 3)
    assert info.value.route == "qa"


def test_tensor_api_matches_list_api() -> None:
    processor = PostProcessor.compile({"a": [ScaleStage(mul=2)]}, [ClipStage(max=1.5), CPU_GRPO])
    rewards = [0.1, 0.9, None, 0.3, 0.7, 0.2]
    routes = ["a", "a", "a", "b", "b", "a"]
    groups = [0, 0, 0, 1, 1, 1]
    listed = processor(rewards, routes=routes, group_index=groups)
    tensors = processor.process(
        torch.tensor([r if r is not None else 0.0 for r in rewards]),
        valid=torch.tensor([r is not None for r in rewards]),
        route_ids=torch.tensor([0 if r == "a" else -1 for r in routes]),
        group_index=torch.tensor(groups),
    )
    assert tensors.advantages.tolist() == pytest.approx(listed.advantages)
    assert tensors.shaped[2].isnan()


def test_lists_of_the_wrong_length_are_refused() -> None:
    with pytest.raises(ValueError, match="group_index has 1 entries for 2 rewards"):
        PostProcessor.compile({}, [CPU_GRPO])([1.0, 0.0], group_index=[0])


@pytest.mark.parametrize(
    ("route_shaping", "post_process", "path", "message"),
    [
        pytest.param(
            {"math": [custom("add_bonnus")]},
            [],
            "routes.math.shaping[0].path",
            "did you mean 'add_bonus'?",
            id="typo_in_function",
        ),
        pytest.param(
            {},
            [CustomStage(path="rr_stagefnz.add_bonus")],
            "post_process[0].path",
            "module 'rr_stagefnz' not found",
            id="typo_in_module",
        ),
        pytest.param(
            {},
            [custom("NOT_A_FUNCTION")],
            "post_process[0].path",
            "not a function",
            id="not_callable",
        ),
        pytest.param({}, [custom("asynchronous")], "post_process[0].path", "is async", id="async"),
        pytest.param(
            {},
            [custom("one_argument")],
            "post_process[0].path",
            "(rewards, batch)",
            id="too_few_parameters",
        ),
        pytest.param(
            {},
            [custom("add_bonus", bonsu=1)],
            "post_process[0]",
            "did you mean 'bonus'?",
            id="unknown_kwarg",
        ),
        pytest.param(
            {}, [custom("floor_at")], "post_process[0]", "requires 'floor'", id="missing_kwarg"
        ),
        pytest.param(
            {"math": [CPU_GRPO]},
            [],
            "routes.math.shaping[0].kind",
            "put it last in `post_process`",
            id="estimator_in_route_shaping",
        ),
        pytest.param(
            {},
            [CPU_GRPO, ClipStage()],
            "post_process[0].kind",
            "not a shaping stage",
            id="estimator_not_last",
        ),
    ],
)
def test_compile_problems_carry_yaml_paths(
    route_shaping: Mapping[str, Sequence[ShapingStage]],
    post_process: Sequence[PostProcessStage],
    path: str,
    message: str,
) -> None:
    processor, problems = compile_post_process(route_shaping, post_process)
    assert processor is None
    assert [p.path for p in problems] == [path]
    assert message in f"{problems[0].message} {problems[0].hint}"


def test_cuda_device_without_a_gpu_is_a_compile_problem() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    _, problems = compile_post_process({}, [GRPOStage(device="cuda:0")])
    assert [p.path for p in problems] == ["post_process[0].device"]


def test_every_problem_is_reported_at_once_under_the_given_prefixes() -> None:
    with pytest.raises(ConfigError) as info:
        PostProcessor.compile(
            {"math": [custom("nope")], "qa": [ClipStage(), custom("one_argument")]},
            [custom("floor_at"), custom("asynchronous"), CPU_GRPO],
            routes_path="router.routes",
            post_process_path="router.post_process",
        )
    assert [p.path for p in info.value.problems] == [
        "router.routes.math.shaping[0].path",
        "router.routes.qa.shaping[1].path",
        "router.post_process[0]",
        "router.post_process[1].path",
    ]
    assert "4 problems" in str(info.value)


def test_anything_goes_for_a_catch_all_signature() -> None:
    processor, problems = compile_post_process({}, [custom("anything", whatever=1)])
    assert processor is not None and not problems
