"""Fixtures for the real-client compatibility suite.

- `strata_bin`: the broker binary (STRATA_BIN, else target/release/strata).
- `broker_factory` / `broker`: `strata serve` on a free loopback port with a temporary
  `log.dirs`; stopped on teardown, its output attached to the report of a failing test.
- `etcd` / `etcd_cluster`: a real etcd on loopback, one member or three (etcd.py); stopped on
  teardown, their output attached to the report of a failing test.
- `cluster_factory`: N brokers in cluster mode (node.id 1..N) on one etcd under a key prefix
  of their own, with short session timeouts (cluster.py).
- `java`: compiles tests/clients/java/*.java once per session against the Kafka client
  jars in .test-deps/jars and runs one program, returning its JSON-line output (or `spawn`s
  it, for a test that reads its lines as they come).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from broker import StrataBroker
from cluster import CLUSTER_SETTINGS, StrataCluster
from etcd import EtcdCluster, EtcdServer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
JARS = Path(os.environ.get("STRATA_TEST_JARS", ROOT / ".test-deps" / "jars"))
JAVA_TIMEOUT_S = 180


def _default_binary() -> Path:
    if "STRATA_BIN" in os.environ:
        return Path(os.environ["STRATA_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "strata"


@pytest.fixture(scope="session")
def strata_bin() -> Path:
    path = _default_binary()
    if not path.is_file():
        pytest.fail(f"strata binary not found at {path}: run `cargo build --release -p strata` or set STRATA_BIN")
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for index, broker in enumerate(getattr(item, "strata_brokers", [])):
            report.sections.append((f"strata broker {index} output", broker.output_tail()))
        for server in getattr(item, "etcd_servers", []):
            report.sections.append((f"etcd {server.name} output", server.output_tail()))


@pytest.fixture
def broker_factory(request, strata_bin, tmp_path):
    """Creates brokers (not yet started) with their own log dir; all are stopped on teardown."""
    brokers: list[StrataBroker] = []
    request.node.strata_brokers = brokers

    def make(overrides: dict[str, str] | None = None, log_dir: Path | None = None,
             keep_port: bool = False) -> StrataBroker:
        index = len(brokers)
        out_dir = tmp_path / f"broker-{index}-output"
        out_dir.mkdir()
        b = StrataBroker(strata_bin, log_dir or tmp_path / f"broker-{index}-data", out_dir, overrides, keep_port)
        brokers.append(b)
        return b

    yield make
    for b in brokers:
        if b.running():
            try:
                b.stop()
            except Exception:
                b.kill()


@pytest.fixture
def broker(broker_factory) -> StrataBroker:
    """A started broker with default settings."""
    return broker_factory().start()


def _etcd_servers(request) -> list[EtcdServer]:
    if not hasattr(request.node, "etcd_servers"):
        request.node.etcd_servers = []
    return request.node.etcd_servers


def _stop_brokers_before_etcd(request) -> None:
    """Brokers shut down cleanly only while their metadata store is there; the test may have
    asked for the brokers before etcd, so that fixture order would tear etcd down first."""
    for b in getattr(request.node, "strata_brokers", []):
        if b.running():
            try:
                b.stop()
            except Exception:
                b.kill()


@pytest.fixture
def etcd(request, tmp_path) -> EtcdServer:
    """A started one-member etcd with its own data dir."""
    server = EtcdServer(tmp_path / "etcd-data", tmp_path / "etcd-output")
    _etcd_servers(request).append(server)
    server.start()
    yield server
    _stop_brokers_before_etcd(request)
    server.kill()


@pytest.fixture
def etcd_cluster(request, tmp_path) -> EtcdCluster:
    """A started three-member etcd cluster on loopback."""
    cluster = EtcdCluster(tmp_path / "etcd-cluster")
    _etcd_servers(request).extend(cluster.members)
    cluster.start_all()
    yield cluster
    _stop_brokers_before_etcd(request)
    cluster.kill_all()


@pytest.fixture
def cluster_factory(request, broker_factory):
    """Starts brokers in cluster mode on the given etcd endpoints and waits until each lists all.

    `make(endpoints, count=3, racks=None, overrides=None, first_node_id=1)`: node ids
    first_node_id.., one log dir each and one port each (picked at the first start, kept across
    restarts), all under one
    `strata.metadata.etcd.prefix` unique to the test. Returns the test's `StrataCluster`
    (`.bootstrap` is every broker's address); a second call adds brokers to the same one.
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:60]
    prefix = f"/strata-test/{name}-{uuid.uuid4().hex[:8]}"
    clusters: list[StrataCluster] = []

    def make(endpoints: str, count: int = 3, racks: list[str] | None = None,
             overrides: dict[str, str] | None = None, first_node_id: int = 1,
             wait: bool = True) -> StrataCluster:
        if racks is not None and len(racks) != count:
            raise ValueError(f"{count} brokers but {len(racks)} racks")
        if not clusters:
            clusters.append(StrataCluster({}, endpoints, prefix))
        cluster = clusters[0]
        if cluster.etcd_endpoints != endpoints:
            raise ValueError("one cluster per test: every call takes the same etcd endpoints")
        node_ids = range(first_node_id, first_node_id + count)
        if taken := set(node_ids) & set(cluster.brokers):
            raise ValueError(f"node ids {sorted(taken)} already exist (pass first_node_id)")
        brokers = {}
        for i, node_id in enumerate(node_ids):
            settings = {
                "node.id": str(node_id),
                "strata.metadata.etcd.endpoints": endpoints,
                "strata.metadata.etcd.prefix": prefix,
                **CLUSTER_SETTINGS,
            }
            if racks is not None:
                settings["broker.rack"] = racks[i]
            settings.update(overrides or {})
            brokers[node_id] = broker_factory(settings, keep_port=True)
        # Start them together: a broker may wait for its peers before it listens.
        for b in brokers.values():
            b.spawn()
        for b in brokers.values():
            b.wait_ready()
        cluster.brokers.update(brokers)
        if wait:
            cluster.wait_for_members()
        return cluster

    return make


