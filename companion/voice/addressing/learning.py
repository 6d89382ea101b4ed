"""Learning how her hearing writes her names: each is said in several voices (hers, and
espeak-ng's when installed), transcribed by the engine she listens with, and the spellings
that come back are kept (voice.addressing.heard.forms_of).

All of it runs off the event loop (synthesis and transcription in their engines' worker
threads); a name once learned with one hearing model is kept for the process and, when a
cache file is given, on disk, so the next start knows it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from companion.voice.addressing.heard import NameHearing, forms_of, heard_prefix
from companion.voice.addressing.wake import wake_phrase
from companion.voice.hearing.stt import Transcriber
from companion.voice.sound.audio import read_wav, resample

__all__ = ["ESPEAK_VOICES", "LEARN_TAIL", "MAY_NOT_WAKE", "RELIABLE_SHARE", "NameLearning", "heard_as", "hearing_id",
           "hint_names", "learn_name", "unheard_advice"]

log = logging.getLogger(__name__)

LEARN_TAIL = "what time is it"
"""Said after the name ("Mira, what time is it?"): a name alone is too short for Whisper, and
a call is how she hears it in the room."""

ESPEAK_VOICES = ("en-us", "en+m3", "en+f3", "en-gb-x-rp", "en-029", "en-us-nyc")
"""Other voices for the name (espeak-ng, when installed): American, British, Caribbean, a
woman's and a man's, so a spelling that only one voice gets is known for what it is."""

RELIABLE_SHARE = 0.75
"""A name is reliably heard when at least this share of its samples call her."""

MAY_NOT_WAKE = "called by it she may not wake"
"""What a name heard in fewer than RELIABLE_SHARE of its samples means (the doctor, Settings)."""


def heard_as(caught: int, heard: Sequence[str]) -> str:
    """How a name came back from her hearing, as the doctor and Settings say it:
    "heard in 2 of 7 voices (written “Babe”, “Tep”)"."""
    spelled = ", ".join(dict.fromkeys(f"\u201c{h}\u201d" for h in heard if h)) or "nothing"
    return f"heard in {caught} of {len(heard)} voices (written {spelled})"


def unheard_advice(wake_word: str) -> str:
    """What to do about a name her hearing does not reliably catch (the doctor's fix, Settings' line)."""
    return ("Add an alias her hearing catches (two or more syllables, e.g. in the personality's front matter: "
            f"aliases: [...]), or call her with the wake word \u201c{wake_phrase(wake_word)}\u201d.")

_LEARNED: dict[tuple[str, str], NameHearing] = {}
"""What this process has learned, by (name, hearing model): a second session, or a test,
needs no second round of synthesis."""
_LEARNED_LOCK = threading.Lock()


def hearing_id(transcriber: Transcriber) -> str:
    """Which hearing wrote a spelling (a cache written by one model, or by one told her names,
    is no use to another)."""
    model = getattr(transcriber, "model", None)
    name = str(getattr(model, "name", None) or getattr(transcriber, "name", None) or type(transcriber).__name__)
    return f"{name}, told her names" if getattr(transcriber, "call_names", ()) else name


def hint_names(transcriber: Transcriber, names: Sequence[str]) -> None:
    """Tell a hearing that can be told (Whisper's `call_names`) the names that may call her;
    none: it hears the room untold."""
    if hasattr(transcriber, "call_names"):
        transcriber.call_names = tuple(dict.fromkeys(names))


def _espeak(text: str, voice: str) -> np.ndarray | None:
    with tempfile.TemporaryDirectory(prefix="companion-name-") as folder:
        path, said = Path(folder) / "name.wav", Path(folder) / "name.txt"
        try:
            said.write_text(text, encoding="utf-8")  # read from a file: a name is never an option
            subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(path), "-f", str(said)],
                           check=True, timeout=30, capture_output=True, stdin=subprocess.DEVNULL)
            audio, rate = read_wav(path)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
    return resample(audio, rate, 16_000)


async def _samples(text: str, synthesizer) -> list[np.ndarray]:
    pieces: list[np.ndarray] = []
    if synthesizer is not None:
        with contextlib.suppress(Exception):  # her voice unavailable: the other voices still teach
            audio = await synthesizer.synthesize(text)
            pieces.append(resample(np.asarray(audio, dtype=np.float32), synthesizer.sample_rate, 16_000))
    if shutil.which("espeak-ng"):
        for voice in ESPEAK_VOICES:
            audio = await asyncio.to_thread(_espeak, text, voice)
            if audio is not None:
                pieces.append(audio)
    return pieces


YIELD_S = 0.25
"""How often learning looks again whether live hearing still needs the processor."""


async def learn_name(name: str, transcriber: Transcriber, synthesizer=None,
                     yield_to: Callable[[], bool] = lambda: False) -> NameHearing:
    """Say "<name>, what time is it?" in each voice, transcribe it, keep how the name was written.
    `yield_to()` is True while live hearing needs the processor (the user speaking, an utterance
    being transcribed, her answering): each sample waits for it, so the room is never heard late."""
    key = (name.lower(), hearing_id(transcriber))
    with _LEARNED_LOCK:
        known = _LEARNED.get(key)
    if known is not None:
        return known
    heard: list[str] = []
    pad = np.zeros(4_000, dtype=np.float32)
    for audio in await _samples(f"{name}, {LEARN_TAIL}?", synthesizer):
        while yield_to():
            await asyncio.sleep(YIELD_S)  # a state of other threads' making: nothing to wait on but time
        text = await transcriber.transcribe(np.concatenate([pad, audio, pad, pad]))
        heard.append(heard_prefix(text, LEARN_TAIL))
    hearing = NameHearing(name, tuple(heard), forms_of(name, heard))
    log.info("her name %r is heard as %s (%d of %d samples call her)", name, heard, hearing.caught, hearing.samples)
    with _LEARNED_LOCK:
        _LEARNED[key] = hearing
    return hearing


class NameLearning:
    """Learns each name once, in the background; `forms(names)` says what is known so far.

    Each listener in `on_heard` is called with the hearings of the names last started, once all
    of them are known (read from the cache, or learned), and again whenever that changes: a new
    personality's names, or a name learned anew."""

    def __init__(self, transcriber: Transcriber, synthesizer=None, cache_file: Path | None = None) -> None:
        self.transcriber = transcriber
        self.synthesizer = synthesizer
        self.cache_file = cache_file
        self.learned: dict[str, NameHearing] = {}
        self.yield_to: Callable[[], bool] = lambda: False
        """True while live hearing needs the processor (learn_name waits for it)."""
        self.on_heard: list[Callable[[tuple[NameHearing, ...]], None]] = []
        """Told the hearings of her current names once they are all known (see the class)."""
        self._tasks: dict[str, asyncio.Task[NameHearing]] = {}
        self._waiters = 0
        """Judges waiting for a name: learning then goes on even while live hearing is busy
        (the utterance being judged is what keeps it busy)."""
        self._wanted: tuple[str, ...] = ()
        self._told: tuple[NameHearing, ...] | None = None
        self._read_cache()

    def start(self, names: tuple[str, ...]) -> None:
        """Tell her hearing the names and learn those not yet known (a task each on the running loop)."""
        self._wanted = tuple(names)
        self.hint(names)
        for name in names:
            if name.lower() not in self.learned and name.lower() not in self._tasks:
                task = asyncio.get_running_loop().create_task(self._learn(name))
                self._tasks[name.lower()] = task
        self._tell()

    def hint(self, names: Sequence[str]) -> None:
        """Tell her hearing the names that may call her (none: while no name can). What was
        learned told and untold is kept apart: the spellings always match how she hears."""
        before = hearing_id(self.transcriber)
        hint_names(self.transcriber, names)
        if hearing_id(self.transcriber) != before:
            self.learned = {}
            self._told = None
            self._read_cache()

    def _tell(self) -> None:
        """The listeners hear the current names' hearings, when all are known and new to them
        (a name that could not be learned is left out: there is nothing to say of it)."""
        if any(name.lower() in self._tasks for name in self._wanted):
            return
        hearings = tuple(self.learned[n.lower()] for n in dict.fromkeys(self._wanted) if n.lower() in self.learned)
        if hearings == self._told:
            return
        self._told = hearings
        for listener in list(self.on_heard):
            try:
                listener(hearings)
            except Exception:
                log.exception("a listener to her names' hearing failed")

    async def wait(self, names: tuple[str, ...], timeout: float) -> None:
        """Until the names are learned (at most `timeout` seconds: an unknown spelling is no reason
        to keep a caller waiting long)."""
        self.start(names)
        pending = [self._tasks[n.lower()] for n in names if n.lower() in self._tasks]
        if pending:
            self._waiters += 1
            try:
                await asyncio.wait(pending, timeout=timeout)
            finally:
                self._waiters -= 1

    def pending(self, names: tuple[str, ...]) -> bool:
        """A name of `names` is still being learned."""
        return any(n.lower() in self._tasks for n in names)

    def forms(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The learned spellings of `names` (those still being learned add none yet)."""
        out: list[str] = []
        for name in names:
            hearing = self.learned.get(name.lower())
            out += [f for f in hearing.forms if f not in out] if hearing is not None else []
        return tuple(out)

    async def _learn(self, name: str) -> NameHearing:
        try:
            hearing = await learn_name(name, self.transcriber, self.synthesizer,
                                       lambda: self._waiters == 0 and self.yield_to())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not learn how %r is heard", name)
            hearing = NameHearing(name, (), ())
        else:
            self.learned[name.lower()] = hearing
            self._write_cache()
        finally:
            self._tasks.pop(name.lower(), None)
        self._tell()
        return hearing

    def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()

    # --- the cache on disk ----------------------------------------------------------------
    def _read_cache(self) -> None:
        if self.cache_file is None:
            return
        try:
            data = json.loads(self.cache_file.read_text(encoding="utf-8"))
            for entry in data.get(hearing_id(self.transcriber), []):
                hearing = NameHearing.from_dict(entry)
                self.learned[hearing.name.lower()] = hearing
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return  # none yet, or unreadable: learned again

    def _write_cache(self) -> None:
        if self.cache_file is None:
            return
        try:
            data = json.loads(self.cache_file.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        data[hearing_id(self.transcriber)] = [h.to_dict() for h in self.learned.values()]
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.cache_file.with_suffix(".tmp")
            temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(temporary, self.cache_file)
        except OSError:
            log.warning("could not keep how her names are heard in %s", self.cache_file)
