"""`companion doctor` times her brain on her real spoken-turn prompt, says what a spoken turn
waits for it, and what would help when that is slow; over real HTTP to the scripted brain."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from brain_pace import LAPTOP_3B, Pace
from scripted_brain import ScriptedBrain

from companion.config import Paths, Settings, with_overrides
from companion.doctor import brain as brain_checks
from companion.doctor import speed
from companion.doctor.report import Check, format_report

TOOL_CALL = {"tool_calls": [{"name": "get_time", "arguments": {}}]}
ANSWER = {"text": "[neutral] Nine o'clock."}
LAPTOP = Pace(prompt_tps=LAPTOP_3B.prompt_tps * 25, write_tps=6.0, name="laptop, prompt read 25x faster")
"""The laptop profile with its prompt read 25 times faster, so the cold request takes ~0.7 s
not ~17 s: the spoken turn is still slow, for the words are written at a laptop's pace."""


def doctor_brain(brain: ScriptedBrain, tmp_path: Path, **bound: float) -> list[Check]:
    """The brain lines of the doctor, as `companion doctor` runs them."""
    settings = with_overrides(Settings(), brain={"base_url": brain.url})
    found = brain_checks.check_brain(settings)
    return [*found, speed.check_brain_speed(settings, Paths.default(tmp_path / "config"), found, **bound)]


def test_a_brain_at_a_laptops_pace_is_reported_slow_with_a_smaller_model_and_a_warm_server_as_the_fix(tmp_path):
    with ScriptedBrain([TOOL_CALL], fallback=ANSWER, pace=LAPTOP) as brain:
        *_, check = doctor_brain(brain, tmp_path)
        timings = list(brain.slot.timings)
    report = format_report([check])
    assert not check.ok and not check.essential  # a warning: she still talks, slowly
    assert "[warn] Brain speed: Her brain answers in ~" in report and "on a spoken turn (first words after" in report
    assert "that is slow for talking" in check.detail
    assert "qwen2.5:1.5b" in check.fix and "keeping the server running" in check.fix
    # Her real prompt was timed: read whole once (cold), then with only the new question's words left.
    assert timings[1]["prompt_n"] > 800 and timings[2]["prompt_n"] < 64
    assert "tokens/s (estimated), replies written at ~6 tokens/s" in check.detail


def test_a_fast_brain_is_a_plain_ok(tmp_path):
    with ScriptedBrain([TOOL_CALL], fallback=ANSWER) as brain:
        *_, check = doctor_brain(brain, tmp_path)
        [_probe, cold, warm] = brain.bodies[:1] + brain.warm_ups[:1] + brain.bodies[1:]
    assert check.ok, check
    assert check.detail.startswith("Her brain answers in ~0.")
    # her spoken turn: system prompt, her tools, the question with its spoken turn note
    assert cold["messages"][0]["role"] == "system" and len(cold["messages"][0]["content"]) > 1000
    assert any(tool["function"]["name"] == "get_time" for tool in cold["tools"])
    assert "Spoken reply" in cold["messages"][1]["content"]
    assert warm["messages"][0] == cold["messages"][0] and warm["tools"] == cold["tools"]
    assert warm["messages"][1] != cold["messages"][1]


def test_a_brain_that_stalls_is_given_up_on_within_the_bound_and_the_doctor_says_so(tmp_path):
    stalling = Pace(prompt_tps=1.0, write_tps=1.0)  # her prompt would take a quarter of an hour
    with ScriptedBrain(fallback=ANSWER, pace=stalling) as brain:
        settings = with_overrides(Settings(), brain={"base_url": brain.url})
        reached = [Check("Brain", True, "answers"), Check("Brain model", True, "is there")]
        started = time.monotonic()
        check = speed.check_brain_speed(settings, Paths.default(tmp_path / "config"), reached, timeout_s=1.0)
        took = time.monotonic() - started
    assert took < 3.0
    assert not check.ok and not check.essential
    assert check.detail.startswith("her brain wrote no first word within 1 s on her spoken-turn prompt") and "qwen2.5:1.5b" in check.fix


def test_an_unreachable_brain_is_told_once_and_its_speed_is_not_measured(tmp_path, unused_port):
    settings = with_overrides(Settings(), brain={"base_url": f"http://127.0.0.1:{unused_port}/v1"})
    found = brain_checks.check_brain(settings)
    check = speed.check_brain_speed(settings, Paths.default(tmp_path / "config"), found)
    assert [c.name for c in found] == ["Brain"] and not found[0].ok
    assert check.detail == "not measured: her brain did not answer (see above)" and not check.fix


class FakeOllama(ThreadingHTTPServer):
    """Ollama's own API as far as the doctor uses it: /api/show says it is Ollama, /api/chat
    streams lines whose last one carries Ollama's counts and durations (nanoseconds)."""

    def __init__(self) -> None:
        self.chats: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # no llama.cpp /props here
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/api/show":
                    lines = [{"model_info": {"qwen2.context_length": 32768}, "parameters": "",
                              "capabilities": ["completion", "tools"]}]
                else:
                    server.chats.append(body)
                    cold = len(server.chats) == 1
                    done = {"message": {"role": "assistant", "content": ""}, "done": True,
                            "prompt_eval_count": 1200 if cold else 40,
                            "prompt_eval_duration": 20_000_000_000 if cold else 700_000_000,
                            "eval_count": 16, "eval_duration": 4_000_000_000}
                    lines = [{"message": {"role": "assistant", "content": "[neutral]"}, "done": False}, done]
                data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def test_with_ollama_the_doctor_reads_its_own_counts_and_suggests_keep_alive(tmp_path):
    ollama = FakeOllama()
    try:
        settings = with_overrides(Settings(), brain={"base_url": ollama.url})
        reached = [Check("Brain", True, "answers"), Check("Brain model", True, "is there")]
        check = speed.check_brain_speed(settings, Paths.default(tmp_path / "config"), reached)
    finally:
        ollama.shutdown()
        ollama.server_close()
    cold, warm = ollama.chats
    assert cold["options"]["num_predict"] == 1 and warm["options"]["num_predict"] == speed.WRITE_TOKENS
    assert cold["tools"] and cold["messages"][0]["role"] == "system"
    # 1,200 tokens in 20 s; 16 written in 4 s: a spoken turn waits ~11/4 s for its first sentence
    assert "her prompt of 1,200 tokens is read at ~60 tokens/s (the server's count)" in check.detail
    assert "replies written at ~4 tokens/s" in check.detail
    assert not check.ok and "Ollama's keep_alive" in check.fix and "ollama pull qwen2.5:1.5b" in check.fix


def test_a_brain_without_the_model_is_not_timed(tmp_path, scripted_brain):
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url, "model": "tinyllama"})
    found = brain_checks.check_brain(settings)
    check = speed.check_brain_speed(settings, Paths.default(tmp_path / "config"), found)
    assert check.detail == "not measured: her brain lacks the model (see above)"
    assert not scripted_brain.warm_ups  # no timing request was sent
