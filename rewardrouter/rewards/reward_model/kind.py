"""The ``reward_model`` kind as the compiler sees it: its settings model and ``build``.

Terms with equal settings share one model (one worker process, or one endpoint) and its score
cache. The term returns ``{"score": reward, "raw": the model's score}``: ``key: score`` trains
on the normalized reward, and the result's ``raw`` keeps both.
"""

from __future__ import annotations

from pathlib import Path

from rewardrouter.errors import Problem
from rewardrouter.introspect import ResolveError
from rewardrouter.remote.settings import display_url
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.rewards.remote import read_credential
from rewardrouter.rewards.reward_model.checkpoint import refused
from rewardrouter.rewards.reward_model.settings import RewardModelSettings
from rewardrouter.rewards.reward_model.tokenized import (
    INSTALL,
    ChatRenderer,
    NoChatTemplate,
    load_tokenizer,
)

#: The entries of what the term returns.
KEYS = ("score", "raw")


@resource_kind("reward_model", RewardModelSettings)
def build(settings: RewardModelSettings, resources: Resources) -> Bound:
    """A sequence-classification reward model: served (vLLM, SGLang) or local (transformers).

    Raises ``ResolveError`` when a credential is unset, transformers is missing where a
    tokenizer or a local model is named, a named directory holds no model or tokenizer, the
    tokenizer has no chat template for ``template: chat | auto``, or (local) the directory holds
    no sequence classifier or a head whose output that is the reward the term does not name.
    """
    key = (build, settings.model_dump_json())
    if settings.api == "local":
        return _local(settings, resources, key)

    from rewardrouter.remote.client import JsonEndpoint
    from rewardrouter.remote.pool import SessionPool
    from rewardrouter.rewards.reward_model.served import ServedRewardModel

    credential = read_credential(settings)
    pool = resources.get(SessionPool, SessionPool)
    url = settings.endpoint_url
    name = f"reward model {settings.model!r} ({settings.api}) at {display_url(url)}"
    renderer = None
    if settings.tokenizer is not None:
        _readable(settings.tokenizer, "tokenizer")
        renderer = _renderer(settings, settings.tokenizer, "tokenizer")

    def make() -> ServedRewardModel:
        endpoint = JsonEndpoint(settings.model_copy(update={"url": url}), pool, credential, name)
        return ServedRewardModel(settings, endpoint, renderer)

    served = resources.get(key, make)
    return Bound(served, "group", name, keys=KEYS)


def _local(settings: RewardModelSettings, resources: Resources, key: object) -> Bound:
    """The local model's worker, once its folder is checked: every problem of its tokenizer and
    its config at once (see :mod:`~.checkpoint`)."""
    from rewardrouter.rewards.reward_model.checkpoint import output_index
    from rewardrouter.rewards.reward_model.local import LocalRewardModel

    _readable(settings.model, "model")
    problems: list[Problem] = []
    renderer: ChatRenderer | None = None
    label = 0
    try:
        renderer = _renderer(settings, settings.model, "model")
    except ResolveError as exc:
        problems += exc.problems
    try:
        label = output_index(settings)
    except ResolveError as exc:
        problems += exc.problems
    if problems:
        raise refused(*problems)
    assert renderer is not None
    chat = renderer
    local = resources.get(key, lambda: LocalRewardModel(settings, chat, label))
    return Bound(local, "group", local.name, keys=KEYS)


def _readable(folder: str, field: str) -> None:
    """Raise ``ResolveError`` unless transformers is installed and ``folder`` (kwargs
    ``field``) holds a tokenizer, and a model when ``field`` is ``model``."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ResolveError(
            f"kwargs.{field}: a reward model's tokenizer is read with transformers, which is "
            "not installed",
            INSTALL,
        ) from None
    if not (Path(folder) / "tokenizer_config.json").is_file():
        raise ResolveError(
            f"kwargs.{field}: {folder!r} is not a directory holding a tokenizer "
            "(no tokenizer_config.json)",
            "give the local directory of a saved model and tokenizer (save_pretrained); "
            "nothing is downloaded",
        )
    if field == "model" and not (Path(folder) / "config.json").is_file():
        raise ResolveError(
            f"kwargs.model: {folder!r} holds no model (no config.json)",
            "give the directory a model was saved to with save_pretrained",
        )


def _renderer(settings: RewardModelSettings, folder: str, field: str) -> ChatRenderer:
    """The chat renderer of the tokenizer in ``folder`` (kwargs ``field``)."""
    try:
        return ChatRenderer(
            load_tokenizer(folder),
            settings.template,
            settings.separator,
            settings.refuse_special_tokens,
            settings.max_response_chars,
        )
    except NoChatTemplate as exc:
        raise refused(
            Problem(
                "kwargs.template",
                f"the tokenizer in {folder!r} has no chat template, and `template: "
                f"{exc.template}` reads the conversation through it (scoring the prompt and "
                "the response as plain text instead would read them otherwise than a chat "
                "model was trained to)",
                f"set `template: plain` to score prompt + separator + response as one text "
                f"(separator: {settings.separator!r}), or give a tokenizer that has a chat "
                "template",
            )
        ) from None
    except (OSError, ValueError) as exc:
        raise refused(
            Problem(f"kwargs.{field}", str(exc), "check the tokenizer and `template`")
        ) from None
