"""hibari-tts as one of her voices: its packaged "heart" (a US English woman, distilled from
Kokoro's af_heart), with its own text-to-phoneme step (no espeak), 24 kHz."""

from __future__ import annotations

import numpy as np

from companion.errors import CompanionError, Stage
from companion.voice.speaking.tts import LocalSynthesizer

THREADS = 2
"""onnxruntime threads: a short sentence's first audio in ~15 ms on two cores (bench/voices.py)."""
GAIN = 2.0
"""hibari speaks ~7 dB below piper's joe (RMS 0.045 against 0.106 on the same reply, peaks ~0.45):
without it Mira would be the quiet one of the three at one volume setting."""


class HibariSynthesizer(LocalSynthesizer):
    """A hibari voice. `variation` is piper's and does not apply: hibari's only randomness is
    its noise component, fixed by a seed when `steady`."""

    engine = "hibari"
    sample_rate = 24_000  # hibari.SAMPLE_RATE, known before the package is imported

    def _open(self):
        try:
            from hibari import Hibari

            # The model file is given by path: hibari never looks for (or downloads) a voice.
            return Hibari(model=str(self.model_info.onnx), threads=THREADS)
        except Exception as exc:  # onnxruntime raises its own types for a bad file
            raise CompanionError(
                "model_unloadable", f"I couldn't load the voice {self.model_info.name} "
                f"({type(exc).__name__}: {exc}).", stage=Stage.SPEAKING,
            ) from exc

    def _render(self, text: str, speed: float) -> np.ndarray:
        audio = self._voice(text, speed=speed, seed=0 if self.steady else None)
        return np.clip(audio * GAIN, -1.0, 1.0)
