"""`companion doctor`'s listening check: the mode, and the wake-word detector really scoring audio."""

from __future__ import annotations

import time

from companion.config import Settings
from companion.doctor import Check

MODE_WORDS = {"always": "Always answer", "called": "When called", "muted": "Muted"}


def check_listening(settings: Settings, names: tuple[str, ...] = ()) -> Check:
    """The listening mode and what calls her; in When called, the wake word's model is loaded
    and given a second of silence (a broken wheel fails here, not in the room)."""
    voice = settings.voice
    mode = MODE_WORDS[voice.mode]
    if voice.mode != "called" and voice.listening != "called":
        return Check("Listening", True, f"{mode}: she answers every voice she hears"
                     if voice.mode == "always" else f"{mode} (push-to-talk still works)", essential=False)
    try:
        import numpy as np

        from companion.voice.addressing.wake import WakeWordThread, wake_phrase

        heard: list[float] = []
        detector = WakeWordThread(voice.wake_word, lambda at, _score: heard.append(at))
        started = time.perf_counter()
        for i in range(31):  # one second of 32 ms frames
            detector.feed(np.zeros(512, dtype=np.float32), (i + 1) * 0.032)
        ready = detector.wait_until(31 * 0.032, timeout=10)
        took_ms = (time.perf_counter() - started) * 1000
        detector.close()
    except Exception as exc:
        return Check("Listening", False, f"{mode}, but the wake-word detector could not start ({exc})",
                     "Reinstall with `make run` (it installs pymicro-wakeword), or choose Always answer "
                     "in Settings → Voice.", essential=False)
    if not ready or heard:
        return Check("Listening", False, f"{mode}, but the wake-word detector did not score a second of "
                     "silence cleanly", "Reinstall with `make run`.", essential=False)
    calls = [f"the wake word \u201c{wake_phrase(voice.wake_word)}\u201d"]
    if voice.name_wakes:
        calls.append(f"her name ({', '.join(names)})" if names else "her name")
    muted = " (muted now)" if voice.muted else ""
    return Check("Listening", True, f"{mode}{muted}: {' or '.join(calls)}, or push-to-talk; follow-up window "
                 f"{voice.follow_up_s:g} s; the detector scored 1 s of audio in {took_ms:.0f} ms", essential=False)
