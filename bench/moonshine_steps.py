"""Moonshine's cost per token: the wheel's .ort files as shipped against their ONNX translations.

One espeak question is encoded, then greedily decoded one token per decoder run (the plain
loop, no draft) by three decoders on one thread, in turn, round after round so all three see
the same load: the shipped `decoder_model_merged.ort` (onnxruntime cannot optimise an ORT-format
model at load, so its int8 weights are dequantized on every run), the translation with the
weights folded to float, and the translation the app uses (int8 matrix products). Prints one
JSON object: ms per cached decoder step (median), the first step, the encoder, the tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from companion.voice.hearing.moonshine import END, LAYERS, START  # noqa: E402
from companion.voice.hearing.ort_format import ort_to_onnx  # noqa: E402
from companion.voice.models.files import MOONSHINE, resolve_hearing_model  # noqa: E402
from companion.voice.sound.audio import read_wav, resample  # noqa: E402

QUESTION = "Could you remind me to call my sister tomorrow evening?"


def session(model, threads: int = 1):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def decode(decoder, hidden: np.ndarray) -> tuple[list[int], list[float]]:
    """Greedy, one token per run; returns the tokens and each run's ms."""
    feeds = {"encoder_hidden_states": hidden}
    empty = np.zeros((1, 8, 0, 52), dtype=np.float32)
    for layer in range(LAYERS):
        for part in ("decoder", "encoder"):
            for kind in ("key", "value"):
                feeds[f"past_key_values.{layer}.{part}.{kind}"] = empty
    names = [output.name for output in decoder.get_outputs()]
    tokens, times = [START], []
    for step in range(40):
        feeds["input_ids"] = np.array([[tokens[-1]]], dtype=np.int64)
        feeds["use_cache_branch"] = np.array([step > 0])
        started = time.perf_counter()
        outputs = decoder.run(None, feeds)
        times.append((time.perf_counter() - started) * 1000)
        tokens.append(int(np.argmax(outputs[0][0, -1, :32_000])))
        if tokens[-1] == END:
            break
        for name, value in zip(names[1:], outputs[1:], strict=True):
            if step == 0 or ".decoder." in name:
                feeds[name.replace("present", "past_key_values")] = value
    return tokens, times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folder = resolve_hearing_model(MOONSHINE, Path(tempfile.gettempdir())).path
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "q.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(wav), QUESTION], check=True, timeout=30)
        audio, rate = read_wav(wav)
    audio = resample(audio, rate, 16_000).astype(np.float32)[None]
    encoders = {"shipped_ort": session(str(folder / "encoder_model.ort")),
                "translated_float": session(ort_to_onnx(folder / "encoder_model.ort", int8=False).SerializeToString())}
    decoders = {
        "shipped_ort": session(str(folder / "decoder_model_merged.ort")),
        "translated_float": session(ort_to_onnx(folder / "decoder_model_merged.ort", int8=False).SerializeToString()),
        "translated_int8": session(ort_to_onnx(folder / "decoder_model_merged.ort", int8=True).SerializeToString()),
    }
    hidden = encoders["translated_float"].run(None, {"input_values": audio})[0]
    steps = {name: [] for name in decoders}
    first = {name: [] for name in decoders}
    encoder_ms = {name: [] for name in encoders}
    tokens = {}
    load = [round(os.getloadavg()[0], 2)]
    for _round in range(args.rounds + 1):  # the first round warms up and is not counted
        for name, encoder in encoders.items():
            started = time.perf_counter()
            encoder.run(None, {"input_values": audio})
            encoder_ms[name].append((time.perf_counter() - started) * 1000)
        for name, decoder in decoders.items():
            tokens[name], times = decode(decoder, hidden)
            if _round:
                first[name].append(times[0])
                steps[name] += times[1:]
    load.append(round(os.getloadavg()[0], 2))
    print(json.dumps({
        "load_average_1min": load, "threads": 1, "rounds": args.rounds,
        "tokens": {name: len(t) - 2 for name, t in tokens.items()},
        "same_tokens": len({tuple(t) for t in tokens.values()}) == 1,
        "step_ms_median": {name: round(statistics.median(v), 2) for name, v in steps.items()},
        "first_step_ms_median": {name: round(statistics.median(v), 2) for name, v in first.items()},
        "encoder_ms_median": {name: round(statistics.median(v[1:]), 1) for name, v in encoder_ms.items()},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
