"""A switchboard between the served app and a real PostgreSQL or Redis, for
the tests that take one of them away under load.

A TCP forwarder on a port of its own: ``cut`` closes every connection and
refuses new ones (the server gone), ``restore`` listens again on the same
port (it is back, with no connection open), ``stall`` closes every
connection and then accepts new ones and never answers them (a frozen
server, a half-open network path), ``unstall`` ends that. The app is given
``through``: the service's URL, reached through the switchboard. The
fixtures ``postgres_board`` and ``redis_board`` (``tests/production/conftest.py``)
make one for the test and cut it at its end.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit

#: The port a URL of each scheme means when it names none.
DEFAULT_PORTS = {"postgres": 5432, "postgresql": 5432, "redis": 6379, "rediss": 6379}


class Switchboard:
    """A TCP forwarder to the server at ``url`` that can be cut, restored and stalled."""

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or DEFAULT_PORTS[parts.scheme])
        self.port = 0
        self.stalled = False
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._held: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.restore()

    @property
    def through(self) -> str:
        """``url`` through the switchboard: its credentials, database and
        options kept, its host and port the switchboard's."""
        parts = urlsplit(self.url)
        credentials, at, _host = parts.netloc.rpartition("@")
        return parts._replace(netloc=f"{credentials}{at}127.0.0.1:{self.port}").geturl()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(256)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            if listener is not None:
                # shutdown first: a close alone leaves the thread blocked in
                # accept() holding the socket, listening (and the port taken).
                with contextlib.suppress(OSError):
                    listener.shutdown(socket.SHUT_RDWR)
                listener.close()
            self._close_open()
        self.unstall()

    def stall(self) -> None:
        with self._lock:
            self.stalled = True
            self._close_open()

    def unstall(self) -> None:
        with self._lock:
            self.stalled = False
            for conn in self._held:
                conn.close()
            self._held.clear()

    def _close_open(self) -> None:
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            if self.stalled:
                with self._lock:
                    self._held.append(client)  # read nothing, answer nothing
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.close()
