"""Memory she keeps while listening all day: what a long reply allocates is handed back."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SPEAKS_A_LONG_REPLY = textwrap.dedent("""
    import json, sys, tempfile
    from pathlib import Path
    from companion.memory import limit_heap_arenas, release_free_memory
    limit_heap_arenas()  # as companion does first thing
    from companion.voice.models.files import resolve_voice
    from companion.voice.speaking.tts import PiperSynthesizer

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    voice = PiperSynthesizer(resolve_voice("", Path(tempfile.mkdtemp())), steady=True)
    voice.load()
    release_free_memory()
    loaded = rss_mb()
    for _ in range(2):
        voice.synthesize_sync("The capital of Australia is Canberra. It was chosen as a compromise "
                              "between Sydney and Melbourne, and it is a planned city with many parks "
                              "and lakes, a lake in the middle, and a parliament on a hill.")
    release_free_memory()
    print(json.dumps({"loaded_mb": loaded, "after_mb": rss_mb()}))
""")


def test_a_long_reply_leaves_no_lasting_memory_behind():
    done = subprocess.run([sys.executable, "-c", SPEAKS_A_LONG_REPLY], capture_output=True, text=True,
                          timeout=120, check=True)
    sizes = json.loads(done.stdout.strip().splitlines()[-1])
    # onnxruntime's memory arena would keep the peak of the synthesis (~140 MB) for good.
    assert sizes["after_mb"] - sizes["loaded_mb"] < 50, sizes
