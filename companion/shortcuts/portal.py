"""Push-to-talk through org.freedesktop.portal.GlobalShortcuts (how Wayland desktops, and some X11
ones, let an app have a shortcut that works in every window), over D-Bus with jeepney.

The desktop owns the key: we ask for a preferred trigger when binding, the user may change it in
the desktop's own settings, and the portal tells us Activated / Deactivated.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import secrets
import threading
import time
from collections.abc import Callable

from jeepney import (
    DBusAddress,
    HeaderFields,
    MatchRule,
    MessageType,
    Properties,
    message_bus,
    new_method_call,
)
from jeepney.io.threading import DBusConnection, ReceiveStopped, open_dbus_connection

from companion.shortcuts.backend import GlobalKey, ShortcutUnavailable
from companion.shortcuts.keys import Combination

log = logging.getLogger(__name__)

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
INTERFACE = "org.freedesktop.portal.GlobalShortcuts"
SHORTCUT_ID = "push-to-talk"
DESCRIPTION = "Push to talk (hold while you speak)"
APP_ID = "companion"
"""The launcher's name (companion.desktop): portals that ask host apps to register use it."""

_PORTAL = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=INTERFACE)
_tokens = itertools.count(1)


def portal_version(bus: str = "SESSION") -> int:
    """The GlobalShortcuts portal's version on `bus`; ShortcutUnavailable when there is none."""
    from jeepney.io.blocking import open_dbus_connection as open_blocking

    try:
        conn = open_blocking(bus)
    except (OSError, ValueError, KeyError) as exc:
        raise ShortcutUnavailable(f"the desktop session bus can't be reached ({exc})") from exc
    with conn:
        try:
            reply = conn.send_and_get_reply(Properties(_PORTAL).get("version"), timeout=5.0)
        except TimeoutError as exc:
            raise ShortcutUnavailable("the desktop portal did not answer") from exc
    if reply.header.message_type == MessageType.error:
        raise ShortcutUnavailable(_why(reply.header.fields.get(HeaderFields.error_name, ""), reply.body))
    (_sig, version), = reply.body
    return int(version)


