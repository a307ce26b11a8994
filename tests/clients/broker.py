"""Starts and stops a real `strata serve` process for the client tests.

Each broker listens on a free loopback port, keeps its log under a directory the
caller owns (so a test can restart a broker on the same data) and writes its
output to a log file that the suite attaches to failing test reports.

A test that sets `listeners` itself (several listeners, port 0) gets each listener's bound
port from the broker's `strata: broker N listening on NAME host:port, ...` line
(`listener_ports`); `port` is then the PLAINTEXT listener's, or the first one's.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

from managed import ManagedProcess

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
# The line `strata serve` prints on stderr once every listener is bound.
LISTENING_LINE = re.compile(rb"strata: broker \d+ listening on (.*?) \(cluster id")


class BrokerError(RuntimeError):
    """The broker process did not start or stop as expected."""


def free_port() -> int:
    """Returns a loopback TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class StrataBroker(ManagedProcess):
    """One `strata serve` process; start/stop/kill may be repeated on the same log dir."""

    STOP_TIMEOUT_S = STOP_TIMEOUT_S
    error = BrokerError

    def describe(self) -> str:
        return "strata serve"

    def __init__(self, binary: Path, log_dir: Path, output_dir: Path, overrides: dict[str, str] | None = None,
                 keep_port: bool = False):
        self.binary = binary
        self.log_dir = log_dir
        self.output_dir = output_dir
        self.overrides = dict(overrides or {})
        # keep_port: the port of the first start is kept across restarts (a cluster broker
        # registers its address in etcd, and peers and clients look for it there); otherwise
        # every start takes a free one.
        self.keep_port = keep_port
        self.port: int | None = None
        # Listener name -> bound port, from the broker's output (`listeners` set by the caller).
        self.listener_ports: dict[str, int] = {}
        self.fresh_port = False  # whether this start's port was just picked (and may be changed)
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.output_files: list[Path] = []

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise BrokerError("broker has not been started")
        return f"127.0.0.1:{self.port}"

    def bootstrap_of(self, listener: str) -> str:
        """The loopback address of the named listener (when the caller set `listeners`)."""
        if listener not in self.listener_ports:
            raise BrokerError(f"no listener {listener} among {sorted(self.listener_ports)}")
        return f"127.0.0.1:{self.listener_ports[listener]}"

    def command(self) -> list[str]:
        settings = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir),
            **self.overrides,
        }
        cmd = [str(self.binary), "serve"]
        for key, value in settings.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self) -> "StrataBroker":
        """Starts the broker and waits until its port accepts connections."""
        self.spawn()
        return self.wait_ready()

    def spawn(self) -> "StrataBroker":
        """Starts the process without waiting for it (brokers of a cluster start together)."""
        if self.process is not None and self.process.poll() is None:
            raise BrokerError("broker is already running")
        self.fresh_port = not (self.keep_port and self.port is not None)
        if self.fresh_port:
            self.port = free_port()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        out_path = self.output_dir / f"strata-{self.starts}.log"
        self.output_files.append(out_path)
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        env.setdefault("RUST_BACKTRACE", "1")
        env.setdefault("NO_COLOR", "1")
        with open(out_path, "wb") as out:
            self.process = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        return self

    def wait_ready(self) -> "StrataBroker":
        """Waits until the port accepts connections; kills the broker if it does not in time."""
        if self.process is None:
            raise BrokerError("broker has not been started")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                if self._lost_port_race() and time.monotonic() < deadline:
                    # Another process took the port between free_port() and the bind: a fresh
                    # port is picked again, a kept one is retried until its holder lets go.
                    if not self.fresh_port:
                        time.sleep(0.2)
                    self.spawn()
                    continue
                raise BrokerError(f"strata serve exited with code {code} before listening:\n{self.output_tail()}")
            if "listeners" in self.overrides:
                if self._read_listener_ports():
                    return self
            elif port_accepts(self.port):
                return self
            time.sleep(0.05)
        self.kill()
        raise BrokerError(f"strata serve did not accept connections within {READY_TIMEOUT_S}s:\n{self.output_tail()}")

    def _read_listener_ports(self) -> bool:
        """Parses this start's "listening on" line into `listener_ports` (and `port`); whether
        the line was there yet."""
        try:
            match = LISTENING_LINE.search(self.output_files[-1].read_bytes())
        except OSError:
            return False
        if match is None:
            return False
        ports = {}
        for entry in match.group(1).decode().split(", "):
            name, addr = entry.rsplit(" ", 1)
            ports[name] = int(addr.rsplit(":", 1)[1])
        self.listener_ports = ports
        self.port = ports.get("PLAINTEXT", next(iter(ports.values())))
        return True

    def _lost_port_race(self) -> bool:
        """Whether this start failed only because its port was taken (the OS error's text is
        the one signal a child process's log gives)."""
        try:
            return b"Address already in use" in self.output_files[-1].read_bytes()
        except OSError:
            return False

