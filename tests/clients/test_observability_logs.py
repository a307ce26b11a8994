"""The broker's logs as operators consume them: `strata.log.format=json`, the request logger and
start-up recovery progress.

Guards against a JSON log with a stray non-JSON line (log shippers drop or choke on it), a request
logger that misses Produce or Fetch or leaks a SASL password into the log, and a restart after a
crash that recovers silently (no progress lines: stuck and slow look the same).
"""

from __future__ import annotations

import json
import re

import pytest
from confluent_kafka import Producer

from records import consume_confluent, create_topic

PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
# Distinct, so that any occurrence in the log is this password leaking.
ALICE_PASSWORD = "alice-obs-Pw-61q"
REQUEST_LOGGER = "kafka.request.logger"


def json_settings() -> dict[str, str]:
    return {
        "strata.log.format": "json",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f'{PLAIN_LOGIN} required user_alice="{ALICE_PASSWORD}";',
    }


def produce(bootstrap: str, topic: str, count: int, extra: dict[str, str] | None = None) -> None:
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **(extra or {})})
    for i in range(count):
        producer.produce(topic, key=f"k{i}", value=f"v{i}", partition=0,
                         on_delivery=lambda err, _msg: err and errors.append(str(err)))
    assert producer.flush(30) == 0
    assert errors == []


def output(broker) -> str:
    return b"".join(p.read_bytes() for p in broker.output_files).decode("utf-8", "replace")


def test_json_logs_carry_request_lines_and_no_password(broker_factory, monkeypatch):
    monkeypatch.setenv("RUST_LOG", f"info,{REQUEST_LOGGER}=debug")
    b = broker_factory(json_settings()).start()
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": ALICE_PASSWORD}
    sasl_bootstrap = b.bootstrap_of("SASL_PLAINTEXT")
    create_topic(b.bootstrap, "obs-json")
    produce(sasl_bootstrap, "obs-json", 20, {**sasl, "bootstrap.servers": sasl_bootstrap})
    got = consume_confluent(sasl_bootstrap, "obs-json", 20, extra=sasl)
    assert len(got) == 20
    b.stop()

    text = output(b)
    assert ALICE_PASSWORD not in text, "the SASL password reached the broker's log"
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            event = json.loads(line)
        except json.JSONDecodeError as e:
            pytest.fail(f"line {number} is not JSON ({e}): {line!r}")
        assert {"timestamp", "level", "target", "fields"} <= event.keys(), line
        events.append(event)

    requests = [e for e in events if e["target"] == REQUEST_LOGGER]
    by_api: dict[str, list[dict]] = {}
    for e in requests:
        assert e["level"] == "DEBUG"
        by_api.setdefault(e["fields"]["api"], []).append(e["fields"])
    assert "Produce" in by_api and "Fetch" in by_api, sorted(by_api)
    produce_line = by_api["Produce"][0]
    for key in ("version", "correlation_id", "client_id", "principal", "listener", "client_address",
                "total_time_ms", "response_size"):
        assert key in produce_line, f"{key} missing from {produce_line}"
    # Produce and Fetch went over the SASL listener as alice.
    assert any(f["principal"] == "User:alice" and f["listener"] == "SASL_PLAINTEXT"
               for f in by_api["Produce"]), by_api["Produce"]
    assert any(f["principal"] == "User:alice" for f in by_api["Fetch"]), by_api["Fetch"][:3]
    assert all(f["response_size"] > 0 for f in by_api["Fetch"])
    assert any("listening on" in e["fields"].get("message", "") for e in events)


def test_a_bad_log_format_is_refused_with_the_key_and_the_choices(strata_bin, tmp_path):
    import subprocess
    done = subprocess.run([str(strata_bin), "serve", "--override", f"log.dirs={tmp_path}",
                           "--override", "strata.log.format=yaml"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done
    assert "strata.log.format" in done.stderr and "text, json" in done.stderr, done.stderr


RECOVERY = re.compile(r"recovery progress: loaded (\d+)/(\d+) partitions.*?, (\d+) segments recovered")


def test_restart_after_sigkill_logs_recovery_progress(broker_factory):
    b = broker_factory({"log.segment.bytes": "4096"})
    b.start()
    create_topic(b.bootstrap, "obs-recover", partitions=3)
    for _ in range(3):
        produce(b.bootstrap, "obs-recover", 200)
    b.kill()
    b.start()
    restart = b.output_files[-1].read_text(errors="replace")
    lines = RECOVERY.findall(restart)
    assert lines, f"no recovery progress line after the restart:\n{restart[-3000:]}"
    done, total, recovered = map(int, lines[-1])
    # The final line: every partition of the dir loaded, and the unclean shutdown made recovery
    # re-read segments.
    assert total >= 3 and done == total, lines
    assert recovered >= 1, lines
    assert "ETA" in restart or "done in" in restart
