"""The one wire format of a supervisor and its child: frames of a header (request id, payload
length, how many file descriptors are passed beside it with ``SCM_RIGHTS``) and a pickled
payload, both ways (:mod:`.supervisor`'s side, :mod:`.child`'s side).
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Sequence

from rewardrouter.errors import message_of
from rewardrouter.supervise.boot import close_all

#: A frame's header: request id (0: the child's setup, both ways), payload length, and how many
#: file descriptors came with it (passed with ``SCM_RIGHTS`` beside the header).
HEADER = struct.Struct("!QQI")
#: The most file descriptors one request may carry.
MAX_FDS = 16
#: The most bytes read from the socket at once (a payload of any size arrives in such pieces).
BUFFER = 4 * 2**20
#: What an error message from the child is cut to.
MESSAGE_CHARS = 500


def send_frame(sock: socket.socket, ident: int, data: bytes, fds: Sequence[int] = ()) -> None:
    """One frame to ``sock`` (its sender's lock held): the header, with ``fds`` passed beside
    it, then the payload as it is, never copied behind the header (a request's body may be many
    megabytes)."""
    header = HEADER.pack(ident, len(data), len(fds))
    if fds:
        sent = socket.send_fds(sock, [header], list(fds))
        sock.sendall(header[sent:])
    else:
        sock.sendall(header)
    sock.sendall(data)


def receive(sock: socket.socket) -> tuple[int, bytes, list[int]]:
    """One frame from ``sock``: id, payload, and the file descriptors that came with it (the
    receiver's to close). ``EOFError`` at the socket's end."""
    if hasattr(socket, "recv_fds"):
        head, fds, flags, _ = socket.recv_fds(sock, HEADER.size, MAX_FDS)
        for fd in fds:  # as every descriptor Python opens: a program it execs gets none
            os.set_inheritable(fd, False)
        if flags & socket.MSG_CTRUNC:
            close_all(fds)
            raise OSError("a frame carried more file descriptors than this process could take")
    else:
        head, fds = sock.recv(HEADER.size), []
    if not head:
        raise EOFError
    try:
        ident, length, count = HEADER.unpack(head + _exactly(sock, HEADER.size - len(head)))
        if count != len(fds):
            raise OSError(f"a frame announced {count} file descriptor(s) and carried {len(fds)}")
        return ident, _exactly(sock, length), fds
    except BaseException:
        close_all(fds)
        raise


def _exactly(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``sock``; ``EOFError`` at its end."""
    parts = []
    while size:
        part = sock.recv(min(size, BUFFER))
        if not part:
            raise EOFError
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def describe(exc: BaseException) -> str:
    """``"ValueError: <its message>"``, cut to :data:`MESSAGE_CHARS` and safe against a
    ``__str__`` that raises: how an exception crosses from a child."""
    return f"{type(exc).__name__}: {message_of(exc, MESSAGE_CHARS)}"
