"""A trained head over the words' model: is the user's message complete at this word?

Zero-shot, SmolLM2 rarely closes a message after a terse command ("Ten of clubs." ~0.03): a
user may go on after one. The head is a logistic regression on what the model already
computed at the last word (its last hidden state, after the final norm, and the zero-shot
log-probability that the message or sentence ends there), trained by
bench/text_turn_train/train.py on written requests and their open prefixes, as written and as
Whisper writes them. Its weights are a small JSON file beside this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["HEAD_FILE", "TurnHead", "head_features"]

HEAD_FILE = Path(__file__).with_name("turn_head.json")


def head_features(hidden: np.ndarray, ends_logprob: float) -> np.ndarray:
    """One row of the head's input: the hidden state at the last word and the zero-shot log-probability."""
    return np.concatenate([np.asarray(hidden, dtype=np.float64).ravel(), [max(ends_logprob, -30.0)]])


@dataclass(frozen=True)
class TurnHead:
    """Standardised features · weights + bias, through a sigmoid."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    model_sha256: str
    """The GGUF the head was trained on: another model's hidden states mean nothing to it."""

    @classmethod
    def load(cls, path: Path = HEAD_FILE) -> TurnHead:
        data = json.loads(Path(path).read_text())
        return cls(np.asarray(data["mean"]), np.asarray(data["scale"]), np.asarray(data["weights"]),
                   float(data["bias"]), data["model_sha256"])

    def save(self, path: Path, about: dict) -> None:
        data = {"about": about, "model_sha256": self.model_sha256, "bias": round(self.bias, 6),
                "weights": [round(float(w), 6) for w in self.weights],
                "mean": [round(float(m), 6) for m in self.mean], "scale": [round(float(s), 6) for s in self.scale]}
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=0) + "\n")
        tmp.replace(path)

    def probability(self, features: np.ndarray) -> np.ndarray | float:
        """P(complete) for one row of `head_features` (a float) or a matrix of rows (an array)."""
        z = ((np.asarray(features) - self.mean) / self.scale) @ self.weights + self.bias
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
        return float(p) if np.ndim(p) == 0 else p
