"""Does she know her user's voice? Equal error, false accepts and false rejects at the chosen
thresholds (companion.voice.voiceprint.decisions) and the curve, per set, printed as JSON.

A trial is one whole turn (2-6 s, cut at the speaker's pauses), as the window, a card's answer
or Only me would score it. Each speaker is enrolled from up to ENROL_S of their turns spread over
their recordings (several "calls"), keeping at least a third of their turns to score; "print"
trials score a turn against the enrolled print (KNOWN_THRESHOLD: Only me, a card's answer), also
with only the speakers who have the full ENROL_S ("print_30s") and from their first turns
("print_one_sitting"); "pair" trials one turn against another (PAIR_THRESHOLD: the caller's voice
against a follow-up's). Beside the raw cosine,
each set's equal error after adaptive s-norm against a cohort of the other speakers' turns on the
same channel (the two speakers of a trial left out of it).

Sets:
- human-same-recording: the two women of one phone call (pyannote.audio's sample, cut by its
  .rttm who-spoke-when, overlaps left out): impostor and user on one channel, her real case, but
  8 kHz and ~10 s each (the only such recording on the registries found so far).
- human-cross-recording: the speakers of bench/human_speech (each from its own recording, plus an
  ICSI meeting channel from more_sources.voices_only), impostors from other recordings: partly a
  test of microphones (issue 56), beside the same-channel sets.
- human-shared-room, human-shared-phone-line: the same people each through one simulated room
  (0.4 s reverberation and a fan) or one telephone line (8 kHz, mu-law): a shared last channel
  over their own.
- human-wideband, -equalised, -equalised-room: the speakers recorded wider than telephone
  band as they are, then each filtered to the set's average long-term spectrum (what one microphone
  colours alike), then also through the one room: how much of the cross-recording figure is the
  microphones (a pessimistic same channel: the filter takes a little of each voice's timbre too).
- human-sound-server (--sound-server): the same people's turns played into the private PulseAudio
  room the real-audio tests build (tests/helpers/open_speakers.Room: the user's mouth into her
  microphone, her speaker looped back as the echo), recorded from her microphone; recorded once
  and kept in the cache.
- synthetic: piper's Joe, hibari's heart and espeak-ng voices of distinct bases (the espeak
  variants of one base, en-us and en+m3, score like one voice and are kept apart from here);
  their turns are whole sentences, 1-3 s.

    .venv/bin/python bench/speaker_id.py [--manifest ~/.cache/companion-bench/human-speech/manifest.json]
        [--sound-server] [--window]

--window adds the follow-up window through the real pipeline (window()): the caller's own
follow-ups answered and other voices' lines reaching the brain, knowing voices off and on.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from human_speech.more_sources import voices_only  # noqa: E402

from companion.voice.sound.audio import read_wav, resample, write_wav  # noqa: E402
from companion.voice.voiceprint import KNOWN_THRESHOLD, PAIR_THRESHOLD, SpeakerEncoder  # noqa: E402

RATE = 16_000
TURN_S = (2.0, 4.0, 6.0)
"""A turn: at least 2 s, cut at the pause nearest 4 s after its start, never over 6 s."""
CALL_SHORTEST_S = 1.5
"""The phone call's women have ~10 s each: their whole turns from 1.5 s."""
ENROL_S = 30.0
COHORT_TOP = 20
"""Adaptive s-norm: each side normalised by the mean and spread of its nearest this many cohort scores."""
MANIFEST = Path.home() / ".cache/companion-bench/human-speech/manifest.json"
CACHE = Path.home() / ".cache/companion-bench/speaker-id"
LINES = ("Mira, what time is it in Tokyo right now?", "And what day of the week is it there?",
         "Can you pass me the salt, please?", "Is it my turn to cook tonight?", "Yes, run it.",
         "Remind me to call the dentist tomorrow morning.", "Please open the shopping list for me.",
         "I think we should leave at six tonight.")
