"""Moonshine's token table (`tokenizer.bin`): token ids back to text."""

from __future__ import annotations

from pathlib import Path

__all__ = ["MoonshineTokens"]

SPACE = "\u2581".encode()
"""SentencePiece's "▁", which stands for a space in the tokens' bytes."""


class MoonshineTokens:
    """Each entry of the file is a length, then that many bytes; the entry's index is its id.

    A length under 128 is one byte; from 128 on it takes two, `first - 128 + second * 128`
    (moonshine.cpp's BinTokenizer). Ids 0-2 are <unk>, <s> and </s>; 3-258 stand for single
    bytes, so a character the table has no token for still decodes.
    """

    SPECIAL = 3

    def __init__(self, path: Path) -> None:
        data = path.read_bytes()
        tokens: list[bytes] = []
        at = 0
        while at < len(data):
            length = data[at]
            at += 1
            if length >= 128:
                if at >= len(data):
                    raise ValueError(f"{path.name} ends inside a token's length")
                length = length - 128 + data[at] * 128
                at += 1
            if at + length > len(data):
                raise ValueError(f"{path.name} ends inside token {len(tokens)}")
            tokens.append(data[at:at + length])
            at += length
        self.tokens = tokens

    def __len__(self) -> int:
        return len(self.tokens)

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`, without special tokens and ids past the table's end."""
        raw = b"".join(self.tokens[i] for i in ids if self.SPECIAL <= i < len(self.tokens))
        return raw.replace(SPACE, b" ").decode("utf-8", errors="replace").strip()
