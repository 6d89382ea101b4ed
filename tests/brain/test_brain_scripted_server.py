"""The scripted brain speaks real OpenAI-compatible HTTP: streamed text, tool calls, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import openai
import pytest
from places import HELPERS


def _client(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key="test", max_retries=0)


async def _collect(client: openai.AsyncOpenAI, **extra) -> tuple[str, dict[int, dict]]:
    stream = await client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "hi"}], stream=True, **extra
    )
    text, calls = "", {}
    async for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for call in delta.tool_calls or []:
            slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
            slot["name"] += call.function.name or ""
            slot["arguments"] += call.function.arguments or ""
    return text, calls


async def test_streamed_text_arrives_in_several_chunks_and_the_request_is_recorded(scripted_brain):
    scripted_brain.push({"text": "[happy] Hello there, friend!", "chunks": 4})
    text, calls = await _collect(_client(scripted_brain.url), tools=[])
    assert text == "[happy] Hello there, friend!"
    assert calls == {}
    assert scripted_brain.bodies[0]["stream"] is True
    assert scripted_brain.bodies[0]["messages"] == [{"role": "user", "content": "hi"}]


async def test_tool_call_arguments_stream_in_pieces_and_may_be_malformed(scripted_brain):
    scripted_brain.push({"tool_calls": [
        {"name": "get_time", "arguments": {"zone": "UTC"}},
        {"name": "todo", "arguments": "{not json"},
    ]})
    _, calls = await _collect(_client(scripted_brain.url))
    assert calls[0] == {"name": "get_time", "arguments": json.dumps({"zone": "UTC"})}
    assert calls[1] == {"name": "todo", "arguments": "{not json"}


async def test_errors_come_back_with_openai_shaped_bodies(scripted_brain):
    scripted_brain.push({"error": 401}, {"error": "unknown_model"}, {"error": "no_tools"})
    client = _client(scripted_brain.url)
    with pytest.raises(openai.AuthenticationError):
        await _collect(client)
    with pytest.raises(openai.NotFoundError, match="not found"):
        await _collect(client)
    with pytest.raises(openai.BadRequestError, match="does not support tools"):
        await _collect(client)


async def test_a_cut_stream_breaks_off_after_some_text(scripted_brain):
    scripted_brain.push({"cut": True, "text": "Half a sentence and then"})
    stream = await _client(scripted_brain.url).chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    seen = ""
    with pytest.raises(openai.APIConnectionError):
        async for chunk in stream:
            seen += chunk.choices[0].delta.content or ""
    assert seen.startswith("Half")


async def test_non_streaming_requests_and_the_model_list_work(scripted_brain):
    scripted_brain.push({"text": "whole reply"})
    client = _client(scripted_brain.url)
    reply = await client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == "whole reply"
    models = await client.models.list()
    assert "scripted" in [m.id for m in models.data]


def test_it_runs_standalone_from_a_script_file(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from a file"}]))
    record = tmp_path / "requests.jsonl"
    process = subprocess.Popen(
        [sys.executable, str(HELPERS / "scripted_brain.py"), "--port", "0", "--script", str(script),
         "--record", str(record)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("ready http://127.0.0.1:")
        url = line.split()[1]
        reply = httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": []}, timeout=10)
        assert reply.json()["choices"][0]["message"]["content"] == "from a file"
        assert json.loads(record.read_text().splitlines()[0])["body"]["model"] == "m"
    finally:
        process.terminate()
        process.wait(timeout=10)
