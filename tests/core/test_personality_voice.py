"""A voice of her own per personality (issues 37 and 54): `voice:`, `speed:`, `variation:` and
`pitch:` in the front matter, read and checked, filling in where Settings has no choice of its
own, and documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.config import VoiceSettings
from companion.persona import parse_personality, shipped_templates

ROOT = Path(__file__).resolve().parents[2]
BODY = "".join(f"\n## {title}\n{text}\n" for title, text in (
    ("Personality", "Calm."), ("How to address the user", "By name."), ("Emotional rules", "Kind."),
    ("Tool voice patterns", ""), ("Quirks", "None.")))


def _file(*front: str) -> str:
    return "\n".join(["---", "name: Nova", *front, "---"]) + BODY


def test_the_shipped_personalities_each_have_their_own_speed_and_variation():
    voices = {}
    for name, path in shipped_templates().items():
        personality, problems = parse_personality(path.read_text(encoding="utf-8"))
        assert problems == [], (name, problems)
        voices[personality.name] = (personality.voice, personality.speed, personality.variation, personality.pitch)
    assert voices["Mira"] == ("hibari/heart", 1.0, (0.667, 0.8), 0.0)  # a woman's voice
    assert voices["Jeeves"] == ("en_US-joe-medium", 0.9, (0.4, 0.5), -2.0)  # slower, steady, lower
    assert voices["Pip"] == ("en_US-joe-medium", 1.15, (0.9, 1.0), 4.0)  # quick, lively, higher
    assert len(set(voices.values())) == len(voices)


@pytest.mark.parametrize(("front", "speed", "variation"), [
    (("speed: 1.2", "variation: 0.3, 0.6"), 1.2, (0.3, 0.6)),
    (("speed: 0.5", "variation: [0, 1.5]"), 0.5, (0.0, 1.5)),
    (("variation: 0.5",), None, (0.5, 0.5)),  # one number: tone and rhythm alike
    ((), None, None),
])
def test_speed_and_variation_are_read_in_the_forms_a_person_writes(front, speed, variation):
    personality, problems = parse_personality(_file(*front))
    assert problems == []
    assert (personality.speed, personality.variation) == (speed, variation)


@pytest.mark.parametrize(("line", "says"), [
    ("speed: fast", "speed: 'fast' is not a speed I can use; give a number from 0.5 (slow) to 2.0 (fast)"),
    ("speed: 3", "speed: '3' is not a speed I can use"),
    ("speed: true", "speed: 'True' is not a speed I can use"),
    ("variation: lots", "variation: 'lots' is not a variation I can use; give one or two numbers from 0 to 1.5"),
    ("variation: 0.4, 2", "variation: '0.4, 2' is not a variation I can use"),
    ("variation: [0.1, 0.2, 0.3]", "variation: '[0.1, 0.2, 0.3]' is not a variation I can use"),
])
def test_a_bad_value_is_a_clear_sentence_on_its_line_and_the_file_keeps_working(line, says):
    personality, problems = parse_personality(_file("face: pip", line))
    (problem,) = problems
    assert problem.line == 4 and says in problem.message, problem
    assert not problem.fatal  # the rest of the file is used
    assert personality.name == "Nova" and personality.face == "pip"
    assert personality.speed is None and personality.variation is None


@pytest.mark.parametrize(("line", "pitch"), [("pitch: -2", -2.0), ("pitch: +4", 4.0), ("pitch: 1.5", 1.5),
                                             ("pitch: 0", 0.0)])
def test_a_pitch_in_semitones_is_read_from_the_front_matter(line, pitch):
    personality, problems = parse_personality(_file(line))
    assert problems == []
    assert personality.pitch == pitch


@pytest.mark.parametrize("line", ["pitch: high", "pitch: 13", "pitch: true"])
def test_a_pitch_she_cant_use_is_a_harmless_problem_on_its_line(line):
    personality, problems = parse_personality(_file("face: pip", line))
    (problem,) = problems
    assert problem.line == 4 and "is not a pitch I can use; give semitones from -12 (lower) to 12 (higher)" \
        in problem.message, problem
    assert not problem.fatal and personality.pitch is None


def test_the_personality_fills_in_where_settings_has_no_choice_of_its_own():
    jeeves = ("en_US-joe-medium", 0.9, (0.4, 0.5))
    voice = VoiceSettings().with_personality_voice(*jeeves)
    assert (voice.speed, voice.variation) == (0.9, (0.4, 0.5))
    # Settings' own speed (not 1.0) and noise scales (not negative) win.
    chosen = VoiceSettings(speed=1.3, noise_scale=0.2).with_personality_voice(*jeeves)
    assert (chosen.speed, chosen.variation) == (1.3, (0.2, 0.5))
    # A personality without them leaves the voice's own (None: piper reads the voice's config).
    assert VoiceSettings().with_personality_voice("", None, None).variation == (None, None)
    with pytest.raises(ValueError, match="noise_scale"):
        VoiceSettings(noise_scale=2.0)
    # Her voice and pitch too: Settings' own (a voice named, a pitch not 0) win.
    mira = VoiceSettings().with_personality_voice("hibari/heart", 1.0, None, -2.0)
    assert (mira.voice, mira.pitch) == ("hibari/heart", -2.0)
    chosen = VoiceSettings(voice="hibari/heart", pitch=3.0).with_personality_voice("x.onnx", None, None, -2.0)
    assert (chosen.voice, chosen.pitch) == ("hibari/heart", 3.0)
    with pytest.raises(ValueError, match="pitch"):
        VoiceSettings(pitch=13.0)


async def test_her_voice_settings_come_from_the_personality_in_use(tmp_path):
    from brain_harness import make_config, registry_with, start_companion

    config = make_config(tmp_path, "http://127.0.0.1:9/v1", personality=ROOT / "personality" / "gremlin.md")
    companion, _events = await start_companion(config, registry_with())
    try:
        voice = companion.voice_settings()
        assert (voice.speed, voice.variation, voice.pitch) == (1.15, (0.9, 1.0), 4.0)
    finally:
        await companion.close()


def test_the_personality_guide_documents_who_sounds_like_what():
    guide = (ROOT / "docs" / "personality.md").read_text(encoding="utf-8")
    for text in ("`speed:`", "`variation:`", "`pitch:`", "noise_scale", "noise_w_scale", "length_scale",
                 "semitones", "| Mira (`default.md`) | `hibari/heart` | 1.0 | 0.667, 0.8 | 0 |",
                 "| Jeeves (`butler.md`) | `en_US-joe-medium` | 0.9 | 0.4, 0.5 | -2 |",
                 "| Pip (`gremlin.md`) | `en_US-joe-medium` | 1.15 | 0.9, 1.0 | 4 |"):
        assert text in guide, text
