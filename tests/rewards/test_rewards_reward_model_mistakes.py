"""``reward_model`` with ``api: local`` given a folder that would score wrong without a word.

Each case is a real tiny transformers model saved to a folder (:func:`rr_reward_model.
tiny_reward_model`): a policy's causal language model, a classifier with two outputs, a config
whose pad id is not the tokenizer's, a tokenizer without a chat template. Each ends in an error
that names the fix, or in the model's own scores; never in plausible random ones.

The expected scores are the model's own ``forward`` on each input alone, unpadded, in this
process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rr_reward_model import tiny_reward_model

from rewardrouter import ConfigError, Router, compile_router

pytestmark = pytest.mark.slow  # starts a worker process per router

PROMPT = "What is the capital of France?"
RESPONSES = [
    "The capital of France is Paris.",
    "I am not sure; maybe Rome or Berlin.",
    "Two plus two is four, and the answer is 4. " * 3,
    "Paris",
    "Paris<pad>",  # ends in the tokenizer's pad id (0)
    "Paris<eos>",  # ends in its eos id (1)
]

#: What a folder that holds no sequence classifier is told to become.
POINT = (
    "    point `model:` at a sequence-classification reward model's folder, one whose "
    "config.json `architectures` ends in ForSequenceClassification (e.g. "
    "Qwen3ForSequenceClassification) and whose weights hold its score head"
)


def local_router(folder: Path, **kwargs: Any) -> Router:
    settings = {"api": "local", "model": str(folder), **kwargs}
    term = {"kind": "reward_model", "key": "score", "kwargs": settings}
    return compile_router({"routes": {"chat": {"rewards": {"rm": term}}}})


def rows(*responses: str) -> list[dict[str, Any]]:
    return [{"prompt": PROMPT, "response": r, "metadata": {"dataset": "chat"}} for r in responses]


def own_scores(folder: Path, responses: list[str], template: str, output: int = 0) -> list[float]:
    """Output ``output`` of the model's own forward on each input alone, unpadded."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True)
    scores = []
    for response in responses:
        if template == "chat":
            chat = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": response}]
            ids = tokenizer.apply_chat_template(chat, tokenize=True, return_dict=True)["input_ids"]
        else:
            ids = tokenizer(f"{PROMPT}\n{response}")["input_ids"]
        with torch.no_grad():
            scores.append(float(model(input_ids=torch.tensor([ids])).logits[0, output]))
    return scores


# -- refused when the router compiles ---------------------------------------------------------


@pytest.mark.parametrize(
    ("made", "kwargs", "expected"),
    [
        pytest.param(
            {"head": "causal"},
            {},
            [
                "routes.chat.rewards.rm.kwargs.model: '{folder}' holds a causal language model "
                "(config.json architectures: LlamaForCausalLM), not a sequence-classification "
                "reward model: loaded as one, its score head would not be in the weights but "
                "random, and its scores would change at each start of the worker\n" + POINT
            ],
            id="policy_checkpoint_a_causal_lm",
        ),
        pytest.param(
            {"labels": ["bad", "good"]},
            {},
            [
                "routes.chat.rewards.rm.kwargs.label: the model in '{folder}' has 2 outputs "
                "(config.json id2label: 0 'bad', 1 'good'), and the term does not say which one "
                "is the reward\n    set `label` to the name of the output that scores a good "
                "response (e.g. label: good), or `label_index` to its position; the model card "
                "tells which it is"
            ],
            id="two_labels_and_no_label_named",
        ),
        pytest.param(
            {"labels": ["bad", "good"]},
            {"label": "goood"},
            [
                "routes.chat.rewards.rm.kwargs.label: 'goood' is not an output of the model in "
                "'{folder}', which has 2 outputs (config.json id2label: 0 'bad', 1 'good')\n"
                "    did you mean 'good'?"
            ],
            id="label_name_not_in_id2label",
        ),
        pytest.param(
            {"labels": ["bad", "good"]},
            {"label_index": 2},
            [
                "routes.chat.rewards.rm.kwargs.label_index: 2 is past the last output of the "
                "model in '{folder}', which has 2 outputs (config.json id2label: 0 'bad', "
                "1 'good')\n    set `label_index` to 0..1, or `label` to an output's name"
            ],
            id="label_index_past_the_outputs",
        ),
        pytest.param(
            {"chat": False},
            {},
            [
                "routes.chat.rewards.rm.kwargs.template: the tokenizer in '{folder}' has no "
                "chat template, and `template: auto` reads the conversation through it "
                "(scoring the prompt and the response as plain text instead would read them "
                "otherwise than a chat model was trained to)\n    set `template: plain` to "
                "score prompt + separator + response as one text (separator: '\\n'), or give a "
                "tokenizer that has a chat template"
            ],
            id="template_auto_without_a_chat_template",
        ),
        pytest.param(
            {"head": "causal", "chat": False},
            {"template": "chat"},
            [
                "routes.chat.rewards.rm.kwargs.template: the tokenizer in '{folder}' has no "
                "chat template, and `template: chat` reads the conversation through it",
                "routes.chat.rewards.rm.kwargs.model: '{folder}' holds a causal language model",
            ],
            id="every_problem_of_the_folder_at_once",
        ),
    ],
)
def test_a_folder_that_would_score_wrong_is_refused_when_the_router_compiles(
    tmp_path: Path, made: dict[str, Any], kwargs: dict[str, Any], expected: list[str]
) -> None:
    folder = tiny_reward_model(tmp_path / "model", **made)
    with pytest.raises(ConfigError) as caught:
        local_router(folder, **kwargs)
    found = [str(p) for p in caught.value.problems]
    assert len(found) == len(expected)
    for problem, start in zip(found, expected, strict=True):
        assert problem.startswith(start.format(folder=folder))


