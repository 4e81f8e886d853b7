"""Socket helpers shared by the exporter's unit and system tests (no process started)."""

from __future__ import annotations

import socket


def closed_by_peer(sock: socket.socket, within: float = 0.0) -> bool:
    """Whether the other end closes ``sock`` (EOF or reset) within ``within`` seconds
    (0: as things stand now)."""
    if within:
        sock.settimeout(within)
    else:
        sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except (BlockingIOError, TimeoutError):
        return False
    except ConnectionResetError:
        return True
