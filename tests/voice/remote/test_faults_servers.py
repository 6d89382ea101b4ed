"""Real Wyoming servers killed in the middle of a spoken conversation: her own engine takes
over, she says so once, and nothing the user said or she meant to say is lost."""

from __future__ import annotations

import pytest
from faults import KILL, Fault, FaultPoints, check_conversation, conversation_wav, run_conversation
from wyoming_servers import hearing_server, voice_server

from companion.voice.fallback import RemoteHearing, RemoteVoice
from companion.voice.remote.hearing import WyomingTranscriber
from companion.voice.remote.speaking import WyomingSynthesizer


@pytest.fixture(scope="module")
def two_questions(tmp_path_factory, piper_voice):
    return conversation_wav(tmp_path_factory.mktemp("wav") / "two.wav", piper_voice)


def _killer(server, points: FaultPoints, kind: str):
    def kill() -> None:
        server.kill()
        points.hit.append(Fault(f"{kind}:real", KILL))
    return kill


async def test_her_voice_server_killed_while_she_answers_hands_the_rest_of_the_answer_to_her_own_piper(
        tmp_path, scripted_brain, hearing, piper_voice, two_questions):
    with voice_server(tmp_path / "server") as server:
        points = FaultPoints()
        points.actions["delta#2"] = _killer(server, points, "say")  # her first sentence is on its way
        outcome = await run_conversation(
            tmp_path, scripted_brain, hearing, piper_voice, two_questions, points,
            mouth=lambda bus: RemoteVoice(WyomingSynthesizer(server.uri), lambda: piper_voice, bus))
    assert server.process is None or server.process.poll() is not None
    assert check_conversation(outcome, None, host="127.0.0.1") == []


async def test_her_hearing_server_killed_while_she_answers_leaves_the_next_question_heard(
        tmp_path, scripted_brain, hearing, piper_voice, two_questions):
    with hearing_server(tmp_path / "server") as server:
        points = FaultPoints()
        points.actions["ask#1>"] = _killer(server, points, "hear")
        outcome = await run_conversation(
            tmp_path, scripted_brain, hearing, piper_voice, two_questions, points,
            ears=lambda bus: RemoteHearing(WyomingTranscriber(server.uri), lambda: hearing, bus))
    assert check_conversation(outcome, None, host="127.0.0.1") == []
