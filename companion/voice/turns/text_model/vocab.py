"""The model's own tokenizer, built from the vocabulary and merges inside its GGUF file.

SmolLM2's is GPT-2's byte-level BPE with every digit split on its own (llama.cpp's "smollm"
pre-tokenizer); its control tokens (<|im_start|>, <|im_end|>, …) are matched whole. Hugging
Face's `tokenizers` runs it, so nothing is downloaded.
"""

from __future__ import annotations

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

__all__ = ["tokenizer_from_gguf"]

CONTROL = 3
"""GGUF's token type for a control token."""


def tokenizer_from_gguf(reader) -> Tokenizer:
    """`reader`: a gguf.GGUFReader over a gpt2-style (byte-level BPE) model."""
    kind = reader.fields["tokenizer.ggml.model"].contents()
    if kind != "gpt2":
        raise ValueError(f"only byte-level BPE vocabularies are supported, not {kind}")
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    merges = [tuple(m.split(" ", 1)) for m in reader.fields["tokenizer.ggml.merges"].contents()]
    vocab = {token: index for index, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False)
                                  for token, kind in zip(tokens, types, strict=True) if kind == CONTROL])
    return tokenizer
