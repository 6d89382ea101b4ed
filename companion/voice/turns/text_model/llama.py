"""A llama-architecture language model read from a GGUF file and run in numpy, with a KV cache.

Small and plain on purpose: the end-of-turn check runs SmolLM2-135M on a few new tokens at a
pause, where no packaged llama.cpp binding installs here (they need a newer glibc, a compiler,
or a 300 MB wheel). The file's tensors are read and dequantized once by `gguf` (llama.cpp's own
reader, pure Python), and kept in her cache folder for the next process (stored.py); each
forward step is the llama block as llama.cpp computes it:

    x = x + Wo · attention(RoPE(Wq · rms(x)), RoPE(Wk · rms(x)), Wv · rms(x))
    x = x + Wdown · (silu(Wgate · rms(x)) * Wup · rms(x))

The blocks' matrices are kept as int8 rows with a scale each (q8.py); the token embedding,
which is also the output head over 49,152 tokens, stays float32: widening it at every check
cost ~25 ms. ~220 MB of weights where float32 took ~540.
RoPE rotates *adjacent* pairs (llama.cpp's "normal" rope): GGUF's converter permuted the query
and key rows of Hugging Face's half-split layout into that order. Attention is grouped-query
(9 query heads share 3 key/value heads), and the output projection is the token embedding (tied).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from companion.voice.turns.text_model.q8 import Q8, Scratch

__all__ = ["Llama", "LlamaShape", "KVCache"]


@dataclass(frozen=True)
class LlamaShape:
    layers: int
    width: int
    heads: int
    kv_heads: int
    rope_base: float
    eps: float

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


@dataclass
class _Block:
    attn_norm: np.ndarray
    wq: Q8
    wk: Q8
    wv: Q8
    wo: Q8
    ffn_norm: np.ndarray
    gate: Q8
    up: Q8
    down: Q8


class KVCache:
    """The keys and values of every position evaluated so far, per layer; `keep(n)` forgets the rest."""

    def __init__(self, shape: LlamaShape, capacity: int) -> None:
        size = (shape.layers, shape.kv_heads, capacity, shape.head_dim)
        self.keys = np.zeros(size, dtype=np.float32)
        self.values = np.zeros(size, dtype=np.float32)
        self.length = 0

    @property
    def capacity(self) -> int:
        return self.keys.shape[2]

    def keep(self, length: int) -> None:
        self.length = min(self.length, length)


def _rms(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


class Llama:
    """`Llama.load(path)` once; `forward(tokens, cache)` appends `tokens` after the cache's
    positions and returns the log-probabilities of the next token after the last one. One
    caller at a time (the weights are widened into one shared buffer)."""

    def __init__(self, shape: LlamaShape, embedding: np.ndarray, blocks: list[_Block], norm: np.ndarray) -> None:
        self.shape = shape
        self.embedding = embedding
        self.blocks = blocks
        self.norm = norm
        self._scratch = Scratch()
        half = shape.head_dim // 2
        self._inv_freq = shape.rope_base ** (-np.arange(half, dtype=np.float64) / half)

    @classmethod
    def load(cls, path: Path, reader=None) -> Llama:
        """`reader`: the file's gguf.GGUFReader when already open (parsing it costs ~2 s)."""
        from gguf import GGUFReader
        from gguf.quants import dequantize

        reader = reader or GGUFReader(str(path))

        def field(name: str):
            return reader.fields[name].contents()

        arch = field("general.architecture")
        if arch != "llama":
            raise ValueError(f"{Path(path).name} is a {arch} model, not llama")
        shape = LlamaShape(layers=int(field("llama.block_count")), width=int(field("llama.embedding_length")),
                           heads=int(field("llama.attention.head_count")),
                           kv_heads=int(field("llama.attention.head_count_kv")),
                           rope_base=float(field("llama.rope.freq_base")),
                           eps=float(field("llama.attention.layer_norm_rms_epsilon")))
        tensors = {}
        for tensor in reader.tensors:
            # One tensor at a time, so float32 never holds the whole model.
            weights = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
            blocks_matrix = weights.ndim == 2 and tensor.name.startswith("blk.")
            tensors[tensor.name] = Q8.of(weights) if blocks_matrix else np.ascontiguousarray(weights)
        return cls.from_tensors(shape, tensors)

    @classmethod
    def from_tensors(cls, shape: LlamaShape, tensors: dict[str, np.ndarray | Q8]) -> Llama:
        """The model from its weights by their GGUF names, as `tensors()` gives them (a stored copy: stored.py)."""
        tensors = dict(tensors)
        if "output.weight" in tensors:
            raise ValueError("an untied output head is not supported")

        def block(i: int) -> _Block:
            t = lambda name: tensors.pop(f"blk.{i}.{name}.weight")  # noqa: E731
            return _Block(attn_norm=t("attn_norm"), wq=t("attn_q"), wk=t("attn_k"), wv=t("attn_v"),
                          wo=t("attn_output"), ffn_norm=t("ffn_norm"), gate=t("ffn_gate"), up=t("ffn_up"),
                          down=t("ffn_down"))

        blocks = [block(i) for i in range(shape.layers)]
        return cls(shape, tensors["token_embd.weight"], blocks, tensors["output_norm.weight"])

    def tensors(self) -> dict[str, np.ndarray | Q8]:
        """Every weight by its GGUF name: `from_tensors(shape, tensors())` is this model again."""
        found: dict[str, np.ndarray | Q8] = {"token_embd.weight": self.embedding, "output_norm.weight": self.norm}
        for i, b in enumerate(self.blocks):
            for name, weights in (("attn_norm", b.attn_norm), ("attn_q", b.wq), ("attn_k", b.wk), ("attn_v", b.wv),
                                  ("attn_output", b.wo), ("ffn_norm", b.ffn_norm), ("ffn_gate", b.gate),
                                  ("ffn_up", b.up), ("ffn_down", b.down)):
                found[f"blk.{i}.{name}.weight"] = weights
        return found

    def new_cache(self, capacity: int = 512) -> KVCache:
        return KVCache(self.shape, capacity)

    def _rope(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """x: (heads, tokens, head_dim); rotates each adjacent pair by position × frequency."""
        angles = positions[:, None] * self._inv_freq[None, :]
        cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out

    def forward(self, tokens: list[int], cache: KVCache, last: int = 1) -> np.ndarray:
        """Log-probabilities (last, vocabulary) of the token after each of the `last` final
        positions of `tokens`, which follow the cache's."""
        return self.log_probabilities(self.hidden(tokens, cache, last))

    def log_probabilities(self, hidden: np.ndarray) -> np.ndarray:
        """The next token's log-probabilities read from `hidden` states (the tied output head)."""
        # (vocabulary, width) @ (width, rows): numpy's product with the transposed view took ~1.4x
        # as long (23 against 17 ms of a core for two rows: a third of a check).
        logits = (self.embedding @ hidden.T).T
        logits = logits - logits.max(axis=-1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))

    def hidden(self, tokens: list[int], cache: KVCache, last: int = 1) -> np.ndarray:
        """The last hidden states (last, width), after the final norm, of the `last` final
        positions of `tokens`, which follow the cache's."""
        if not tokens:
            raise ValueError("nothing to evaluate")
        s = self.shape
        start, count = cache.length, len(tokens)
        if start + count > cache.capacity:
            raise ValueError(f"the text is longer than the cache ({cache.capacity} tokens)")
        end = start + count
        positions = np.arange(start, end, dtype=np.float64)
        group = s.heads // s.kv_heads
        scale = float(1.0 / np.sqrt(s.head_dim))  # a Python float: a numpy float64 would lift every array to float64
        # Causal mask for the new rows over every cached column.
        mask = np.where(np.arange(end)[None, :] > positions[:, None], -np.inf, 0.0).astype(np.float32)
        scratch = self._scratch
        x = self.embedding[np.asarray(tokens)]
        for layer, b in enumerate(self.blocks):
            h = _rms(x, b.attn_norm, s.eps)
            q = b.wq.product(h, scratch).reshape(count, s.heads, s.head_dim).transpose(1, 0, 2)
            k = b.wk.product(h, scratch).reshape(count, s.kv_heads, s.head_dim).transpose(1, 0, 2)
            v = b.wv.product(h, scratch).reshape(count, s.kv_heads, s.head_dim).transpose(1, 0, 2)
            cache.keys[layer, :, start:end] = self._rope(k, positions)
            cache.values[layer, :, start:end] = v
            q = self._rope(q, positions).reshape(s.kv_heads, group * count, s.head_dim)
            keys, values = cache.keys[layer, :, :end], cache.values[layer, :, :end]
            scores = (q @ keys.transpose(0, 2, 1)) * scale  # (kv_heads, group·count, end)
            scores = scores.reshape(s.kv_heads, group, count, end) + mask
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores.reshape(s.kv_heads, group * count, end) @ values)
            attended = attended.reshape(s.heads, count, s.head_dim).transpose(1, 0, 2).reshape(count, s.width)
            x = x + b.wo.product(attended, scratch)
            h = _rms(x, b.ffn_norm, s.eps)
            x = x + b.down.product(_silu(b.gate.product(h, scratch)) * b.up.product(h, scratch), scratch)
        cache.length = end
        return _rms(x[-min(last, count):], self.norm, s.eps)
