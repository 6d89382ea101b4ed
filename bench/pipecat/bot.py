"""A pipecat 1.14 voice bot on the same models as hers, for bench/turn_blackbox.py's side-by-side.

Runs in its own venv (bench/pipecat/requirements.txt), never in hers. The pipeline is pipecat's
plain one: local audio in (PortAudio through pyaudio, on the default devices: the probe points
PULSE_SOURCE/PULSE_SINK at its private PulseAudio) → faster-whisper → user aggregator → the
OpenAI LLM service (the scripted brain) → piper → local audio out → assistant aggregator.

    --turn vad          Silero VAD at pipecat's default stop_secs (0.2 s), then pipecat's
                        VAD-only stop strategy (SpeechTimeoutUserTurnStopStrategy, its default
                        user_speech_timeout of 0.6 s after the VAD stop).
    --turn smart-turn   Silero VAD at 0.2 s (the stop pipecat's Smart Turn docs recommend), then
                        LocalSmartTurnAnalyzerV3 with the model bundled in the wheel, at its
                        default SmartTurnParams (3 s stop_secs fallback, 500 ms pre-speech,
                        8 s max) on 1 CPU thread.

Prints `Listening` once the pipeline has started; pipecat's own log (loguru) goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from pipecat.audio.turn.smart_turn.base_smart_turn import SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transcriptions.language import Language
from pipecat.transports.local.audio import LocalAudioTransport, LocalAudioTransportParams
from pipecat.turns.user_stop import (
    SpeechTimeoutUserTurnStopStrategy,
    TurnAnalyzerUserTurnStopStrategy,
)
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

VAD_STOP_S = 0.2
"""pipecat 1.14's VADParams default, and the value its docs give for Smart Turn."""


def stop_strategy(turn: str):
    if turn == "vad":
        return SpeechTimeoutUserTurnStopStrategy()
    return TurnAnalyzerUserTurnStopStrategy(
        turn_analyzer=LocalSmartTurnAnalyzerV3(params=SmartTurnParams(), cpu_count=1)
    )


async def run(args: argparse.Namespace) -> None:
    transport = LocalAudioTransport(
        LocalAudioTransportParams(audio_in_enabled=True, audio_out_enabled=True)
    )
    # Her hearing's settings where pipecat has them: tiny.en on the CPU, int8 (beam 5 is
    # faster-whisper's default; pipecat leaves cpu_threads at CTranslate2's default).
    stt = WhisperSTTService(
        device="cpu",
        compute_type="int8",
        settings=WhisperSTTService.Settings(model=str(args.whisper_model), language=Language.EN),
    )
    tts = PiperTTSService(
        download_dir=args.voice.parent,
        settings=PiperTTSService.Settings(voice=args.voice.stem),
    )
    llm = OpenAILLMService(
        api_key="scripted",
        base_url=args.brain_url,
        settings=OpenAILLMService.Settings(model="scripted"),
    )
    context = LLMContext([{"role": "system", "content": "You are a helpful voice assistant."}])
    aggregators = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=VAD_STOP_S)),
            user_turn_strategies=UserTurnStrategies(stop=[stop_strategy(args.turn)]),
        ),
    )
    pipeline = Pipeline([
        transport.input(),
        stt,
        aggregators.user(),
        llm,
        tts,
        transport.output(),
        aggregators.assistant(),
    ])
    worker = PipelineWorker(pipeline, params=PipelineParams(enable_metrics=True), idle_timeout_secs=None)

    @worker.event_handler("on_pipeline_started")
    async def _started(_worker, _frame) -> None:
        print("Listening", flush=True)

    await WorkerRunner(handle_sigint=True, handle_sigterm=True).run(worker)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turn", choices=("vad", "smart-turn"), required=True)
    parser.add_argument("--brain-url", required=True, help="an OpenAI-compatible base URL (…/v1)")
    parser.add_argument("--whisper-model", type=Path, required=True, help="a CTranslate2 Whisper folder")
    parser.add_argument("--voice", type=Path, required=True, help="a piper voice .onnx (its .json beside it)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
