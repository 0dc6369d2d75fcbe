"""The ``reward_model`` kind as the compiler sees it: its settings model and ``build``.

Terms with equal settings share one model (one worker process, or one endpoint) and its score
cache. The term returns ``{"score": reward, "raw": the model's score}``: ``key: score`` trains
on the normalized reward, and the result's ``raw`` keeps both.
"""

from __future__ import annotations

from pathlib import Path

from rewardrouter.introspect import ResolveError
from rewardrouter.remote.settings import display_url
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.rewards.remote import read_credential
from rewardrouter.rewards.reward_model.settings import RewardModelSettings
from rewardrouter.rewards.reward_model.tokenized import INSTALL

#: The entries of what the term returns.
KEYS = ("score", "raw")


@resource_kind("reward_model", RewardModelSettings)
def build(settings: RewardModelSettings, resources: Resources) -> Bound:
    """A sequence-classification reward model: served (vLLM, SGLang) or local (transformers).

    Raises ``ResolveError`` when a credential is unset, transformers is missing where a
    tokenizer or a local model is named, or a named directory holds no model or tokenizer.
    """
    key = (build, settings.model_dump_json())
    if settings.api == "local":
        from rewardrouter.rewards.reward_model.local import LocalRewardModel

        renderer = _renderer(settings, settings.model, "model")
        local = resources.get(key, lambda: LocalRewardModel(settings, renderer))
        return Bound(local, "group", local.name, keys=KEYS)

    from rewardrouter.remote.client import JsonEndpoint
    from rewardrouter.remote.pool import SessionPool
    from rewardrouter.rewards.reward_model.served import ServedRewardModel

    credential = read_credential(settings)
    pool = resources.get(SessionPool, SessionPool)
    url = settings.endpoint_url
    name = f"reward model {settings.model!r} ({settings.api}) at {display_url(url)}"
    renderer = _renderer(settings, settings.tokenizer, "tokenizer") if settings.tokenizer else None

    def make() -> ServedRewardModel:
        endpoint = JsonEndpoint(settings.model_copy(update={"url": url}), pool, credential, name)
        return ServedRewardModel(settings, endpoint, renderer)

    served = resources.get(key, make)
    return Bound(served, "group", name, keys=KEYS)


def _renderer(settings: RewardModelSettings, folder: str, field: str) -> object:
    """The chat renderer of the tokenizer in ``folder`` (kwargs ``field``)."""
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
    from rewardrouter.rewards.reward_model.tokenized import ChatRenderer, load_tokenizer

    try:
        return ChatRenderer(
            load_tokenizer(folder),
            settings.template,
            settings.separator,
            settings.refuse_special_tokens,
            settings.max_response_chars,
        )
    except (OSError, ValueError) as exc:
        raise ResolveError(f"kwargs.{field}: {exc}", "check the tokenizer and `template`") from None
