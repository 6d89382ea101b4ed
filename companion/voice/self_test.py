"""After an engine switch: a short check that her ear hears a known word and her mouth makes a sound."""

from __future__ import annotations

import functools
import logging
import re

import numpy as np

from companion.errors import CompanionError, Stage
from companion.paths import resource_dir
from companion.voice.hearing.stt import Transcriber
from companion.voice.sound.audio import read_wav, resample
from companion.voice.sound.frames import SAMPLE_RATE
from companion.voice.speaking.tts import Synthesizer

log = logging.getLogger(__name__)

TEST_WORD = "Hello."
"""What the mouth says, and what the ear's clip (assets/sounds/hello.wav, her own voice) says."""
MIN_TEST_AUDIO_S = 0.15
"""A spoken "Hello." is about half a second: anything much shorter is not a word."""
MIN_TEST_PEAK = 0.01


@functools.cache
def hello_clip() -> np.ndarray:
    """Her own voice saying "Hello.", 16 kHz mono (read once)."""
    audio, rate = read_wav(resource_dir("assets") / "sounds" / "hello.wav")
    return resample(audio, rate, SAMPLE_RATE)


async def check_hearing(transcriber: Transcriber) -> str:
    """Transcribe the known clip; the text, or a CompanionError when the ear heard nothing.

    Any text passes (a multilingual model may write "Hallo"): the check is that audio goes in
    and words come out, not how well the model hears."""
    try:
        text = await transcriber.transcribe(hello_clip())
    except CompanionError:
        raise
    except Exception as exc:
        raise CompanionError("self_test_failed", f"My hearing failed its test ({type(exc).__name__}: {exc}).",
                             stage=Stage.HEARING) from exc
    if not text.strip():
        raise CompanionError("self_test_failed", "My hearing heard nothing in a test word: it can't hear.",
                             stage=Stage.HEARING)
    if "hello" not in re.sub(r"[^a-z]", "", text.lower()):
        log.info("hearing test: %r for %r (it hears, if not perfectly)", text, TEST_WORD)
    return text


async def check_voice(synthesizer: Synthesizer) -> None:
    """Synthesize a word; a CompanionError when no sound comes out."""
    try:
        audio = await synthesizer.synthesize(TEST_WORD)
    except CompanionError:
        raise
    except Exception as exc:
        raise CompanionError("self_test_failed", f"My voice failed its test ({type(exc).__name__}: {exc}).",
                             stage=Stage.SPEAKING) from exc
    rate = getattr(synthesizer, "sample_rate", SAMPLE_RATE)
    if audio.size < MIN_TEST_AUDIO_S * rate or float(np.max(np.abs(audio))) < MIN_TEST_PEAK:
        raise CompanionError("self_test_failed", "My voice made no sound for a test word.", stage=Stage.SPEAKING)
