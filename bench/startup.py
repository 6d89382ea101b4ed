"""Start-up time of the window: launch → window shown → first face frame → core ready → listening.

Each run is a fresh process (interpreter start and imports included) with the real models
and a real microphone and speaker (a private PulseAudio with virtual devices), talking to the
scripted brain over HTTP. Prints JSON: the median of RUNS runs, in milliseconds.

    .venv/bin/python bench/startup.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 3
STAGES = ("window_shown", "first_frame", "core_ready", "ready_to_listen")


def child(brain_url: str, config_dir: str) -> None:
    import asyncio

    import qasync
    from PySide6.QtWidgets import QApplication

    from companion.config import Paths, RunConfig, Settings, with_overrides
    from companion.ui.app import CompanionApp
    from companion.ui.theme import STYLE_SHEET

    stamps: dict[str, float] = {}
    app = QApplication(sys.argv)
    app.setStyleSheet(STYLE_SHEET)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    settings = with_overrides(Settings(), brain={"base_url": brain_url},
                              tools={"workspace": f"{config_dir}-workspace"},  # never inside her own files
                              voice={"listening": "always"})  # comparable with earlier runs

    async def main() -> None:
        companion = CompanionApp(RunConfig(Paths.default(Path(config_dir)), settings))
        first = asyncio.get_running_loop().create_future()
        companion.window.face.painted.connect(lambda _t: first.done() or first.set_result(time.time()))
        companion.show()
        stamps["window_shown"] = time.time()
        await companion.start()
        stamps["core_ready"] = time.time()
        stamps["first_frame"] = await first
        await companion.voice_started.wait()
        if companion.voice is None:
            raise SystemExit("voice did not start: " + " ".join(
                companion.window.banners.banner(k).text() for k in companion.window.banners.shown_keys()))
        stamps["ready_to_listen"] = time.time()
        stamps["listening"] = companion.voice.listening
        await companion.close()

    with loop:
        loop.run_until_complete(main())
    print(json.dumps(stamps))


def parent() -> dict:
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))
    from audio_env import PrivatePulseAudio
    from scripted_brain import ScriptedBrain

    runs: dict[str, list[float]] = {stage: [] for stage in STAGES}
    with tempfile.TemporaryDirectory() as tmp, ScriptedBrain() as brain:
        pulse = PrivatePulseAudio(Path(tmp) / "pulse").start()
        try:
            env = {**os.environ, **pulse.env, "QT_QPA_PLATFORM": "offscreen"}
            for index in range(RUNS):
                launched = time.time()
                out = subprocess.run(
                    [sys.executable, __file__, "--child", brain.url, str(Path(tmp) / f"config{index}")],
                    env=env, capture_output=True, text=True, timeout=120)
                if out.returncode != 0:
                    raise SystemExit(out.stderr[-2000:] or out.stdout[-2000:])
                stamps = json.loads(out.stdout.strip().splitlines()[-1])
                if not stamps.get("listening"):
                    raise SystemExit("the microphone did not open")
                for stage in STAGES:
                    runs[stage].append((stamps[stage] - launched) * 1000)
        finally:
            pulse.stop()
    result = {f"{stage}_ms": round(statistics.median(values)) for stage, values in runs.items()}
    result["runs"] = RUNS
    result["target_window_shown_ms"] = 1500
    return result


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        print(json.dumps(parent()))
