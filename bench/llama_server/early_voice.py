"""`companion voice` with the ear's words so far reaching her preparer (early_words.py), for
blackbox.py --early-words: the hook her ear and voice loop do not have yet, put in place
when each voice session is built. Everything else is the real command, unchanged.

    .venv/bin/python bench/llama_server/early_voice.py voice --brain-url URL ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from early_words import install  # noqa: E402

from companion.cli import entry  # noqa: E402
from companion.voice import session as voice_session  # noqa: E402

built = voice_session.VoiceSession.__init__


def with_early_words(self, *args, **kwargs) -> None:
    built(self, *args, **kwargs)
    install(self.loop)


voice_session.VoiceSession.__init__ = with_early_words

if __name__ == "__main__":
    sys.exit(entry())
