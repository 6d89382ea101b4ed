"""Emotion tags and <think> blocks: stripped from what is shown and spoken, even split across chunks."""

from __future__ import annotations

from brain_harness import make_config, registry_with, start_companion, tool
from hypothesis import given
from hypothesis import strategies as st

from companion.brain.emotion import ReplyFilter, clean_reply
from companion.events import ExpressionChanged, ReplyDelta, ReplyDone, TurnFinished

CASES = {
    "[happy] Hello there!": ("Hello there!", "happy"),
    "<think>plan: say [sad] hi</think>\n[excited] Wow, a <b> tag!": ("Wow, a <b> tag!", "excited"),
    "  \n[Thinking]  Hmm.": ("Hmm.", "thinking"),
    "No tag [1] here < yes": ("No tag [1] here < yes", "neutral"),
    "Hello [happy] world <think>x</think>end": ("Hello world end", "neutral"),
    "[smirk] Unknown tags are dropped.": ("Unknown tags are dropped.", "neutral"),
    "<think>never closed, never shown": ("", "neutral"),
    "Text [ok": ("Text [ok", "neutral"),
}


def feed_in_pieces(text: str, cuts: list[int]) -> tuple[str, str]:
    reply = ReplyFilter()
    pieces, previous = [], 0
    for cut in sorted(set(cuts)):
        pieces.append(text[previous:cut])
        previous = cut
    pieces.append(text[previous:])
    shown = "".join(reply.feed(p) for p in pieces) + reply.finish()
    return shown.strip(), reply.emotion or "neutral"


def test_tags_and_reasoning_are_removed_from_whole_replies():
    for text, expected in CASES.items():
        assert clean_reply(text) == expected, text


@given(st.sampled_from(sorted(CASES)), st.lists(st.integers(min_value=1, max_value=60), max_size=6))
def test_the_result_is_the_same_however_the_stream_is_chunked(text, cuts):
    assert feed_in_pieces(text, [c for c in cuts if c < len(text)]) == CASES[text]


def test_nothing_of_a_think_block_is_released_before_it_closes():
    reply = ReplyFilter()
    shown = [reply.feed(piece) for piece in ["Hi <th", "ink>secret", " stuff</thi", "nk> there"]]
    assert "".join(shown) + reply.finish() == "Hi  there"
    assert all("secret" not in s and "<" not in s for s in shown)


async def test_a_streamed_reply_sets_the_face_from_its_tag_and_never_shows_reasoning(tmp_path, scripted_brain):
    scripted_brain.push({"text": "<think>The user wants praise.</think>[excited] You did it!", "chunks": 9})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    result = await companion.ask("I finished")
    shown = "".join(e.text for e in rec.of(ReplyDelta))
    assert shown == "You did it!"
    assert [e.text for e in rec.of(ReplyDone)] == ["You did it!"]
    assert rec.of(ExpressionChanged)[-1] == ExpressionChanged("excited", "reply", turn=1)  # her first turn
    assert rec.of(TurnFinished)[-1].emotion == "excited" == result.emotion
    await companion.close()


async def test_a_reply_without_a_tag_leaves_a_neutral_face(tmp_path, scripted_brain):
    scripted_brain.push({"text": "Just words."})
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    await companion.ask("hi")
    assert rec.of(ExpressionChanged) == [ExpressionChanged("neutral", "reply", turn=1)]
    await companion.close()


async def test_her_face_takes_the_reply_s_mood_with_its_first_words_not_after_the_whole_reply(
        tmp_path, scripted_brain):
    scripted_brain.push(
        {"text": "Let me look.", "tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]},
        {"text": "[happy] Found it, and it was right where you left it.", "chunks": 6},
    )
    companion, rec = await start_companion(make_config(tmp_path, scripted_brain.url), registry_with(tool("echo")))
    await companion.ask("Where are my keys?")
    await companion.close()

    faces = [(i, e) for i, e in enumerate(rec.events) if isinstance(e, ExpressionChanged)]
    deltas = [i for i, e in enumerate(rec.events) if isinstance(e, ReplyDelta)]
    # The first round's plain words, then the tool's focus, then the answer's mood as it begins.
    assert [(e.name, e.reason) for _, e in faces] == [
        ("neutral", "reply"), ("thinking", "focus: echo"), ("happy", "reply")]
    assert faces[0][0] < deltas[0]
    answer_starts = next(i for i in deltas if i > faces[1][0])
    assert faces[-1][0] < answer_starts
