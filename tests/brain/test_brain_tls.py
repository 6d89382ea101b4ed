"""Her brain's clients share the process's one TLS context: a client, a warm-up's client or a
server probe made after the first reads no CA bundle (~45 ms of processor each; three at every
start), and the context still verifies certificates and host names."""

from __future__ import annotations

import ssl

from companion.brain.client import OpenAIChatModel
from companion.brain.server import probe_server
from companion.brain.tls import httpx_tls, openai_tls
from companion.config import BrainSettings


async def test_a_second_brain_client_and_server_probe_read_no_ca_bundle_and_still_answer(scripted_brain, monkeypatch):
    settings = BrainSettings(base_url=scripted_brain.url, model="scripted")
    first = OpenAIChatModel(settings)
    await first.close()
    await probe_server(scripted_brain.url, "scripted")  # the process's contexts exist from here on
    reads = []
    read = ssl.SSLContext.load_verify_locations
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations",
                        lambda context, *args, **kwargs: reads.append(args) or read(context, *args, **kwargs))
    second = OpenAIChatModel(settings)
    try:
        assert "scripted" in await second.list_models()  # it still talks to her brain
    finally:
        await second.close()
    await probe_server(scripted_brain.url, "scripted")
    assert reads == []


def test_the_shared_tls_contexts_verify_certificates_and_host_names():
    for context in (httpx_tls(), openai_tls()):
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle was read into it
