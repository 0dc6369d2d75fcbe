"""Tiny offline language models for the tests that run a trainer or a reward model: a byte-level
BPE tokenizer trained in memory and a randomly initialised Llama sized to it. Nothing is
downloaded; the same seed gives the same weights."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

#: Trainer arguments (transformers' ``TrainingArguments``, so TRL's configs too) of a short run
#: here: float32 on the CPU, logged every step, nothing reported or saved, seeded.
CPU_RUN: dict[str, Any] = {
    "bf16": False,
    "use_cpu": True,
    "report_to": "none",
    "logging_steps": 1,
    "save_strategy": "no",
    "seed": 0,
}


def bpe_tokenizer(
    texts: Iterable[str],
    *,
    vocab_size: int,
    special_tokens: Sequence[str],
    pad: str,
    eos: str,
    **named: Any,
) -> Any:
    """A ``PreTrainedTokenizerFast`` over a byte-level BPE trained on ``texts``.

    ``special_tokens`` are reserved first, in their order (``pad`` and ``eos`` among them);
    ``named`` goes to ``PreTrainedTokenizerFast`` (``additional_special_tokens``, for one).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=list(special_tokens),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token=pad, eos_token=eos, **named)


def tiny_llama(
    tokenizer: Any,
    *,
    head: Literal["causal", "score"] = "causal",
    hidden_size: int = 16,
    layers: int = 1,
    heads: int = 2,
    max_positions: int = 128,
    seed: int = 0,
) -> Any:
    """A random Llama over ``tokenizer``'s vocabulary: a causal LM, or (``head="score"``) a
    sequence classifier with one output, as reward models are."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, LlamaConfig

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    if head == "score":
        config.num_labels = 1
        return AutoModelForSequenceClassification.from_config(config)
    return AutoModelForCausalLM.from_config(config)
