"""Raw HTTP/1.1 on a real socket: the request line goes out exactly as written.

HTTP clients (and Django's test client) normalise paths: ``..`` segments are
resolved and ``%2e`` decoded before anything is sent, so a traversal can only
be tested with the bytes an attacker would send.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)


def _read_response(sock: socket.socket) -> RawResponse:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before the headers ended: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        length = int(headers["content-length"])
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body = rest[:length]
    elif headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += sock.recv(65536)
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            while len(rest) < size + 2:
                more = sock.recv(65536)
                if not more:
                    break
                rest += more
            if size == 0:
                break
            body += rest[:size]
            rest = rest[size + 2 :]
    else:
        body = rest
    return RawResponse(status, headers, body)


def request(
    base_url: str,
    method: str,
    raw_path: str,
    *,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    body: bytes = b"",
    send_body: bool = True,
    timeout: float = 20.0,
) -> RawResponse:
    """Send ``method raw_path`` byte for byte; ``send_body=False`` sends only the
    head (its Content-Length promises a body that never comes). ``headers`` as
    a list sends each pair on its own line (a name may repeat); with
    ``Transfer-Encoding`` given, ``body`` is sent as it is (already chunked)."""
    parts = urlsplit(base_url)
    assert parts.hostname is not None
    assert parts.port is not None
    lines = [f"{method} {raw_path} HTTP/1.1", f"Host: {parts.hostname}:{parts.port}"]
    given = list(headers.items()) if isinstance(headers, dict) else list(headers or ())
    names = {name.lower() for name, _ in given}
    all_headers = ([] if "connection" in names else [("Connection", "close")]) + given
    if body and not names & {"content-length", "transfer-encoding"}:
        all_headers.append(("Content-Length", str(len(body))))
    lines += [f"{name}: {value}" for name, value in all_headers]
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        if send_body and body:
            sock.sendall(body)
        return _read_response(sock)
