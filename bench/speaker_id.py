"""Does she know her user's voice? Equal error, false accepts and false rejects per set, and the
chosen thresholds (companion.voice.voiceprint.decisions), printed as JSON.

Sets (every score is the real encoder's cosine; a trial is one utterance of 1-3 s):
- human-same-recording: the two women of one phone call (pyannote.audio's sample, cut by its
  .rttm who-spoke-when, overlaps left out): impostor and user on one channel, her real case.
- human-cross-recording: the 7 speakers of bench/human_speech (each from its own recording),
  impostors from other recordings: partly a test of microphones (issue 56), beside the above.
- human-shared-room, human-shared-phone-line: the same people each through one simulated room
  (reverberation and a fan) or one telephone line (8 kHz, mu-law): a shared last channel over
  their own (what a private PulseAudio adds is nearly nothing: its null sink is transparent).
- synthetic: piper's Joe, hibari's heart and espeak-ng voices of distinct bases (the espeak
  variants of one base, en-us and en+m3, score like one voice and are kept apart from here).
Each speaker with enough speech is enrolled from ENROL utterances (as her calls would, the
first ones) and scored on the rest; "print" trials score an utterance against the enrolled
print (KNOWN_THRESHOLD: Only me, a card's answer), "pair" trials one utterance against another
(PAIR_THRESHOLD: the caller's voice against a follow-up's).

    .venv/bin/python bench/speaker_id.py [--manifest ~/.cache/companion-bench/human-speech/manifest.json] [--window]

--window adds the follow-up window through the real pipeline (window()): the caller's own
follow-ups answered and other voices' lines reaching the brain, knowing voices off and on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from companion.voice.sound.audio import read_wav, resample  # noqa: E402
from companion.voice.voiceprint import KNOWN_THRESHOLD, PAIR_THRESHOLD, SpeakerEncoder  # noqa: E402

RATE = 16_000
ENROL = 3
CALL_CHUNK_S = 1.6
"""The phone call's women have ~10 s each: shorter utterances, so some are left to score after enrolment."""
CHUNK_S = (1.0, 3.0)
MANIFEST = Path.home() / ".cache/companion-bench/human-speech/manifest.json"
LINES = ("Mira, what time is it in Tokyo right now?", "And what day of the week is it there?",
         "Can you pass me the salt, please?", "Is it my turn to cook tonight?", "Yes, run it.",
         "Remind me to call the dentist tomorrow morning.", "Please open the shopping list for me.",
         "I think we should leave at six tonight.")


def chunks(audio: np.ndarray, longest_s: float = CHUNK_S[1]) -> list[np.ndarray]:
    """Pieces of `longest_s` seconds (a last piece shorter than CHUNK_S[0] is dropped)."""
    size = int(longest_s * RATE)
    return [audio[i:i + size] for i in range(0, audio.size, size) if audio[i:i + size].size >= CHUNK_S[0] * RATE]


