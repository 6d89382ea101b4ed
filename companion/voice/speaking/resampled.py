"""A voice heard at another voice's sample rate: what her running session needs when another
personality's voice (another engine, another rate) takes over without a restart. Her speaker,
her cached lines and her echo reference keep the rate they were opened with."""

from __future__ import annotations

import numpy as np

from companion.voice.sound.audio import resample


class ResampledVoice:
    """`engine` (a LocalSynthesizer) at `sample_rate`; her speed, variation and pitch are the engine's."""

    def __init__(self, engine, sample_rate: int) -> None:
        self.engine = engine
        self.sample_rate = sample_rate

    @property
    def model_info(self):
        return self.engine.model_info

    @property
    def synth_count(self) -> int:
        return self.engine.synth_count

    @property
    def speed(self) -> float:
        return self.engine.speed

    @speed.setter
    def speed(self, value: float) -> None:
        self.engine.speed = value

    @property
    def variation(self):
        return self.engine.variation

    @variation.setter
    def variation(self, value) -> None:
        self.engine.variation = value

    @property
    def pitch(self) -> float:
        return self.engine.pitch

    @pitch.setter
    def pitch(self, value: float) -> None:
        self.engine.pitch = value

    def take_notice(self) -> str | None:
        return self.engine.take_notice()

    def synthesize_sync(self, text: str) -> np.ndarray:
        return resample(self.engine.synthesize_sync(text), self.engine.sample_rate, self.sample_rate)

    async def synthesize(self, text: str) -> np.ndarray:
        return resample(await self.engine.synthesize(text), self.engine.sample_rate, self.sample_rate)
