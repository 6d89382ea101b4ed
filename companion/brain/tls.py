"""One verified TLS context per process for her brain's HTTP clients.

A client made without one reads the whole CA bundle into a new SSLContext (~45 ms of processor),
and she makes three at every start (her brain's client, the warm-up's, the server probe's) and one
more at each change of her brain's settings; the test suite made ~900 (~50 s of its processor).
An SSLContext is meant to be shared by connections and clients. Each is made as its library makes
its own (the same CA bundle, SSL_CERT_FILE and SSL_CERT_DIR read once, at the first client)."""

from __future__ import annotations

import functools
import ssl


@functools.cache
def httpx_tls() -> ssl.SSLContext:
    """For httpx clients (the server probe)."""
    import httpx

    return httpx.create_ssl_context()


@functools.cache
def openai_tls() -> ssl.SSLContext:
    """For the openai client's own HTTP library (httpx2)."""
    import httpx2

    return httpx2.create_ssl_context()