class JavaRunner:
    """Runs the compiled Java client programs; each prints one JSON object per line."""

    def __init__(self, classes: Path):
        self.classpath = os.pathsep.join([str(classes), str(JARS / "*")])

    def run(self, program: str, *args: str, timeout: float = JAVA_TIMEOUT_S) -> list[dict]:
        proc = subprocess.run(
            ["java", "-cp", self.classpath, program, *map(str, args)],
            capture_output=True, text=True, timeout=timeout,
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"java {program} exited with {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr[-20000:]}"
            )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        return [json.loads(line) for line in lines]

    def spawn(self, program: str, *args: str) -> subprocess.Popen:
        """Starts a program without waiting for it, for a test that reads its JSON lines as they
        come (`proc.stdout`, text, stderr merged in) or kills it; the caller reaps it."""
        return subprocess.Popen(
            ["java", "-cp", self.classpath, program, *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        )


@pytest.fixture(scope="session")
def java(tmp_path_factory) -> JavaRunner:
    if shutil.which("javac") is None:
        pytest.fail("javac not found: run scripts/install-test-deps.sh")
    jars = sorted(JARS.glob("*.jar"))
    if not any(j.name.startswith("kafka-clients") for j in jars):
        pytest.fail(f"no kafka-clients jar in {JARS}: run scripts/install-test-deps.sh")
    classes = tmp_path_factory.mktemp("java-classes")
    sources = sorted(str(p) for p in (HERE / "java").glob("*.java"))
    proc = subprocess.run(
        ["javac", "-Xlint:all", "-Werror", "-cp", os.pathsep.join(map(str, jars)), "-d", str(classes), *sources],
        capture_output=True, text=True, timeout=JAVA_TIMEOUT_S,
    )
    if proc.returncode != 0:
        pytest.fail(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
    return JavaRunner(classes)
