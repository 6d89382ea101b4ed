"""One companion per user and settings folder: a second launch asks the first to show her window
(over a local socket) and exits, instead of opening a second window that fights for the microphone.

The socket lives in the user's own runtime folder ($XDG_RUNTIME_DIR, which only they may enter),
or in a folder of theirs in /tmp that is checked to be theirs alone; and either side talks only
to a peer of the same user (SO_PEERCRED). Another local user who listens first on the name can
then neither stop her from starting (she would hand over to it and exit) nor raise her window.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket as pysocket
import stat
import struct
import tempfile
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

RAISE = b"raise\n"
CONNECT_MS = 500


def server_name(config_dir: Path) -> str:
    """The socket's full path, per user and settings folder (a --config-dir profile is an
    instance of its own), in a folder only this user may enter."""
    digest = hashlib.sha256(str(Path(config_dir).resolve()).encode()).hexdigest()[:12]
    return os.path.join(_private_folder(), f"companion-{os.getuid()}-{digest}")


def _private_folder() -> str:
    """$XDG_RUNTIME_DIR when it is this user's alone, else /tmp/companion-UID made (or found)
    as this user's alone; past that, a fresh private folder (a second launch then won't find
    her: two windows, but she starts)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and _ours_alone(runtime):
        return runtime
    folder = os.path.join(tempfile.gettempdir(), f"companion-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    if _ours_alone(folder):
        return folder
    log.warning("single instance: %s is not mine alone; using a private folder", folder)
    return tempfile.mkdtemp(prefix="companion-")


def _ours_alone(folder: str) -> bool:
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def peer_uid(local: QLocalSocket) -> int | None:
    """The uid of the process at the other end of a connected local socket (SO_PEERCRED)."""
    descriptor = int(local.socketDescriptor())
    if descriptor < 0:
        return None
    try:
        with pysocket.socket(fileno=os.dup(descriptor)) as view:
            _pid, uid, _gid = struct.unpack("3i", view.getsockopt(pysocket.SOL_SOCKET, pysocket.SO_PEERCRED,
                                                                  struct.calcsize("3i")))
    except OSError:
        return None
    return uid


class SingleInstance(QObject):
    raise_requested = Signal()
    """Another launch asked for her window."""

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._server: QLocalServer | None = None

    def hand_over(self) -> bool:
        """True when another instance is running and was asked to show herself (then exit)."""
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if not socket.waitForConnected(CONNECT_MS):
            return False
        if peer_uid(socket) != os.getuid():
            # Not her: someone else's listener must not make her exit.
            log.warning("single instance: %s is answered by another user; starting anyway", self.name)
            socket.abort()
            return False
        socket.write(RAISE)
        socket.waitForBytesWritten(CONNECT_MS)
        socket.disconnectFromServer()
        return True

    def listen(self) -> bool:
        """Become the instance others hand over to; False (logged) if the name can't be taken."""
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)  # only this user
        if not server.listen(self.name):
            # A socket file left by a companion that crashed: nobody answered hand_over().
            QLocalServer.removeServer(self.name)
            if not server.listen(self.name):
                log.warning("single instance: can't listen on %s (%s)", self.name, server.errorString())
                return False
        server.newConnection.connect(self._accept)
        self._server = server
        return True

    def _accept(self) -> None:
        while self._server is not None and self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            if peer_uid(socket) != os.getuid():
                socket.abort()  # only a launch of this user's may show her
                continue
            # The server owns its sockets (deleted with it); a launch that hands over sends
            # one line and leaves.
            socket.readyRead.connect(lambda socket=socket: self._read(socket))
            if socket.bytesAvailable():
                self._read(socket)

    def _read(self, socket: QLocalSocket) -> None:
        if bytes(socket.readAll().data()).startswith(RAISE.strip()):
            self.raise_requested.emit()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
