"""Fixtures for the real-client compatibility suite.

- `strata_bin`: the broker binary (STRATA_BIN, else target/release/strata).
- `broker_factory` / `broker`: `strata serve` on a free loopback port with a temporary
  `log.dirs`; stopped on teardown, its output attached to the report of a failing test.
- `java`: compiles tests/clients/java/*.java once per session against the Kafka client
  jars in .test-deps/jars and runs one program, returning its JSON-line output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from broker import StrataBroker

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


@pytest.fixture
def broker_factory(request, strata_bin, tmp_path):
    """Creates brokers (not yet started) with their own log dir; all are stopped on teardown."""
    brokers: list[StrataBroker] = []
    request.node.strata_brokers = brokers

    def make(overrides: dict[str, str] | None = None, log_dir: Path | None = None) -> StrataBroker:
        index = len(brokers)
        out_dir = tmp_path / f"broker-{index}-output"
        out_dir.mkdir()
        b = StrataBroker(strata_bin, log_dir or tmp_path / f"broker-{index}-data", out_dir, overrides)
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
