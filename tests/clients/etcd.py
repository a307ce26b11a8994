"""Starts and stops real etcd processes on loopback for the cluster tests.

`EtcdServer` is one etcd member with its own client and peer ports (free loopback ports
chosen once, so a restart on the same data dir finds the member where its peers and the
brokers expect it), a data dir the caller owns and its output in a log file that the suite
attaches to failing test reports. `EtcdCluster` wires three members into one etcd cluster,
for the tests that stop members and all of etcd.

Readiness is `etcdctl endpoint health` (API v3), which succeeds only once the member has a
leader and can commit: a member of a three-member cluster started alone never becomes
healthy, so the cluster starts every member first and waits afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from broker import free_port
from managed import ManagedProcess

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
# Loopback is fast and the tests kill members on purpose: elect a new leader in about half a
# second instead of etcd's default one to ten seconds.
TUNING = ["--heartbeat-interval", "50", "--election-timeout", "500"]


class EtcdError(RuntimeError):
    """An etcd process did not start or stop as expected."""


def etcd_binary() -> str:
    path = os.environ.get("STRATA_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
    if not Path(path).is_file():
        raise EtcdError("etcd not found: run scripts/install-test-deps.sh (Debian package etcd-server)")
    return path


def etcdctl(endpoints: str, *args: str, timeout_s: float = 2.0) -> subprocess.CompletedProcess:
    """Runs `etcdctl --endpoints=... ARGS` (API v3) and returns the finished process, never raising
    on a non-zero exit: callers check `returncode`, since some tests expect a failure."""
    ctl = shutil.which("etcdctl") or "/usr/bin/etcdctl"
    env = dict(os.environ, ETCDCTL_API="3")
    cmd = [ctl, f"--endpoints={endpoints}", "--dial-timeout=1s", f"--command-timeout={timeout_s:g}s", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s + 10)


class EtcdServer(ManagedProcess):
    """One etcd member; start/stop/kill may be repeated on the same data dir.

    Alone (`initial_cluster` None) it is a one-member cluster. As part of `EtcdCluster` it is
    told every member's peer URL and the cluster token.
    """

    STOP_TIMEOUT_S = STOP_TIMEOUT_S
    error = EtcdError

    def describe(self) -> str:
        return f"etcd {self.name}"

    def __init__(self, data_dir: Path, output_dir: Path, name: str = "etcd0",
                 initial_cluster: str | None = None, cluster_token: str | None = None):
        self.name = name
        self.data_dir = data_dir
        self.output_dir = output_dir
        self.client_port = free_port()
        self.peer_port = free_port()
        self.initial_cluster = initial_cluster or f"{name}={self.peer_url}"
        self.cluster_token = cluster_token or f"strata-test-{uuid.uuid4().hex[:8]}"
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.output_files: list[Path] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def endpoints(self) -> str:
        """The same as `endpoint`, so a single server and a cluster can be used alike."""
        return self.endpoint

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    def command(self) -> list[str]:
        return [
            etcd_binary(),
            "--name", self.name,
            "--data-dir", str(self.data_dir),
            "--listen-client-urls", self.endpoint,
            "--advertise-client-urls", self.endpoint,
            "--listen-peer-urls", self.peer_url,
            "--initial-advertise-peer-urls", self.peer_url,
            "--initial-cluster", self.initial_cluster,
            "--initial-cluster-token", self.cluster_token,
            # Ignored once the data dir holds a member: a restart rejoins with what it stored.
            "--initial-cluster-state", "new",
            "--logger", "zap", "--log-outputs", "stderr",
            *TUNING,
        ]

    def spawn(self) -> "EtcdServer":
        """Starts the process without waiting for it to serve (see `wait_ready`)."""
        if self.running():
            raise EtcdError(f"etcd {self.name} is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        out_path = self.output_dir / f"etcd-{self.name}-{self.starts}.log"
        self.output_files.append(out_path)
        with open(out_path, "wb") as out:
            self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        return self

    def healthy(self) -> bool:
        return etcdctl(self.endpoint, "endpoint", "health", timeout_s=1.0).returncode == 0

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> "EtcdServer":
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise EtcdError(f"etcd {self.name} exited with code {code} before serving:\n{self.output_tail()}")
            if self.healthy():
                return self
            time.sleep(0.1)
        raise EtcdError(f"etcd {self.name} not healthy within {timeout_s}s:\n{self.output_tail()}")

    def start(self) -> "EtcdServer":
        """Starts the member and waits until it is healthy (for a cluster member: until the
        cluster has a quorum, so start the others first or use `EtcdCluster.start_all`)."""
        self.spawn()
        try:
            return self.wait_ready()
        except EtcdError:
            self.kill()
            raise

    def ctl(self, *args: str, timeout_s: float = 2.0) -> subprocess.CompletedProcess:
        return etcdctl(self.endpoint, *args, timeout_s=timeout_s)



class EtcdCluster:
    """Three etcd members on loopback forming one cluster (quorum: two)."""

    def __init__(self, base_dir: Path, size: int = 3):
        token = f"strata-test-{uuid.uuid4().hex[:8]}"
        names = [f"etcd{i}" for i in range(size)]
        self.members = [EtcdServer(base_dir / f"{name}-data", base_dir / f"{name}-output", name=name,
                                   cluster_token=token) for name in names]
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for m in self.members:
            m.initial_cluster = initial

    @property
    def endpoints(self) -> str:
        """Every member's client URL, comma-joined (the form `strata.metadata.etcd.endpoints` takes)."""
        return ",".join(m.endpoint for m in self.members)

    def start_all(self) -> "EtcdCluster":
        """Starts every stopped member, then waits until each is healthy."""
        for m in self.members:
            if not m.running():
                m.spawn()
        try:
            for m in self.members:
                m.wait_ready()
        except EtcdError:
            self.kill_all()
            raise
        return self

    def start(self, index: int, wait: bool = True) -> EtcdServer:
        """Restarts one member on its data dir; waits for health only when `wait` (a member cannot be
        healthy while the cluster has no quorum)."""
        member = self.members[index].spawn()
        return member.wait_ready() if wait else member

    def stop(self, index: int) -> int:
        """Stops member `index` cleanly (SIGTERM): a leader hands leadership over first, so no
        request in flight waits out etcd's request timeout. `kill` is the crash."""
        return self.members[index].stop()

    def kill(self, index: int) -> None:
        self.members[index].kill()

    def stop_all(self) -> None:
        for m in self.members:
            m.stop()

    def kill_all(self) -> None:
        for m in self.members:
            m.kill()

    def running_endpoints(self) -> str:
        return ",".join(m.endpoint for m in self.members if m.running())

    def ctl(self, *args: str, timeout_s: float = 2.0) -> subprocess.CompletedProcess:
        """etcdctl against every member (the client picks one that answers)."""
        return etcdctl(self.endpoints, *args, timeout_s=timeout_s)

    def output_tail(self, max_bytes: int = 20_000) -> str:
        return "\n".join(m.output_tail(max_bytes // len(self.members)) for m in self.members)
