"""A small stand-in for xdg-desktop-portal's GlobalShortcuts, for tests, on a private session bus.

Run as `python portal_service.py [--decline]` with DBUS_SESSION_BUS_ADDRESS set; it prints "ready"
once it owns org.freedesktop.portal.Desktop. Besides the portal's own calls it serves a test
interface at /test: Press(id) and Release(id) emit Activated / Deactivated for the bound session,
Bound() returns what was bound (JSON) and Closed() the sessions closed.
"""

from __future__ import annotations

import itertools
import json
import sys

from jeepney import (
    DBusAddress,
    HeaderFields,
    MessageType,
    message_bus,
    new_error,
    new_method_return,
    new_signal,
)
from jeepney.io.blocking import open_dbus_connection

NAME = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
SHORTCUTS = "org.freedesktop.portal.GlobalShortcuts"


def main() -> None:
    decline = "--decline" in sys.argv
    conn = open_dbus_connection("SESSION")
    conn.send_and_get_reply(message_bus.RequestName(NAME))
    sessions: dict[str, list] = {}
    bound: list[dict] = []
    closed: list[str] = []
    serials = itertools.count(1)
    print("ready", flush=True)

    def respond(sender: str, token: str, code: int, results: dict) -> str:
        path = f"{PATH}/request/{sender.lstrip(':').replace('.', '_')}/{token}"
        signal = new_signal(DBusAddress(path, interface="org.freedesktop.portal.Request"), "Response",
                            "ua{sv}", (code, results))
        conn.send(signal)
        return path

    while True:
        msg = conn.receive()
        if msg.header.message_type != MessageType.method_call:
            continue
        f = msg.header.fields
        iface, member, sender = f.get(HeaderFields.interface), f.get(HeaderFields.member), f.get(HeaderFields.sender)
        if iface == "org.freedesktop.DBus.Properties" and member == "Get" and msg.body == (SHORTCUTS, "version"):
            conn.send(new_method_return(msg, "v", (("u", 1),)))
        elif iface == SHORTCUTS and member == "CreateSession":
            options = msg.body[0]
            session = f"{PATH}/session/{sender.lstrip(':').replace('.', '_')}/{options['session_handle_token'][1]}"
            sessions[session] = []
            token = options["handle_token"][1]
            conn.send(new_method_return(msg, "o", (f"{PATH}/request/x/{token}",)))
            respond(sender, token, 0, {"session_handle": ("s", session)})
        elif iface == SHORTCUTS and member == "BindShortcuts":
            session, shortcuts, _parent, options = msg.body
            token = options["handle_token"][1]
            conn.send(new_method_return(msg, "o", (f"{PATH}/request/x/{token}",)))
            bound.append({"session": session, "shortcuts": [
                {"id": sid, **{k: v[1] for k, v in props.items()}} for sid, props in shortcuts]})
            if decline:
                respond(sender, token, 1, {})
                continue
            sessions[session] = [sid for sid, _ in shortcuts]
            reply = [(sid, {"description": props["description"],
                            "trigger_description": ("s", props["preferred_trigger"][1])})
                     for sid, props in shortcuts]
            respond(sender, token, 0, {"shortcuts": ("a(sa{sv})", reply)})
        elif iface == "org.freedesktop.portal.Session" and member == "Close":
            closed.append(f[HeaderFields.path])
            conn.send(new_method_return(msg))
        elif iface == "org.companion.TestPortal" and member in ("Press", "Release"):
            (shortcut_id,) = msg.body
            for session, ids in sessions.items():
                if shortcut_id in ids and session not in closed:
                    conn.send(new_signal(DBusAddress(PATH, interface=SHORTCUTS),
                                         "Activated" if member == "Press" else "Deactivated",
                                         "osta{sv}", (session, shortcut_id, next(serials), {})))
            conn.send(new_method_return(msg))
        elif iface == "org.companion.TestPortal" and member == "Bound":
            conn.send(new_method_return(msg, "s", (json.dumps(bound),)))
        elif iface == "org.companion.TestPortal" and member == "Closed":
            conn.send(new_method_return(msg, "s", (json.dumps(closed),)))
        else:
            conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s",
                                (f"no {iface}.{member} here",)))


if __name__ == "__main__":
    main()
