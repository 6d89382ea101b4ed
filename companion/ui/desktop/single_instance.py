"""One companion per user and settings folder: a second launch asks the first to show her window
(over a local socket) and exits, instead of opening a second window that fights for the microphone."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

RAISE = b"raise\n"
CONNECT_MS = 500


def server_name(config_dir: Path) -> str:
    """Per user and settings folder (a --config-dir profile is an instance of its own)."""
    digest = hashlib.sha256(str(Path(config_dir).resolve()).encode()).hexdigest()[:12]
    return f"companion-{os.getuid()}-{digest}"


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