def phone_call(manifest: dict) -> dict[str, list[np.ndarray]]:
    """Diane's and Sheila's turns of the phone call, overlaps left out, in time order."""
    clip = next(c for c in manifest["clips"] if c["clip"] == "pyannote-phone-call")
    audio, rate = read_wav(Path(clip["wav"]))
    audio = resample(audio, rate, RATE)
    wheel = next(Path(clip["wav"]).parents[1].glob("downloads/pyannote_audio-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        rttm = archive.read("pyannote/audio/sample/sample.rttm").decode()
    turns = [(float(f[3]), float(f[3]) + float(f[4]), f[7]) for f in (line.split() for line in rttm.splitlines()) if f]
    found: dict[str, list[np.ndarray]] = {}
    for start, end, who in turns:
        for other_start, other_end, other in turns:
            if other != who and other_start < end and other_end > start:  # cut the overlap away
                if other_start <= start:
                    start = max(start, other_end)
                else:
                    end = min(end, other_start)
        if end - start >= CHUNK_S[0]:
            found.setdefault(who, []).extend(chunks(audio[int(start * RATE):int(end * RATE)], CALL_CHUNK_S))
    return found


def recordings(manifest: dict) -> dict[str, list[np.ndarray]]:
    """Every single-speaker clip's speaker, plus the two of the phone call."""
    found = {}
    for clip in manifest["clips"]:
        if len(clip["speakers"]) != 1:
            continue
        audio, rate = read_wav(Path(clip["wav"]))
        found[clip["speakers"][0]] = chunks(resample(audio, rate, RATE))
    return found


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
    """False accepts and false rejects at thresholds 0.50 to 0.80 (for choosing one)."""
    return {f"{t:.2f}": [round(float((impostor >= t).mean()), 3), round(float((genuine < t).mean()), 3)]
            for t in np.arange(0.50, 0.81, 0.02)}


def scored(speakers: dict[str, list[np.ndarray]], enrolled: set[str], impostors_of) -> dict:
    """Print and pair trials: each enrolled speaker against their own rest and `impostors_of(name)`."""
    embed = {name: [e for e in map(ENCODER.embed_sync, pieces) if e is not None] for name, pieces in speakers.items()}
    print_genuine, print_impostor, pair_genuine, pair_impostor = [], [], [], []
    for name in enrolled:
        mine = embed[name]
        if len(mine) <= ENROL:
            continue
        centroid = np.mean(mine[:ENROL], axis=0)
        centroid /= np.linalg.norm(centroid)
        print_genuine += [float(centroid @ e) for e in mine[ENROL:]]
        pair_genuine += [float(a @ b) for a, b in itertools.combinations(mine, 2)]
        for other in impostors_of(name):
            print_impostor += [float(centroid @ e) for e in embed[other]]
            pair_impostor += [float(a @ b) for a in mine for b in embed[other]]
    result = {"speakers": len(speakers), "enrolled": sorted(n for n in enrolled if len(embed[n]) > ENROL)}
    for kind, genuine, impostor, chosen in (("print", print_genuine, print_impostor, KNOWN_THRESHOLD),
                                            ("pair", pair_genuine, pair_impostor, PAIR_THRESHOLD)):
        genuine, impostor = np.array(genuine), np.array(impostor)
        if not genuine.size or not impostor.size:
            continue
        eer, at = equal_error(genuine, impostor)
        result[kind] = {
            "trials": {"genuine": int(genuine.size), "impostor": int(impostor.size)},
            "equal_error": eer, "equal_error_threshold": at, "chosen_threshold": chosen,
            "false_accepts": round(float((impostor >= chosen).mean()), 4),
            "false_rejects": round(float((genuine < chosen).mean()), 4),
            "genuine_mean": round(float(genuine.mean()), 3), "impostor_mean": round(float(impostor.mean()), 3),
            "sweep_false_accepts_false_rejects": sweep(genuine, impostor),
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--window", action="store_true",
                        help="also the follow-up window through the real pipeline (a few minutes)")
    args = parser.parse_args()
    manifest = json.loads(args.manifest.read_text()) if args.manifest.is_file() else None
    report: dict = {"enrol_utterances": ENROL, "utterance_s": list(CHUNK_S)}
    started = time.perf_counter()
    ENCODER.load()
    costs = []
    probe = np.random.default_rng(0).standard_normal(3 * RATE).astype(np.float32) * 0.1
    for _ in range(10):
        ENCODER.embed_sync(probe)
        costs.append(ENCODER.last_ms)
    report["ms_per_3s_utterance"] = {"median": round(float(np.median(costs)), 1), "max": round(max(costs), 1)}
    if manifest is None:
        report["human"] = f"no manifest at {args.manifest}: run bench/human_speech/fetch.py"
    else:
        call = phone_call(manifest)
        report["human-same-recording"] = scored(call, set(call), lambda name: [n for n in call if n != name])
        people = {**recordings(manifest), **call}

        def others(name: str) -> list[str]:
            return [n for n in people if n != name and not (name in call and n in call)]

        report["human-cross-recording"] = scored(people, set(people), others)
        for shared, channel in (("human-shared-room", room), ("human-shared-phone-line", phone_line)):
            heard = {name: [channel(piece) for piece in pieces] for name, pieces in people.items()}
            report[shared] = scored(heard, set(heard), others)
    with tempfile.TemporaryDirectory() as folder:
        voices = synthetic(Path(folder))
    report["synthetic"] = scored(voices, set(voices), lambda name: [n for n in voices if n != name])
    if args.window:
        import asyncio

        with tempfile.TemporaryDirectory() as folder:
            report["follow_up_window"] = asyncio.run(window(manifest, Path(folder)))
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