class PortalKey(GlobalKey):
    where = "desktop portal"

    def __init__(self, combination: Combination, on_change: Callable[[bool], None], *,
                 bus: str = "SESSION", timeout: float = 60.0, shortcut_id: str = SHORTCUT_ID,
                 description: str = DESCRIPTION) -> None:
        """Blocking: creates a portal session and binds the key (the desktop may ask the user);
        ShortcutUnavailable when there is no portal or the user declines."""
        self._on_change = on_change
        self.shortcut_id = shortcut_id
        self._description = description
        self._down = False
        try:
            self._conn: DBusConnection = open_dbus_connection(bus)
        except (OSError, ValueError, KeyError) as exc:
            raise ShortcutUnavailable(f"the desktop session bus can't be reached ({exc})") from exc
        try:
            self._check_version()
            self._register_app()
            self.session = self._create_session(timeout)
            self.trigger = self._bind(combination, timeout)
        except BaseException:
            self._conn.close()
            raise
        self._conn.send(message_bus.AddMatch(MatchRule(type="signal", interface=INTERFACE,
                                                       path=PORTAL_PATH)))
        self._thread = threading.Thread(target=self._listen, name="portal-shortcut", daemon=True)
        self._thread.start()

    # --- setting up -----------------------------------------------------------------------
    def _call(self, message, timeout: float = 5.0):
        """Send and wait for its reply; D-Bus errors become ShortcutUnavailable."""
        serial = next(self._conn.outgoing_serial)
        self._conn.send(message, serial=serial)
        reply = self._receive_until(
            lambda m: m.header.fields.get(HeaderFields.reply_serial) == serial, timeout)
        if reply.header.message_type == MessageType.error:
            name = reply.header.fields.get(HeaderFields.error_name, "")
            raise ShortcutUnavailable(_why(name, reply.body))
        return reply.body

    def _receive_until(self, wanted: Callable, timeout: float):
        """The first message `wanted` accepts (others are dropped: nothing is bound yet)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self._conn.receive(timeout=left)
            except TimeoutError:
                break
            if wanted(message):
                return message
        raise TimeoutError

    def _check_version(self) -> None:
        try:
            (_sig, version), = self._call(Properties(_PORTAL).get("version"))
        except TimeoutError as exc:
            raise ShortcutUnavailable("the desktop portal did not answer") from exc
        log.debug("GlobalShortcuts portal version %s", version)

    def _register_app(self) -> None:
        # Newer portals want a host app to say which launcher it is; older ones lack the call.
        registry = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface="org.freedesktop.host.portal.Registry")
        try:
            self._call(new_method_call(registry, "Register", "sa{sv}", (APP_ID, {})), timeout=2.0)
        except (ShortcutUnavailable, TimeoutError) as exc:
            log.debug("portal registry: %s", exc)

    def _request(self, method: str, signature: str, body: tuple, token: str, timeout: float) -> dict:
        """A portal call that answers later through a Request object's Response signal."""
        sender = self._conn.unique_name.lstrip(":").replace(".", "_")
        path = f"{PORTAL_PATH}/request/{sender}/{token}"
        rule = MatchRule(type="signal", interface="org.freedesktop.portal.Request", member="Response", path=path)
        self._conn.send(message_bus.AddMatch(rule))  # the bus applies it before our call below
        call = new_method_call(_PORTAL, method, signature, body)
        serial = next(self._conn.outgoing_serial)
        self._conn.send(call, serial=serial)

        def answer(message) -> bool:
            is_error = (message.header.message_type == MessageType.error
                        and message.header.fields.get(HeaderFields.reply_serial) == serial)
            return is_error or rule.matches(message)

        try:
            message = self._receive_until(answer, timeout)
        except TimeoutError as exc:
            raise ShortcutUnavailable(f"the desktop portal did not finish {method} in {timeout:.0f} s") from exc
        if message.header.message_type == MessageType.error:
            raise ShortcutUnavailable(_why(message.header.fields.get(HeaderFields.error_name, ""), message.body))
        code, results = message.body
        if code != 0:
            raise ShortcutUnavailable("the shortcut was declined in the desktop's dialog"
                                      if code == 1 else "the desktop portal refused the shortcut")
        return results

    def _create_session(self, timeout: float) -> str:
        token = f"companion{next(_tokens)}_{secrets.token_hex(4)}"
        results = self._request("CreateSession", "a{sv}", ({
            "handle_token": ("s", token), "session_handle_token": ("s", token)},), token, timeout)
        _sig, session = results.get("session_handle", ("s", ""))
        if not session:
            raise ShortcutUnavailable("the desktop portal gave no session")
        return session

    def _bind(self, combination: Combination, timeout: float) -> str:
        token = f"companion{next(_tokens)}_{secrets.token_hex(4)}"
        shortcut = {"description": ("s", self._description),
                    "preferred_trigger": ("s", combination.portal_trigger())}
        results = self._request("BindShortcuts", "oa(sa{sv})sa{sv}",
                                (self.session, [(self.shortcut_id, shortcut)], "", {"handle_token": ("s", token)}),
                                token, timeout)
        _sig, bound = results.get("shortcuts", ("a(sa{sv})", []))
        for shortcut_id, props in bound:
            if shortcut_id == self.shortcut_id:
                return props.get("trigger_description", ("s", ""))[1] or combination.portal_trigger()
        raise ShortcutUnavailable(f"the desktop did not bind the {self.shortcut_id} shortcut")

    # --- running --------------------------------------------------------------------------
    def _listen(self) -> None:
        while True:
            try:
                message = self._conn.receive()
            except (ReceiveStopped, OSError, ValueError):
                return
            fields = message.header.fields
            if message.header.message_type != MessageType.signal or fields.get(HeaderFields.interface) != INTERFACE:
                continue
            member = fields.get(HeaderFields.member)
            if member not in ("Activated", "Deactivated") or len(message.body) < 2:
                continue
            session, shortcut_id = message.body[0], message.body[1]
            if session != self.session or shortcut_id != self.shortcut_id:
                continue
            down = member == "Activated"
            if down != self._down:
                self._down = down
                try:
                    self._on_change(down)
                except Exception:  # a receiver's bug must not end the shortcut
                    log.exception("push-to-talk receiver failed")

    def close(self) -> None:
        session = DBusAddress(self.session, bus_name=PORTAL_NAME, interface="org.freedesktop.portal.Session")
        with contextlib.suppress(OSError):  # the bus may be gone already
            self._conn.send(new_method_call(session, "Close"))
        self._conn.interrupt()
        self._thread.join(timeout=2.0)
        self._conn.close()


def _why(error_name: str, body: tuple) -> str:
    if error_name in ("org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"):
        return "this desktop has no portal service"
    if error_name in ("org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.DBus.Error.UnknownMethod",
                      "org.freedesktop.DBus.Error.InvalidArgs", "org.freedesktop.DBus.Error.UnknownProperty"):
        return "this desktop's portal has no global shortcuts"
    detail = body[0] if body and isinstance(body[0], str) else error_name
    return f"the desktop portal refused ({detail})"
