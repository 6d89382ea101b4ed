"""Weights kept as int8 with one float32 scale per output row, widened to float32 a slice at a time.

The model's matrices dequantized to float32 take ~540 MB; as int8 they take a quarter. numpy
has no int8 or float16 matrix product, and widening float16 is slow here (no F16C path: ~7x a
float32 product), while widening int8 into a reused float32 buffer costs ~30 % of the product
itself (87 µs beside 276 µs for a 576 x 1536 matrix and three rows). Scales are per output, so they apply to the product's few rows, not the matrix.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Q8", "Scratch"]


class Scratch:
    """One reusable float32 buffer that int8 weights are widened into (one caller at a time)."""

    def __init__(self) -> None:
        self._buffer = np.empty(0, dtype=np.float32)

    def widen(self, q: np.ndarray) -> np.ndarray:
        if self._buffer.size < q.size:
            self._buffer = np.empty(q.size, dtype=np.float32)
        out = self._buffer[:q.size].reshape(q.shape)
        np.copyto(out, q, casting="unsafe")
        return out


class Q8:
    """A matrix GGUF stores (outputs, inputs), kept transposed as int8 (inputs, outputs) with one
    float32 scale per output: `x @ w.T` ≈ `w.product(x, scratch)`. Transposed because numpy's
    product with a transposed view took ~2x as long as with a row-major (inputs, outputs) copy."""

    def __init__(self, q: np.ndarray, scale: np.ndarray) -> None:
        self.q, self.scale = q, scale

    @classmethod
    def of(cls, w: np.ndarray) -> Q8:
        """Symmetric per-output quantisation of a float matrix (outputs, inputs)."""
        scale = np.abs(w).max(axis=1) / 127.0
        scale[scale == 0] = 1.0
        q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
        return cls(np.ascontiguousarray(q.T), scale.astype(np.float32))

    @property
    def nbytes(self) -> int:
        return self.q.nbytes + self.scale.nbytes

    def product(self, x: np.ndarray, scratch: Scratch) -> np.ndarray:
        """x (rows, inputs) @ the matrix's transpose → (rows, outputs) float32."""
        return (x @ scratch.widen(self.q)) * self.scale