FRAME = RATE // 50


def turns(audio: np.ndarray, shortest_s: float = TURN_S[0]) -> list[np.ndarray]:
    """The speaker's turns: speech cut at pauses (>= 0.2 s 30 dB under the loud frames), each
    trimmed to its speech, `shortest_s` to TURN_S[2] long."""
    frames = audio.size // FRAME
    if not frames:
        return []
    level = 10 * np.log10(np.mean(audio[:frames * FRAME].reshape(frames, FRAME) ** 2, axis=1) + 1e-10)
    speech = level > np.percentile(level, 95) - 30
    pauses, quiet = [], 0
    for i, loud in enumerate(speech):
        if not loud:
            quiet += 1
            continue
        if quiet >= 10:
            pauses.append(i - quiet // 2)
        quiet = 0
    spoken = np.flatnonzero(speech)
    found, at = [], int(spoken[0]) if spoken.size else frames
    shortest, target, longest = (int(s * 50) for s in (shortest_s, TURN_S[1], TURN_S[2]))
    while at < frames:
        near = [p for p in pauses if at + shortest <= p <= at + longest]
        end = min(near, key=lambda p: abs(p - at - target)) if near else min(at + longest, frames)
        inside = np.flatnonzero(speech[at:end])
        if inside.size and inside[-1] + 1 - inside[0] >= shortest:
            found.append(audio[(at + inside[0]) * FRAME:(at + inside[-1] + 1) * FRAME])
        later = spoken[spoken >= end]
        at = int(later[0]) if later.size else frames
    return found


def phone_call(manifest: dict) -> dict[str, list[np.ndarray]]:
    """Diane's and Sheila's whole turns of the phone call (overlaps cut out), in time order."""
    clip = next(c for c in manifest["clips"] if c["clip"] == "pyannote-phone-call")
    audio, rate = read_wav(Path(clip["wav"]))
    audio = resample(audio, rate, RATE)
    wheel = next(Path(clip["wav"]).parents[1].glob("downloads/pyannote_audio-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        rttm = archive.read("pyannote/audio/sample/sample.rttm").decode()
    said = [(float(f[3]), float(f[3]) + float(f[4]), f[7]) for f in (line.split() for line in rttm.splitlines()) if f]
    found: dict[str, list[np.ndarray]] = {}
    for start, end, who in said:
        pieces = [(start, end)]
        for other_start, other_end, other in said:
            if other != who:  # cut the other voice's time out of this turn
                pieces = [part for a, b in pieces for part in ((a, min(b, other_start)), (max(a, other_end), b))
                          if part[1] - part[0] > 0]
        for a, b in pieces:
            found.setdefault(who, []).extend(turns(audio[int(a * RATE):int(b * RATE)], CALL_SHORTEST_S))
    return found


def recordings(manifest: dict) -> dict[str, list[np.ndarray]]:
    """Every single-speaker clip's speaker (clips of one speaker joined) and the voices-only ones."""
    joined: dict[str, list[np.ndarray]] = {}
    for clip in manifest["clips"]:
        if len(clip["speakers"]) == 1:
            audio, rate = read_wav(Path(clip["wav"]))
            # The two ARCTIC clips are two people (0.12 against each other: a man, and slt, a woman).
            name = clip["clip"] if clip["clip"].startswith("arctic") else clip["speakers"][0]
            joined.setdefault(name, []).append(resample(audio, rate, RATE))
    for name, audio in voices_only(MANIFEST.parent / "downloads").items():
        joined[name] = [audio]
    return {name: [t for audio in clips for t in turns(audio)] for name, clips in joined.items()}


def phone_line(audio: np.ndarray) -> np.ndarray:
    """One shared telephone channel: 8 kHz, 300-3400 Hz, 8-bit mu-law."""
    narrow = resample(audio, RATE, 8_000)
    spectrum = np.fft.rfft(narrow)
    hz = np.fft.rfftfreq(narrow.size, 1 / 8_000)
    spectrum[(hz < 300) | (hz > 3400)] = 0
    narrow = np.fft.irfft(spectrum, narrow.size)
    narrow = narrow / (np.abs(narrow).max() + 1e-9) * 0.7
    coded = np.round(np.sign(narrow) * np.log1p(255 * np.abs(narrow)) / np.log1p(255) * 127) / 127
    return resample((np.sign(coded) * np.expm1(np.abs(coded) * np.log1p(255)) / 255).astype(np.float32), 8_000, RATE)


_ROOM = np.random.default_rng(56)
ROOM_RESPONSE = (_ROOM.standard_normal(int(0.4 * RATE)) * np.exp(-6.9 * np.arange(int(0.4 * RATE)) / (0.4 * RATE)))
ROOM_RESPONSE[0] = 8.0  # the direct path, ~10 dB over the reverberation
ROOM_RESPONSE = (ROOM_RESPONSE / np.linalg.norm(ROOM_RESPONSE)).astype(np.float32)


def room(audio: np.ndarray) -> np.ndarray:
    """One shared room and microphone: a 0.4 s reverberation, a fan's noise 25 dB down, the same
    for every speaker (the recordings' own channels stay under it)."""
    wet = np.convolve(audio, ROOM_RESPONSE)[: audio.size]
    noise = np.random.default_rng(7).standard_normal(audio.size).astype(np.float32)
    noise = np.convolve(noise, np.ones(8) / 8, mode="same")
    level = np.sqrt(np.mean(wet ** 2)) / (10 ** (25 / 20)) / (np.sqrt(np.mean(noise ** 2)) + 1e-12)
    return (wet + level * noise).astype(np.float32)


def spectrum(pieces: list[np.ndarray]) -> np.ndarray:
    """Long-term average power spectrum (257 bins to 8 kHz) of a speaker's turns."""
    audio = np.concatenate(pieces)
    frames = audio[: audio.size // 256 * 256].reshape(-1, 256)
    frames = np.concatenate([frames[:-1], frames[1:]], axis=1) * np.hanning(512)
    return np.mean(np.abs(np.fft.rfft(frames, axis=1)) ** 2, axis=0) + 1e-12


def wideband(pieces: list[np.ndarray]) -> bool:
    """Speech above 4.2 kHz (not an 8 kHz recording: the Asterisk prompts, the phone call)."""
    power = spectrum(pieces)
    return bool(power[135:240].sum() / power.sum() > 10 ** (-40 / 10))


def equalised(speakers: dict[str, list[np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """Each speaker's turns filtered so their long-term spectrum is the set's average (within
    ±20 dB, smoothed over ~300 Hz): what a microphone colours alike for everyone, as one device
    would, at the price of a little of each voice's own timbre (a pessimistic same channel)."""
    spectra = {name: spectrum(pieces) for name, pieces in speakers.items()}
    target = np.exp(np.mean([np.log(p) for p in spectra.values()], axis=0))
    found = {}
    for name, pieces in speakers.items():
        gain = np.convolve(0.5 * np.log(target / spectra[name]), np.ones(9) / 9, mode="same")
        gain = np.exp(np.clip(gain, -np.log(10), np.log(10)))
        found[name] = []
        for piece in pieces:
            bins = np.fft.rfftfreq(piece.size, 1 / RATE)
            shaped = np.fft.rfft(piece) * np.interp(bins, np.fft.rfftfreq(512, 1 / RATE), gain)
            found[name].append(np.fft.irfft(shaped, piece.size).astype(np.float32))
    return found


def sound_server(speakers: dict[str, list[np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """Every turn played into the private PulseAudio room of the real-audio tests (into the
    user's mouth, `room_user`) and cut back out of her microphone's recording (`room_mic`), in
    real time; the recording is kept in CACHE, keyed by what was played."""
    order = [(name, i) for name in speakers for i in range(len(speakers[name]))]
    gap, lead = np.zeros(int(0.4 * RATE), np.float32), np.zeros(RATE, np.float32)
    marker = (0.5 * np.sin(2 * np.pi * np.cumsum(np.linspace(300, 3000, RATE // 2)) / RATE)).astype(np.float32)
    pieces, spans, at = [lead, marker, gap], [], lead.size + marker.size + gap.size
    for name, i in order:
        pieces += [speakers[name][i], gap]
        spans.append((at, at + speakers[name][i].size))
        at += speakers[name][i].size + gap.size
    played = np.concatenate(pieces + [lead])
    key = hashlib.sha256(np.round(played * 32767).astype("<i2").tobytes()).hexdigest()[:12]
    heard_wav = CACHE / f"sound-server-{key}.wav"
    if not heard_wav.is_file():
        _record_through_room(played, heard_wav)
    heard, _ = read_wav(heard_wav)
    # One clock from play to record, but a loaded machine can drop audio on the way (parecord's
    # overruns): found on the leading sweep, then each turn found again near where it should be.
    offset = _lag(heard[: 6 * RATE], played[: lead.size + marker.size])
    found: dict[str, list[np.ndarray]] = {name: [] for name in speakers}
    for (name, i), (start, end) in zip(order, spans, strict=True):
        near = max(0, offset + start - 3 * RATE)
        moved = near + _lag(heard[near:offset + end + 3 * RATE], played[start:end]) - (offset + start)
        piece = heard[offset + moved + start:offset + moved + end]
        same = float(piece @ played[start:end]) / (np.linalg.norm(piece) * np.linalg.norm(played[start:end]) + 1e-9)
        if piece.size < end - start or same < 0.9:  # audio lost inside the turn: left out
            SOUND_SERVER_LOST.append(f"{name} #{i}")
            continue
        if moved:
            SOUND_SERVER_MOVED_MS.append(round(moved / RATE * 1000))
        offset += moved
        found[name].append(piece)
    return found


SOUND_SERVER_MOVED_MS: list[int] = []
"""Turns found away from where the one before said they would be: audio lost between them."""
SOUND_SERVER_LOST: list[str] = []
"""Turns the sound server lost part of (not the played audio where it should be): left out."""


def _lag(heard: np.ndarray, reference: np.ndarray) -> int:
    """Where `reference` starts in `heard` (cross-correlation)."""
    size = heard.size + reference.size
    lag = np.fft.irfft(np.fft.rfft(heard, size) * np.conj(np.fft.rfft(reference, size)), size)
    return int(np.argmax(lag[: max(1, heard.size - reference.size + 1)]))


def _record_through_room(played: np.ndarray, into: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))
    from audio_env import PrivatePulseAudio, recorded_s, wait_until_recorded
    from open_speakers import Room, read_witness

    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        pulse = PrivatePulseAudio(folder / "pulse").start()
        room_ = Room(pulse).start()
        try:
            write_wav(folder / "played.wav", played, RATE)
            witness = folder / "witness.wav"
            recorder = room_.record(witness)
            wait_until_recorded(witness, 0.5, channels=3)
            started = recorded_s(witness, channels=3)
            room_.say(folder / "played.wav").wait()
            wait_until_recorded(witness, started + played.size / RATE, channels=3, timeout_s=60)
            recorder.send_signal(signal.SIGINT)
            recorder.wait(10)
            _, _, microphone = read_witness(witness)
            write_wav(into, microphone, RATE)
        finally:
            room_.stop()
            pulse.stop()


def synthetic(folder: Path) -> dict[str, list[np.ndarray]]:
    from companion.voice.models.files import resolve_voice
    from companion.voice.speaking.local import local_synthesizer

    found = {}
    for name in ("", "hibari/heart"):
        synth = local_synthesizer(resolve_voice(name, folder), steady=True)
        synth.load()
        found[name or "piper-joe"] = [resample(synth.synthesize_sync(line), synth.sample_rate, RATE) for line in LINES]
    for voice in ("en-us", "en-us+f3", "en+m7", "en+f2"):
        found[f"espeak-{voice}"] = []
        for line in LINES:
            path = folder / "espeak.wav"
            subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), line], check=True, timeout=30)
            audio, rate = read_wav(path)
            found[f"espeak-{voice}"].append(resample(audio, rate, RATE))
    return found


def equal_error(genuine: np.ndarray, impostor: np.ndarray) -> tuple[float, float]:
    """(equal error rate, the threshold where false accepts and false rejects meet)."""
    thresholds = np.unique(np.concatenate([genuine, impostor]))
    far = np.array([(impostor >= t).mean() for t in thresholds])
    frr = np.array([(genuine < t).mean() for t in thresholds])
    i = int(np.argmin(np.abs(far - frr)))
    return round(float(far[i] + frr[i]) / 2, 4), round(float(thresholds[i]), 3)


def sweep(genuine: np.ndarray, impostor: np.ndarray) -> dict[str, list[float]]:
    """The curve: false accepts and false rejects at thresholds 0.50 to 0.90."""
    return {f"{t:.2f}": [round(float((impostor >= t).mean()), 3), round(float((genuine < t).mean()), 3)]
            for t in np.arange(0.50, 0.91, 0.04)}


def enrolment(seconds: list[float], *, spread: bool) -> list[int]:
    """Which of a speaker's turns enrol them: up to ENROL_S of speech, a third of the turns (at
    least one) kept to score. `spread`: turns spread over all their recordings, as calls on
    several days would be; else the first ones (one sitting)."""
    count = len(seconds)
    if count < 2:
        return []
    keep = max(1, count // 3)
    order = list(range(count))
    if spread:  # every k-th turn first, then the rest: spread over the whole recording
        needed = max(1, int(np.ceil(ENROL_S / (sum(seconds) / count))))
        step = max(1, count // needed)
        order = order[::step] + [i for i in order if i % step]
    chosen: list[int] = []
    for i in order[:count - keep]:
        if sum(seconds[j] for j in chosen) >= ENROL_S:
            break
        chosen.append(i)
    return sorted(chosen)


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / (np.linalg.norm(vector) + 1e-12)


def snorm(score: float, left: np.ndarray, right: np.ndarray, cohort: np.ndarray) -> float:
    """Adaptive s-norm of `score` between `left` and `right` against `cohort` (rows: embeddings)."""
    total = 0.0
    for side in (left, right):
        near = np.sort(cohort @ side)[-COHORT_TOP:]
        total += (score - near.mean()) / (near.std() + 1e-6)
    return total / 2


KINDS = ("print", "print_30s", "print_one_sitting", "pair")
"""print: every speaker with a turn to score, enrolled from up to ENROL_S spread over their
recordings; print_30s: only those with the full ENROL_S (the issue's 30-60 s enrolment);
print_one_sitting: enrolled from their first turns instead; pair: turn against turn."""


def scored(speakers: dict[str, list[np.ndarray]], impostors_of, *, cohort_extra: dict | None = None) -> dict:
    """Print and pair trials of every speaker with a turn to score, against `impostors_of(name)`;
    raw cosines at the chosen thresholds, and equal error after s-norm against the other speakers'
    turns (and `cohort_extra`'s), the trial's two speakers left out."""
    embed = {name: [e for e in map(ENCODER.embed_sync, pieces) if e is not None] for name, pieces in speakers.items()}
    wider = impostors_of

    def impostors_of(name: str) -> list[str]:  # noqa: F811 (only those of this set)
        return [other for other in wider(name) if other in embed]

    seconds = {name: [p.size / RATE for p in pieces] for name, pieces in speakers.items()}
    pool = {**{f"cohort:{n}": [ENCODER.embed_sync(p) for p in ps] for n, ps in (cohort_extra or {}).items()}, **embed}

    def cohort(*leave: str) -> np.ndarray:
        return np.array([e for n, es in pool.items() for e in es if e is not None and n not in leave])

    trials: dict[str, tuple[list, list, list, list]] = {kind: ([], [], [], []) for kind in KINDS}
    enrolled = {}
    for name, mine in embed.items():
        for kind, spread in (("print", True), ("print_30s", True), ("print_one_sitting", False)):
            chosen = enrolment(seconds[name], spread=spread)
            if not chosen or len(chosen) >= len(mine):
                continue
            if kind == "print_30s" and sum(seconds[name][i] for i in chosen) < ENROL_S:
                continue
            centroid = unit(np.mean([mine[i] for i in chosen], axis=0))
            if kind == "print":
                rivals = sorted((float(centroid @ e), other) for other in impostors_of(name) for e in embed[other])
                own = [float(centroid @ e) for i, e in enumerate(mine) if i not in chosen]
                enrolled[name] = {"enrol_turns": len(chosen), "enrol_s": round(sum(seconds[name][i] for i in chosen), 1),
                                  "scored_turns": len(own), "own_min_mean": [round(min(own), 2), round(float(np.mean(own)), 2)],
                                  "nearest_other": [round(rivals[-1][0], 2), rivals[-1][1]] if rivals else None}
            genuine, impostor, genuine_n, impostor_n = trials[kind]
            same = cohort(name)
            for e in (e for i, e in enumerate(mine) if i not in chosen):
                genuine.append(float(centroid @ e))
                genuine_n.append(snorm(genuine[-1], centroid, e, same))
            for other in impostors_of(name):
                rest = cohort(name, other)
                for e in embed[other]:
                    impostor.append(float(centroid @ e))
                    impostor_n.append(snorm(impostor[-1], centroid, e, rest))
    names = list(embed)
    genuine, impostor, genuine_n, impostor_n = trials["pair"]
    for name in names:
        same = cohort(name)
        for a, b in itertools.combinations(embed[name], 2):
            genuine.append(float(a @ b))
            genuine_n.append(snorm(genuine[-1], a, b, same))
    for first, second in itertools.combinations(names, 2):
        if second not in impostors_of(first):
            continue
        rest = cohort(first, second)
        for a in embed[first]:
            for b in embed[second]:
                impostor.append(float(a @ b))
                impostor_n.append(snorm(impostor[-1], a, b, rest))
    result = {"speakers": len(speakers), "turn_s": [round(min(s for ss in seconds.values() for s in ss), 1),
                                                    round(float(np.median([s for ss in seconds.values() for s in ss])), 1),
                                                    round(max(s for ss in seconds.values() for s in ss), 1)],
              "enrolled": enrolled}
    for kind in KINDS:
        chosen = PAIR_THRESHOLD if kind == "pair" else KNOWN_THRESHOLD
        genuine, impostor, genuine_n, impostor_n = map(np.array, trials[kind])
        if not genuine.size or not impostor.size:
            continue
        eer, at = equal_error(genuine, impostor)
        result[kind] = {
            "trials": {"genuine": int(genuine.size), "impostor": int(impostor.size)},
            "equal_error": eer, "equal_error_threshold": at, "chosen_threshold": chosen,
            "false_accepts": round(float((impostor >= chosen).mean()), 4),
            "false_rejects": round(float((genuine < chosen).mean()), 4),
            "genuine_mean": round(float(genuine.mean()), 3), "impostor_mean": round(float(impostor.mean()), 3),
            "impostor_max": round(float(impostor.max()), 3), "genuine_min": round(float(genuine.min()), 3),
            "equal_error_s_norm": equal_error(genuine_n, impostor_n)[0] if len(cohort()) > COHORT_TOP else None,
            "curve_false_accepts_false_rejects": sweep(genuine, impostor),
        }
    return result


ENCODER = SpeakerEncoder()

FOLLOW_UPS = ("And what day of the week is it?", "Can you set a timer for ten minutes?",
              "What is the weather like tomorrow?", "Is it going to rain this evening?")
"""Lines that read as meant for her inside the window (a question, an opener): only the voice can refuse them."""


async def window(manifest: dict | None, folder: Path) -> dict:
    """Through the real pipeline from files (VAD, Whisper tiny.en, the runtime, a scripted brain
    on loopback): a caller asks Mira something, then within the follow-up window either the
    caller or someone else says a line that reads as meant for her. With knowing voices off
    and on: the caller's own follow-ups answered, and other voices' lines that reached the brain."""
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))
    from brain_harness import PLAIN_PERSONALITY, make_config
    from scripted_brain import ScriptedBrain

    from companion.config import VoiceSettings
    from companion.events import EventBus
    from companion.runtime import Companion
    from companion.voice.brain_port import CompanionBrain
    from companion.voice.hearing.stt import WhisperTranscriber
    from companion.voice.models.files import resolve_hearing_model, resolve_voice
    from companion.voice.session import VoiceSession
    from companion.voice.sound.audio import WavSink, WavSource, write_wav
    from companion.voice.speaking.local import local_synthesizer

    synths = {}
    for name in ("", "hibari/heart"):
        synths[name or "piper-joe"] = local_synthesizer(resolve_voice(name, folder), steady=True)
        synths[name or "piper-joe"].load()
    hearing = WhisperTranscriber(resolve_hearing_model("", folder / "models"))
    hearing.load()

    def say(voice: str, text: str) -> np.ndarray:
        if voice in synths:
            return resample(synths[voice].synthesize_sync(text), synths[voice].sample_rate, RATE)
        path = folder / "espeak.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, timeout=30)
        audio, rate = read_wav(path)
        return resample(audio, rate, RATE)

    others: list[tuple[str, np.ndarray]] = [("espeak-en-us+f3", say("en-us+f3", FOLLOW_UPS[1])),
                                            ("espeak-en-us", say("en-us", FOLLOW_UPS[2]))]
    for clip in (manifest or {}).get("clips", []):
        if clip["clip"] in ("arctic-a0007", "cmu-goforward"):  # "And you always…", "Go forward…": openers
            audio, rate = read_wav(Path(clip["wav"]))
            others.append((clip["clip"], resample(audio, rate, RATE)))
    trials = []  # (caller, who follows, follow-up audio, own)
    for caller in synths:
        trials += [(caller, caller, say(caller, line), True) for line in FOLLOW_UPS]
        trials += [(caller, other, say(other, FOLLOW_UPS[0]), False) for other in synths if other != caller]
        trials += [(caller, name, audio, False) for name, audio in others]
    personality = folder / "mira.md"
    personality.write_text(PLAIN_PERSONALITY.format(patterns="").replace("name: Testa", "name: Mira"))
    result = {}
    for know in ("no", "yes"):
        own, own_answered, strangers, strangers_in, let_in = 0, 0, 0, 0, []
        for i, (caller, follower, audio, is_own) in enumerate(trials):
            wav = folder / "window.wav"
            pieces = [np.zeros(8_000, np.float32), say(caller, "Mira, what time is it?"), np.zeros(24_000, np.float32),
                      audio, np.zeros(24_000, np.float32)]
            write_wav(wav, np.concatenate(pieces), RATE)
            with ScriptedBrain() as brain:
                brain.push({"text": "It's ten past nine."}, {"text": "Sure."})
                run_folder = folder / f"{know}-{i}"
                run_folder.mkdir()
                companion = Companion(make_config(run_folder, brain.url, personality=personality), EventBus())
                await companion.start()
                source = WavSource(wav, realtime=False)
                sink = WavSink(lambda source=source: source.position_s, rate=synths["piper-joe"].sample_rate)
                session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                                       transcriber=hearing, synthesizer=synths["piper-joe"],
                                       voice=VoiceSettings(listening="called", know_voices=know))
                try:
                    await session.run()
                finally:
                    await session.close()
                    await companion.close()
                turns = sum(v.turn for v in session.loop.calling.verdicts)
            if is_own:
                own, own_answered = own + 1, own_answered + (turns >= 2)
            else:
                strangers, strangers_in = strangers + 1, strangers_in + (turns >= 2)
                if turns >= 2:
                    let_in.append(f"{follower} after {caller}")
        result[f"know_voices={know}"] = {"own_follow_ups_answered": [own_answered, own],
                                         "other_voices_reaching_the_brain": [strangers_in, strangers],
                                         "let_in": let_in}
    return result


def cost(pieces: list[np.ndarray]) -> dict:
    """What embedding one turn costs: processor time of the calling thread (onnxruntime runs on
    it with one thread), and wall time beside the load average."""
    cpu, wall = [], []
    for piece in pieces:
        started = time.thread_time()
        ENCODER.embed_sync(piece)
        cpu.append((time.thread_time() - started) * 1000)
        wall.append(ENCODER.last_ms)
    return {"turns": len(pieces), "turn_s_median": round(float(np.median([p.size / RATE for p in pieces])), 1),
            "cpu_ms_median": round(float(np.median(cpu)), 1), "cpu_ms_max": round(max(cpu), 1),
            "wall_ms_median": round(float(np.median(wall)), 1), "load_average": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--sound-server", action="store_true",
                        help="also every turn through the private PulseAudio room (real time, ~9 min the first time)")
    parser.add_argument("--window", action="store_true",
                        help="also the follow-up window through the real pipeline (a few minutes)")
    args = parser.parse_args()
    manifest = json.loads(args.manifest.read_text()) if args.manifest.is_file() else None
    report: dict = {"turn_s": list(TURN_S), "enrol_s": ENROL_S, "cohort_top": COHORT_TOP}
    started = time.perf_counter()
    ENCODER.load()
    if manifest is None:
        report["human"] = f"no manifest at {args.manifest}: run bench/human_speech/fetch.py"
    else:
        call = phone_call(manifest)
        people = {**recordings(manifest), **call}
        report["cost_per_turn"] = cost([p for ps in people.values() for p in ps][:40])

        def others(name: str) -> list[str]:
            return [n for n in people if n != name and not (name in call and n in call)]

        line = {name: [phone_line(piece) for piece in pieces] for name, pieces in people.items() if name not in call}
        report["human-same-recording"] = scored(call, lambda name: [n for n in call if n != name], cohort_extra=line)
        report["human-cross-recording"] = scored(people, others)
        for shared, channel in (("human-shared-room", room), ("human-shared-phone-line", phone_line)):
            heard = {name: [channel(piece) for piece in pieces] for name, pieces in people.items()}
            report[shared] = scored(heard, others)
        wide = {name: pieces for name, pieces in people.items() if pieces and wideband(pieces)}
        report["human-wideband"] = scored(wide, others)
        report["human-wideband-equalised"] = scored(equalised(wide), others)
        report["human-wideband-equalised-room"] = scored({n: [room(p) for p in ps] for n, ps in equalised(wide).items()},
                                                         others)
        if args.sound_server:
            report["human-sound-server"] = scored(sound_server(people), others)
            report["human-sound-server"].update(turns_moved_ms=SOUND_SERVER_MOVED_MS, turns_lost=SOUND_SERVER_LOST)
    with tempfile.TemporaryDirectory() as folder:
        voices = synthetic(Path(folder))
    report["synthetic"] = scored(voices, lambda name: [n for n in voices if n != name])
    if args.window:
        import asyncio

        with tempfile.TemporaryDirectory() as folder:
            report["follow_up_window"] = asyncio.run(window(manifest, Path(folder)))
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
