"""A voice session opened again on the same engine (Settings applied, a sound device back) has
her narration lines at once: they are not synthesized a second time (~12 s of processor for
her ~80 lines), unless how she speaks changed."""

from __future__ import annotations

from companion.voice.speaking.narration_cache import NarrationCache

LINES = ["One moment, I am looking at my clock.", "Here's the time.", "Hmm, let me think."]


async def test_a_second_cache_on_the_same_voice_takes_its_lines_without_synthesizing_them(piper_voice, monkeypatch):
    await NarrationCache(piper_voice).refresh(LINES)
    made: list[str] = []
    synthesize = piper_voice.synthesize

    async def counted(text: str):
        made.append(text)
        return await synthesize(text)

    monkeypatch.setattr(piper_voice, "synthesize", counted)
    again = NarrationCache(piper_voice)
    await again.refresh(LINES)
    assert made == []
    assert all(again.get(line) is not None and again.get(line).size for line in LINES)

    monkeypatch.setattr(piper_voice, "speed", piper_voice.speed * 1.15)  # Pip's pace: other audio
    await NarrationCache(piper_voice).refresh(LINES)
    assert len(made) == len(LINES)
