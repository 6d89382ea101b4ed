"""libpulse's asynchronous API over ctypes: its types, constants and typed functions.

companion.voice.sound.pulse builds her streams on it; this module only binds the library.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

__all__ = ["PulseError", "library"]

_FLOAT32LE = 5
_CONTEXT_NOAUTOSPAWN = 1
_CTX_READY, _CTX_FAILED, _CTX_TERMINATED = 4, 5, 6
_STREAM_READY, _STREAM_FAILED, _STREAM_TERMINATED = 2, 3, 4
_INTERPOLATE_TIMING, _NOT_MONOTONIC, _AUTO_TIMING_UPDATE, _ADJUST_LATENCY = 0x2, 0x10, 0x8, 0x2000
_NO_VALUE = 0xFFFFFFFF  # (uint32_t) -1: "the server's choice"


class PulseError(Exception):
    """No sound server, or it refused a stream (the sentence says which)."""


class _SampleSpec(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int), ("rate", ctypes.c_uint32), ("channels", ctypes.c_uint8)]


class _BufferAttr(ctypes.Structure):
    _fields_ = [("maxlength", ctypes.c_uint32), ("tlength", ctypes.c_uint32), ("prebuf", ctypes.c_uint32),
                ("minreq", ctypes.c_uint32), ("fragsize", ctypes.c_uint32)]


_CONTEXT_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_STREAM_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_REQUEST_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)

_SIGNATURES = {
    "pa_threaded_mainloop_new": (ctypes.c_void_p, []),
    "pa_threaded_mainloop_get_api": (ctypes.c_void_p, [ctypes.c_void_p]),
    "pa_threaded_mainloop_start": (ctypes.c_int, [ctypes.c_void_p]),
    "pa_threaded_mainloop_stop": (None, [ctypes.c_void_p]),
    "pa_threaded_mainloop_free": (None, [ctypes.c_void_p]),
    "pa_threaded_mainloop_lock": (None, [ctypes.c_void_p]),
    "pa_threaded_mainloop_unlock": (None, [ctypes.c_void_p]),
    "pa_threaded_mainloop_wait": (None, [ctypes.c_void_p]),
    "pa_threaded_mainloop_signal": (None, [ctypes.c_void_p, ctypes.c_int]),
    "pa_context_new": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]),
    "pa_context_set_state_callback": (None, [ctypes.c_void_p, _CONTEXT_CB, ctypes.c_void_p]),
    "pa_context_connect": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]),
    "pa_context_get_state": (ctypes.c_int, [ctypes.c_void_p]),
    "pa_context_errno": (ctypes.c_int, [ctypes.c_void_p]),
    "pa_context_get_server_protocol_version": (ctypes.c_uint32, [ctypes.c_void_p]),
    "pa_context_disconnect": (None, [ctypes.c_void_p]),
    "pa_context_unref": (None, [ctypes.c_void_p]),
    "pa_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "pa_stream_new": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_SampleSpec),
                                        ctypes.c_void_p]),
    "pa_stream_set_state_callback": (None, [ctypes.c_void_p, _STREAM_CB, ctypes.c_void_p]),
    "pa_stream_set_read_callback": (None, [ctypes.c_void_p, _REQUEST_CB, ctypes.c_void_p]),
    "pa_stream_set_write_callback": (None, [ctypes.c_void_p, _REQUEST_CB, ctypes.c_void_p]),
    "pa_stream_set_underflow_callback": (None, [ctypes.c_void_p, _STREAM_CB, ctypes.c_void_p]),
    "pa_stream_set_overflow_callback": (None, [ctypes.c_void_p, _STREAM_CB, ctypes.c_void_p]),
    "pa_stream_set_moved_callback": (None, [ctypes.c_void_p, _STREAM_CB, ctypes.c_void_p]),
    "pa_stream_connect_playback": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_BufferAttr),
                                                  ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]),
    "pa_stream_connect_record": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_BufferAttr),
                                                ctypes.c_int]),
    "pa_stream_get_state": (ctypes.c_int, [ctypes.c_void_p]),
    "pa_stream_peek": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.POINTER(ctypes.c_size_t)]),
    "pa_stream_drop": (ctypes.c_int, [ctypes.c_void_p]),
    "pa_stream_write": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.c_int64, ctypes.c_int]),
    "pa_stream_get_time": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]),
    "pa_stream_get_buffer_attr": (ctypes.POINTER(_BufferAttr), [ctypes.c_void_p]),
    "pa_stream_set_buffer_attr": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.POINTER(_BufferAttr), ctypes.c_void_p,
                                                    ctypes.c_void_p]),
    "pa_operation_unref": (None, [ctypes.c_void_p]),
    "pa_stream_get_device_name": (ctypes.c_char_p, [ctypes.c_void_p]),
    "pa_stream_disconnect": (ctypes.c_int, [ctypes.c_void_p]),
    "pa_stream_unref": (None, [ctypes.c_void_p]),
}


@functools.cache
def library() -> ctypes.CDLL:
    """libpulse, its functions typed (raises PulseError when it is not installed)."""
    name = ctypes.util.find_library("pulse") or "libpulse.so.0"
    try:
        lib = ctypes.CDLL(name)
    except OSError as exc:
        raise PulseError(f"libpulse is not installed ({exc})") from exc
    for function, (restype, argtypes) in _SIGNATURES.items():
        f = getattr(lib, function)
        f.restype, f.argtypes = restype, argtypes
    return lib