# -- refused when the worker loads the weights --------------------------------------------------


def _forget_architectures(folder: Path) -> None:
    """A config that names no architecture: nothing to refuse before the weights are read."""
    config = json.loads((folder / "config.json").read_text())
    del config["architectures"]
    (folder / "config.json").write_text(json.dumps(config))


def _drop_score_head(folder: Path) -> None:
    """A classifier's checkpoint whose weights lost the score head."""
    from safetensors.torch import load_file, save_file

    (weights,) = folder.glob("*.safetensors")
    tensors = {k: v for k, v in load_file(weights).items() if not k.startswith("score.")}
    save_file(tensors, weights, metadata={"format": "pt"})


@pytest.mark.parametrize(
    ("made", "damage", "kwargs"),
    [
        pytest.param(
            {"head": "causal"},
            _forget_architectures,
            {"label_index": 0},  # its config says two outputs, as a config without id2label does
            id="causal_lm_whose_config_names_no_architecture",
        ),
        pytest.param({}, _drop_score_head, {}, id="classifier_whose_weights_lost_the_score_head"),
    ],
)
def test_weights_without_the_score_head_fail_every_call_never_random_scores(
    tmp_path: Path, made: dict[str, Any], damage: Any, kwargs: dict[str, Any]
) -> None:
    folder = tiny_reward_model(tmp_path / "model", **made)
    damage(folder)
    router = local_router(folder, **kwargs)
    try:
        results = router.score_sync(rows("Paris", "Rome"), failures="record")
    finally:
        router.close()
    assert [(r.status, r.reward) for r in results] == [("error", None)] * 2
    assert (
        f"the reward model worker could not load '{folder}': ValueError: the weights in "
        f"'{folder}' hold no score.weight: loaded as a sequence classifier, the model's score "
        "head would be random, and its scores would change at each start of the worker; "
        "point `model:` at a sequence-classification reward model's folder"
    ) in results[0].error_message


# -- scored as the model reads each input alone -------------------------------------------------


@pytest.mark.parametrize(
    ("config_pad", "template"),
    [
        pytest.param("same", "plain", id="config_pad_is_the_tokenizers"),
        pytest.param(1, "plain", id="config_pad_is_eos_tokenizer_pads_with_pad"),
        pytest.param(1, "chat", id="config_pad_is_eos_chat_template"),
        pytest.param(None, "plain", id="config_without_pad_id"),
    ],
)
def test_padded_rows_score_as_the_model_reads_each_input_alone(
    tmp_path: Path, config_pad: Any, template: str
) -> None:
    folder = tiny_reward_model(tmp_path / "model", config_pad=config_pad)
    responses = RESPONSES if template == "plain" else RESPONSES[:4]
    router = local_router(folder, template=template, refuse_special_tokens=False)
    try:
        results = router.score_sync(rows(*responses))
    finally:
        router.close()
    expected = own_scores(folder, responses, template)
    assert [r.raw["raw"] for r in results] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "output"),
    [
        pytest.param({"label": "good"}, 1, id="label_by_name"),
        pytest.param({"label_index": 0}, 0, id="label_by_position"),
    ],
)
def test_the_named_output_of_a_two_label_head_is_the_score(
    tmp_path: Path, kwargs: dict[str, Any], output: int
) -> None:
    folder = tiny_reward_model(tmp_path / "model", labels=["bad", "good"])
    router = local_router(folder, **kwargs)
    try:
        results = router.score_sync(rows(*RESPONSES[:4]))
    finally:
        router.close()
    expected = own_scores(folder, RESPONSES[:4], "chat", output)
    assert [r.raw["raw"] for r in results] == pytest.approx(expected, abs=1e-5)


def test_template_plain_without_a_chat_template_scores_the_plain_text(tmp_path: Path) -> None:
    folder = tiny_reward_model(tmp_path / "model", chat=False)
    router = local_router(folder, template="plain")
    try:
        results = router.score_sync(rows(*RESPONSES[:4]))
    finally:
        router.close()
    expected = own_scores(folder, RESPONSES[:4], "plain")
    assert [r.raw["raw"] for r in results] == pytest.approx(expected, abs=1e-5)
