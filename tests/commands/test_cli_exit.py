"""The `companion` command's exit once her echo canceller's native runtime (livekit) is loaded:
its code and every exit handler, without the interpreter's teardown (during which livekit's
thread, forwarding its last log line, aborted the process now and then)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import atexit, sys
from companion.cli import exit_process
from companion.voice.sound.echo_canceller import EchoCanceller
atexit.register(lambda: print("exit handler ran", flush=True))
canceller = EchoCanceller()
print("livekit loaded:", "livekit.rtc" in sys.modules, flush=True)
exit_process(3)
print("never reached")
"""


def test_with_livekit_loaded_the_command_ends_with_its_code_after_every_exit_handler():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["livekit loaded: True", "exit handler ran"], done.stderr
    assert done.returncode == 3, done.stderr
    assert "panicked" not in done.stderr
