"""A Hugging Face tokenizer's chat template, applied here: the text a reward model reads.

Used by ``api: local`` (the model's own tokenizer) and by served APIs given ``tokenizer:``
(the text is then sent in batches, and the server tokenizes it as it is). Needs the
``reward-model`` extra (transformers).
"""

from __future__ import annotations

from typing import Any, Literal

from rewardrouter.rewards.model_input import ResponseGuard
from rewardrouter.rewards.reward_model.conversation import conversation, plain_text, written

#: The install line the messages give when transformers is missing.
INSTALL = "pip install 'rewardrouter[reward-model]'  (transformers)"


def load_tokenizer(path: str) -> Any:
    """The tokenizer in directory ``path``, read from local files only (never downloaded)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


class NoChatTemplate(ValueError):
    """The term reads the conversation through the tokenizer's chat template (``template``:
    chat or auto), and the tokenizer has none."""

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(
            f"the tokenizer has no chat template, and `template: {template}` renders the "
            "conversation through it; set `template: plain` to score prompt + separator + "
            "response as one text, or give a tokenizer that has a chat template"
        )


class ChatRenderer:
    """Renders a sample as its reward model expects (see the module doc).

    ``template``: chat or auto (the tokenizer's chat template, which it must have, else
    :class:`NoChatTemplate`: scoring plain text instead would read the conversation otherwise
    than the model was trained to), or plain (``prompt + separator + response``).
    ``chat`` tells how the text was made: a rendered template holds its special tokens
    already, so the text is tokenized without adding more. What the policy wrote is checked
    first (:attr:`guard`): at most ``max_chars`` characters, and, when ``refuse``, none of the
    tokenizer's special tokens.
    """

    __slots__ = ("chat", "guard", "separator", "tokenizer")

    def __init__(
        self,
        tokenizer: Any,
        template: Literal["auto", "chat", "plain"],
        separator: str,
        refuse: bool,
        max_chars: int,
    ) -> None:
        if template != "plain" and not getattr(tokenizer, "chat_template", None):
            raise NoChatTemplate(template)
        self.tokenizer = tokenizer
        self.chat = template != "plain"
        self.separator = separator
        special = set(getattr(tokenizer, "all_special_tokens", []))
        for token in getattr(tokenizer, "added_tokens_decoder", {}).values():
            if getattr(token, "special", False):
                special.add(str(token.content))
        markers = tuple(sorted(m for m in special if m)) if refuse else ()
        self.guard = ResponseGuard(max_chars, markers)

    def render(self, sample: Any) -> str:
        """The text of ``sample``; :class:`~.conversation.Unusable` when it cannot be, and
        :class:`~rewardrouter.rewards.model_input.RefusedResponse` when what the policy wrote
        must not be read."""
        self.guard.check(written(sample))
        if not self.chat:
            return plain_text(sample, self.separator)
        text = self.tokenizer.apply_chat_template(conversation(sample), tokenize=False)
        return str(text)
