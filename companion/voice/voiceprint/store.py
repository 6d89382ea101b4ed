"""Voiceprints in her data folder: `voiceprints.json`, 256 numbers per remembered utterance, no audio.

Each print has a name, when it was made and last grew, and the embeddings of the utterances
it was built from (newest kept, at most MAX_SEGMENTS). Written atomically; a damaged file is
set aside (`.damaged`) and she starts with none rather than failing to start. Her voice session
and the Settings window each hold a store on the one file: each reads it again when the other
wrote it (`current()`, and before every change), so neither undoes the other's prints.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from companion.paths import atomic_write_text

__all__ = ["FILE_NAME", "MAX_SEGMENTS", "Segment", "Voiceprint", "VoiceprintStore"]

log = logging.getLogger(__name__)

FILE_NAME = "voiceprints.json"
MAX_SEGMENTS = 40
"""A print keeps the newest this many utterances: it follows a voice that changes (a cold,
another microphone) without growing for ever."""


@dataclass(frozen=True)
class Segment:
    """One utterance's embedding (unit length), how long it was and when it was heard (epoch s)."""

    embedding: tuple[float, ...]
    seconds: float
    at: float


@dataclass(frozen=True)
class Voiceprint:
    name: str
    made: float
    """When it was made (epoch seconds)."""
    updated: float
    segments: tuple[Segment, ...] = ()
    source: str = "calls"
    """"calls" (learned from her being called) or "reading" (read aloud in Settings)."""

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.segments)

    def centroid(self) -> np.ndarray | None:
        """The print's voice: the mean of its embeddings, unit length (None without any)."""
        if not self.segments:
            return None
        mean = np.mean([s.embedding for s in self.segments], axis=0)
        return (mean / (np.linalg.norm(mean) + 1e-12)).astype(np.float32)

    def with_segment(self, segment: Segment) -> Voiceprint:
        return replace(self, segments=(*self.segments, segment)[-MAX_SEGMENTS:], updated=segment.at)


@dataclass
class VoiceprintStore:
    """The prints on disk, read once, written on every change."""

    folder: Path
    prints: dict[str, Voiceprint] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        self._seen: int | None = None
        self.prints = self._read()

    @property
    def path(self) -> Path:
        return self.folder / FILE_NAME

    def current(self) -> dict[str, Voiceprint]:
        """The prints, read again if the file changed since this store last read or wrote it."""
        if self._stamp() != self._seen:
            self.prints = self._read()
        return self.prints

    def names(self) -> list[str]:
        return sorted(self.current())

    def get(self, name: str) -> Voiceprint | None:
        return self.current().get(name)

    def add(self, name: str, embedding: np.ndarray, seconds: float, *, source: str = "calls",
            at: float | None = None) -> Voiceprint:
        """One more utterance of `name`'s voice (a new print when `name` has none)."""
        at = time.time() if at is None else at
        voiceprint = self.current().get(name) or Voiceprint(name=name, made=at, updated=at, source=source)
        self.prints[name] = voiceprint.with_segment(_segment(embedding, seconds, at))
        self._write()
        return self.prints[name]

    def replace(self, name: str, utterances: list[tuple[np.ndarray, float]], *, source: str = "reading",
                at: float | None = None) -> Voiceprint:
        """A new print for `name` from `utterances` ((embedding, seconds) each), in place of any before."""
        at = time.time() if at is None else at
        self.current()
        self.prints[name] = Voiceprint(name=name, made=at, updated=at, source=source, segments=tuple(
            _segment(embedding, seconds, at) for embedding, seconds in utterances)[-MAX_SEGMENTS:])
        self._write()
        return self.prints[name]

    def delete(self, name: str) -> bool:
        """Forget `name`'s voice; True when there was one."""
        if self.current().pop(name, None) is None:
            return False
        self._write()
        return True

    def listing(self) -> list[tuple[str, str, float, int]]:
        """(name, when made as local "YYYY-MM-DD HH:MM", seconds of speech, utterances) for Settings."""
        prints = self.current()
        return [(p.name, time.strftime("%Y-%m-%d %H:%M", time.localtime(p.made)), round(p.seconds, 1), len(p.segments))
                for p in (prints[n] for n in sorted(prints))]

    def _stamp(self) -> int | None:
        try:
            return self.path.stat().st_mtime_ns
        except OSError:
            return None

    def _read(self) -> dict[str, Voiceprint]:
        self._seen = self._stamp()
        if not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return {p["name"]: Voiceprint(
                name=p["name"], made=float(p["made"]), updated=float(p["updated"]), source=p.get("source", "calls"),
                segments=tuple(Segment(tuple(map(float, s["embedding"])), float(s["seconds"]), float(s["at"]))
                               for s in p["segments"])) for p in data["voiceprints"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            damaged = self.path.with_suffix(".damaged")
            log.warning("the voiceprints file is unreadable (%s): set aside as %s", exc, damaged.name)
            self.path.replace(damaged)
            self._seen = None
            return {}

    def _write(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"version": 1, "voiceprints": [
            {"name": p.name, "made": p.made, "updated": p.updated, "source": p.source,
             "segments": [{"embedding": list(s.embedding), "seconds": s.seconds, "at": s.at} for s in p.segments]}
            for p in (self.prints[n] for n in sorted(self.prints))]}
        atomic_write_text(self.path, json.dumps(data))
        self._seen = self._stamp()


def _segment(embedding: np.ndarray, seconds: float, at: float) -> Segment:
    return Segment(tuple(round(float(x), 6) for x in np.asarray(embedding).reshape(-1)), round(seconds, 2), at)
