"""The baseline for the raw-fetch run: the same bytes copied over a plain loopback TCP socket.

A child process sends the partition's segment files with sendfile(2) (what a zero-copy broker
does at best) and this process receives them with the same recv_into loop as rawfetch.py, so the
ratio between the two isolates the broker's own cost.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
from pathlib import Path

RECV_CHUNK = 1 << 20


def _send_files(port: int, files: list[str]) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        # No SO_SNDBUF: the broker leaves its send buffers to the kernel's autotuning, and a
        # fixed buffer would make this baseline slower than the path it is compared with.
        for name in files:
            with open(name, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                sent = 0
                while sent < size:
                    sent += os.sendfile(sock.fileno(), f.fileno(), sent, size - sent)


def copy_files(files: list[Path]) -> tuple[int, float]:
    """Sends the files over loopback; returns (bytes received, seconds)."""
    total = sum(f.stat().st_size for f in files)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        ctx = multiprocessing.get_context("spawn")
        sender = ctx.Process(target=_send_files, args=(port, [str(f) for f in files]))
        sender.start()
        conn, _ = listener.accept()
        with conn:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            buf = memoryview(bytearray(RECV_CHUNK))
            got = 0
            start = time.perf_counter()
            while got < total:
                n = conn.recv_into(buf, RECV_CHUNK)
                if n == 0:
                    break
                got += n
            seconds = time.perf_counter() - start
        sender.join(timeout=60)
    if got != total:
        raise RuntimeError(f"loopback copy received {got} of {total} bytes")
    return got, seconds
