"""Secured listeners seen by real clients: TLS, client certificates, SASL (PLAIN, SCRAM,
OAUTHBEARER) and KIP-368 re-authentication, with the Java client, confluent-kafka and kcat.

Guards against a secured listener that a real client cannot use (a TLS or SASL detail the broker
gets wrong), against failures a client cannot recognise (each refused client must see Kafka's
error: SaslAuthenticationException / SASL_AUTHENTICATION_FAILED / SSL handshake failure /
disconnect), against a refused client taking the broker or the listener down (a good client is
served right after each failure), against failures the operator cannot see (a WARN line for
each) and against secrets in the broker's log (no password, good or wrong, ever appears).

One broker serves the whole module, with six listeners:
PLAINTEXT; SSL (PKCS12 keystore); MTLS (SSL, `ssl.client.auth=required`, PKCS12 truststore made by
keytool); SASL_SSL (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN; inline PEM keystore, KIP-651);
SASL_PLAINTEXT (PLAIN, OAUTHBEARER with Kafka's unsecured validator); REAUTH (SASL_PLAINTEXT,
SCRAM-SHA-512, `connections.max.reauth.ms=3000`). Certificates come from pki.py at test time;
the intruder's certificate is signed by a rogue CA bearing the real CA's name, so that clients
offer it and the broker has to catch the signature.

A second broker, with Kafka's StandardAuthorizer, checks the ACL APIs through the Java Admin and
that a principal without a WRITE grant cannot produce.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from broker import StrataBroker
from pki import Pki, make_pki
from records import consume_confluent, create_topic

KCAT = shutil.which("kcat") or shutil.which("kafkacat")

# Passwords, all distinct so a leak is attributable; wrong ones are secrets too.
ALICE_SCRAM = "alice-scram-Pw-31x"
BOB_SCRAM = "bob-scram-Pw-58c"
ADMIN_SCRAM = "admin-scram-Pw-07r"
ALICE_PLAIN = "alice-plain-Pw-44d"
ADMIN_PLAIN = "admin-plain-Pw-90e"
CAROL_SCRAM = "carol-scram-Pw-85b"
WRONG = "wrong-Pw-73p"
UNKNOWN_USER_PASSWORD = "nobody-Pw-12j"

SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH_LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

LISTENERS = ["PLAINTEXT", "SSL", "MTLS", "SASL_SSL", "SASL_PLAINTEXT", "REAUTH"]


def jaas(module: str, **options: str) -> str:
    return f"{module} required " + " ".join(f'{k}="{v}"' for k, v in options.items()) + ";"


def broker_settings(pki: Pki) -> dict[str, str]:
    p12 = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.broker.p12),
        "ssl.keystore.password": pki.broker.password,
    }
    settings = {
        "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT,REAUTH:SASL_PLAINTEXT",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
        **{f"listener.name.ssl.{k}": v for k, v in p12.items()},
        **{f"listener.name.mtls.{k}": v for k, v in p12.items()},
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PKCS12",
        "listener.name.mtls.ssl.truststore.location": str(pki.truststore),
        "listener.name.mtls.ssl.truststore.password": pki.truststore_password,
        # KIP-651: the SASL_SSL listener's keystore as inline PEM.
        "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
        "listener.name.sasl_ssl.ssl.keystore.certificate.chain": pki.broker.cert.read_text(),
        "listener.name.sasl_ssl.ssl.keystore.key": pki.broker.key.read_text(),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            jaas(PLAIN_LOGIN, user_alice=ALICE_PLAIN, user_admin=ADMIN_PLAIN),
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            jaas(PLAIN_LOGIN, user_alice=ALICE_PLAIN, user_admin=ADMIN_PLAIN),
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{OAUTH_LOGIN} required ;",
        "listener.name.reauth.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.reauth.connections.max.reauth.ms": "3000",
    }
    return settings


# ---- client settings per listener -------------------------------------------------------------

def java_ssl(pki: Pki, keystore=None) -> list[str]:
    props = ["security.protocol=SSL", "ssl.truststore.type=PKCS12", f"ssl.truststore.location={pki.truststore}",
             f"ssl.truststore.password={pki.truststore_password}"]
    if keystore is not None:
        props += ["ssl.keystore.type=PKCS12", f"ssl.keystore.location={keystore.p12}",
                  f"ssl.keystore.password={keystore.password}"]
    return props


def java_sasl(pki: Pki | None, mechanism: str, login: str, **options: str) -> list[str]:
    if pki is None:
        props = ["security.protocol=SASL_PLAINTEXT"]
    else:
        props = ["security.protocol=SASL_SSL", *java_ssl(pki)[1:]]
    return props + [f"sasl.mechanism={mechanism}", f"sasl.jaas.config={jaas(login, **options)}"]


def rdkafka_conf(pki: Pki, listener: str, user: str = "alice", password: str = ALICE_SCRAM,
                 mechanism: str = "SCRAM-SHA-256") -> dict[str, str]:
    """librdkafka settings for a good client of `listener`."""
    tls = {"ssl.ca.location": str(pki.ca_cert)}
    sasl = {"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    return {
        "PLAINTEXT": {},
        "SSL": {"security.protocol": "SSL", **tls},
        "MTLS": {"security.protocol": "SSL", **tls, "ssl.certificate.location": str(pki.alice.cert),
                 "ssl.key.location": str(pki.alice.key)},
        "SASL_SSL": {"security.protocol": "SASL_SSL", **tls, **sasl},
        "SASL_PLAINTEXT": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                           "sasl.username": "alice", "sasl.password": ALICE_PLAIN},
        "REAUTH": {"security.protocol": "SASL_PLAINTEXT", **sasl, "sasl.mechanism": "SCRAM-SHA-512"},
    }[listener]


# ---- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory, strata_bin, pki, java) -> StrataBroker:
    """The module's broker, with SCRAM users alice (both mechanisms), bob (SHA-256) and admin."""
    root = tmp_path_factory.mktemp("secured-broker")
    (root / "output").mkdir()
    broker = StrataBroker(strata_bin, root / "data", root / "output", broker_settings(pki))
    broker.start()
    try:
        assert sorted(broker.listener_ports) == sorted(LISTENERS)
        out = java.run("SecureClient", "scram-users", broker.bootstrap_of("PLAINTEXT"),
                       f"alice:SCRAM-SHA-512:{ALICE_SCRAM}:8192", f"alice:SCRAM-SHA-256:{ALICE_SCRAM}:4096",
                       f"bob:SCRAM-SHA-256:{BOB_SCRAM}:4096", f"admin:SCRAM-SHA-512:{ADMIN_SCRAM}:4096")
        users = {u: sorted(map(tuple, infos)) for u, infos in out[0]["users"].items()}
        assert users == {
            "alice": [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)],
            "bob": [("SCRAM-SHA-256", 4096)],
            "admin": [("SCRAM-SHA-512", 4096)],
        }
        yield broker
    finally:
        broker.stop()


@pytest.fixture(autouse=True)
def _report_broker_output(request):
    """Attaches the module broker's output to a failing test's report (conftest's hook)."""
    if "secured" in request.fixturenames:
        request.node.strata_brokers = [request.getfixturevalue("secured")]
    yield


def all_secrets(pki: Pki) -> list[str]:
    return [ALICE_SCRAM, BOB_SCRAM, ADMIN_SCRAM, CAROL_SCRAM, ALICE_PLAIN, ADMIN_PLAIN, BOB_PLAIN, WRONG, UNKNOWN_USER_PASSWORD,
            *pki.secrets(), pki.broker.key.read_text().splitlines()[1]]


# ---- helpers ---------------------------------------------------------------------------------

def broker_log(broker: StrataBroker) -> str:
    return broker.output_files[-1].read_text(errors="replace")


class LogMark:
    """The broker's output from a point on."""

    def __init__(self, broker: StrataBroker):
        self.broker = broker
        self.offset = broker.output_files[-1].stat().st_size

    def new_lines(self) -> list[str]:
        with open(self.broker.output_files[-1], "rb") as f:
            f.seek(self.offset)
            return f.read().decode(errors="replace").splitlines()

    def wait_warn(self, text: str, timeout_s: float = 10.0) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            hits = [line for line in self.new_lines() if " WARN " in line and text in line]
            if hits:
                return hits[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no WARN line with {text!r} in the broker's output since the mark:\n"
                                     + "\n".join(self.new_lines()[-30:]))
            time.sleep(0.1)


def assert_no_secrets(broker: StrataBroker, pki: Pki) -> None:
    log = broker_log(broker)
    leaked = [s for s in all_secrets(pki) if s in log]
    assert not leaked, f"the broker's output contains secrets: {leaked}"


def assert_produced_and_consumed(out: list[dict], prefix: str, count: int) -> None:
    by_event = {line["event"]: line for line in out}
    assert by_event["produced"]["offsets"] == list(range(count))
    assert by_event["consumed"]["records"] == [[i, f"{prefix}-key-{i}", f"{prefix}-value-{i}"] for i in range(count)]


def serves_good_client(broker: StrataBroker, pki: Pki, listener: str) -> None:
    """A good librdkafka client gets metadata through `listener` (the broker is still up)."""
    assert broker.running(), f"the broker exited:\n{broker.output_tail()}"
    client = AdminClient({"bootstrap.servers": broker.bootstrap_of(listener), **rdkafka_conf(pki, listener)})
    meta = client.list_topics(timeout=20)
    assert [b.port for b in meta.brokers.values()] == [broker.listener_ports[listener]]


def rdkafka_round_trip(broker: StrataBroker, conf: dict[str, str], topic: str, count: int) -> None:
    """Produces `count` records with confluent-kafka over `conf`'s listener and reads them back."""
    delivered: list[int] = []
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append(msg.offset())

    producer = Producer({**conf, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=f"k{i}", value=f"v{i}", partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert errors == []
    assert delivered == list(range(count))
    got = consume_confluent(conf["bootstrap.servers"], topic, count, extra=conf)
    assert [(r.offset, r.key, r.value) for r in got] == [(i, f"k{i}".encode(), f"v{i}".encode())
                                                         for i in range(count)]


# ---- good clients ----------------------------------------------------------------------------

def test_java_ssl_with_truststore(secured, pki, java):
    create_topic(secured.bootstrap, "java-ssl")
    out = java.run("SecureClient", "produce-consume", secured.bootstrap_of("SSL"), "java-ssl", 100, "ssl",
                   *java_ssl(pki))
    assert_produced_and_consumed(out, "ssl", 100)


def test_java_ssl_client_certificate_required(secured, pki, java):
    create_topic(secured.bootstrap, "java-mtls")
    out = java.run("SecureClient", "produce-consume", secured.bootstrap_of("MTLS"), "java-mtls", 100, "mtls",
                   *java_ssl(pki, keystore=pki.alice))
    assert_produced_and_consumed(out, "mtls", 100)

    mark = LogMark(secured)
    probe = java.run("SecureClient", "probe", secured.bootstrap_of("MTLS"), *java_ssl(pki))
    assert [(p["event"], p["class"]) for p in probe] == [("error", "SslAuthenticationException")], probe
    assert "peer sent no certificates" in mark.wait_warn("TLS handshake failed")
    serves_good_client(secured, pki, "MTLS")


def test_java_sasl_ssl_scram_sha_512(secured, pki, java):
    create_topic(secured.bootstrap, "java-scram")
    out = java.run("SecureClient", "produce-consume", secured.bootstrap_of("SASL_SSL"), "java-scram", 100, "scram",
                   *java_sasl(pki, "SCRAM-SHA-512", SCRAM_LOGIN, username="alice", password=ALICE_SCRAM))
    assert_produced_and_consumed(out, "scram", 100)


def test_java_sasl_plaintext_plain(secured, pki, java):
    create_topic(secured.bootstrap, "java-plain")
    out = java.run("SecureClient", "produce-consume", secured.bootstrap_of("SASL_PLAINTEXT"), "java-plain", 100,
                   "plain", *java_sasl(None, "PLAIN", PLAIN_LOGIN, username="alice", password=ALICE_PLAIN))
    assert_produced_and_consumed(out, "plain", 100)


def test_java_oauthbearer_unsecured_token(secured, pki, java):
    create_topic(secured.bootstrap, "java-oauth")
    out = java.run("SecureClient", "produce-consume", secured.bootstrap_of("SASL_PLAINTEXT"), "java-oauth", 100,
                   "oauth", *java_sasl(None, "OAUTHBEARER", OAUTH_LOGIN, unsecuredLoginStringClaim_sub="alice"))
    assert_produced_and_consumed(out, "oauth", 100)


def test_confluent_sasl_ssl_scram_sha_256(secured, pki):
    create_topic(secured.bootstrap, "ck-scram")
    conf = {"bootstrap.servers": secured.bootstrap_of("SASL_SSL"), **rdkafka_conf(pki, "SASL_SSL")}
    rdkafka_round_trip(secured, conf, "ck-scram", 100)


def test_confluent_ssl_client_certificate(secured, pki):
    create_topic(secured.bootstrap, "ck-mtls")
    conf = {"bootstrap.servers": secured.bootstrap_of("MTLS"), **rdkafka_conf(pki, "MTLS")}
    rdkafka_round_trip(secured, conf, "ck-mtls", 100)

    # The connection's principal is the certificate's subject through ssl.principal.mapping.rules
    # (CN=alice,OU=clients,O=Strata -> alice); the broker names it when SCRAM credentials change.
    mark = LogMark(secured)
    client = AdminClient(conf)
    futures = client.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), CAROL_SCRAM.encode())])
    futures["carol"].result(timeout=30)
    altered = [line for line in mark.new_lines() if "SCRAM credentials altered" in line]
    assert len(altered) == 1 and "principal=User:alice " in altered[0] + " ", altered


def test_kcat_sasl_ssl_plain(secured, pki, tmp_path):
    if KCAT is None:
        pytest.fail("kcat not found: run scripts/install-test-deps.sh")
    create_topic(secured.bootstrap, "kcat-plain")
    common = ["-b", secured.bootstrap_of("SASL_SSL"), "-X", "security.protocol=SASL_SSL",
              "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", f"sasl.password={ALICE_PLAIN}",
              "-X", f"ssl.ca.location={pki.ca_cert}"]
    data = tmp_path / "records.txt"
    data.write_text("".join(f"k{i}:v{i}\n" for i in range(50)))

    def kcat(*args: str) -> str:
        proc = subprocess.run([KCAT, *common, *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"kcat {args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    kcat("-P", "-t", "kcat-plain", "-p", "0", "-K", ":", "-l", str(data))
    out = kcat("-C", "-t", "kcat-plain", "-p", "0", "-e", "-o", "beginning", "-f", "%o %k %s\n")
    assert out.splitlines() == [f"{i} k{i} v{i}" for i in range(50)]


def test_kafka_python_sasl_ssl_scram_sha_512(secured, pki):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition

    create_topic(secured.bootstrap, "kp-scram")
    conf = dict(bootstrap_servers=secured.bootstrap_of("SASL_SSL"), security_protocol="SASL_SSL",
                ssl_cafile=str(pki.ca_cert), sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                sasl_plain_password=ALICE_SCRAM)
    producer = KafkaProducer(**conf)
    try:
        offsets = [producer.send("kp-scram", key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
                   .get(timeout=30).offset for i in range(50)]
    finally:
        producer.close()
    assert offsets == list(range(50))
    consumer = KafkaConsumer(**conf, enable_auto_commit=False, group_id=None, consumer_timeout_ms=500)
    try:
        tp = KpTopicPartition("kp-scram", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 50 and time.monotonic() < deadline:
            got += [(m.offset, m.key, m.value) for m in consumer]
    finally:
        consumer.close()
    assert got == [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(50)]


# ---- refused clients -------------------------------------------------------------------------

SASL_FAILURES = {
    # id: (listener, client settings, the broker's WARN text)
    "scram-wrong-password": ("SASL_SSL", lambda pki: java_sasl(
        pki, "SCRAM-SHA-512", SCRAM_LOGIN, username="alice", password=WRONG)),
    "scram-unknown-user": ("SASL_SSL", lambda pki: java_sasl(
        pki, "SCRAM-SHA-256", SCRAM_LOGIN, username="nobody", password=UNKNOWN_USER_PASSWORD)),
    "plain-wrong-password": ("SASL_PLAINTEXT", lambda pki: java_sasl(
        None, "PLAIN", PLAIN_LOGIN, username="alice", password=WRONG)),
    "plain-unknown-user": ("SASL_PLAINTEXT", lambda pki: java_sasl(
        None, "PLAIN", PLAIN_LOGIN, username="nobody", password=UNKNOWN_USER_PASSWORD)),
}


@pytest.mark.parametrize("case", list(SASL_FAILURES))
def test_java_sasl_failure(secured, pki, java, case):
    listener, props = SASL_FAILURES[case]
    mark = LogMark(secured)
    probe = java.run("SecureClient", "probe", secured.bootstrap_of(listener), *props(pki))
    assert [(p["event"], p["class"]) for p in probe] == [("error", "SaslAuthenticationException")], probe
    assert "Authentication failed" in probe[0]["message"], probe
    mark.wait_warn("SASL authentication failed")
    serves_good_client(secured, pki, listener)
    assert_no_secrets(secured, pki)


def unsecured_token(claims: dict) -> str:
    """A JWS with `alg: none` and an empty signature, as Kafka's unsecured login module makes."""
    def b64(obj) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{b64({'alg': 'none'})}.{b64(claims)}."


def test_confluent_expired_oauthbearer_token(secured, pki):
    now = time.time()
    token = unsecured_token({"sub": "alice", "iat": int(now) - 600, "exp": int(now) - 300})
    errors: list[KafkaError] = []
    mark = LogMark(secured)
    producer = Producer({
        "bootstrap.servers": secured.bootstrap_of("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        # librdkafka only takes a token whose lifetime is ahead; the broker reads the token's own exp.
        "oauth_cb": lambda _config: (token, now + 3600, "alice", {}),
        "error_cb": errors.append,
    })
    deadline = time.monotonic() + 20
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        producer.poll(0.2)
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, f"no authentication error from librdkafka; errors: {errors}"
    assert "invalid_token" in auth[0].str(), auth[0].str()
    del producer
    mark.wait_warn("SASL authentication failed")
    serves_good_client(secured, pki, "SASL_PLAINTEXT")


def test_java_untrusted_client_certificate(secured, pki, java):
    mark = LogMark(secured)
    probe = java.run("SecureClient", "probe", secured.bootstrap_of("MTLS"), *java_ssl(pki, keystore=pki.mallory))
    assert [(p["event"], p["class"]) for p in probe] == [("error", "SslAuthenticationException")], probe
    warn = mark.wait_warn("TLS handshake failed")
    assert "BadSignature" in warn, warn
    serves_good_client(secured, pki, "MTLS")


def test_confluent_untrusted_client_certificate(secured, pki):
    errors: list[KafkaError] = []
    mark = LogMark(secured)
    producer = Producer({
        "bootstrap.servers": secured.bootstrap_of("MTLS"), "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca_cert), "ssl.certificate.location": str(pki.mallory.cert),
        "ssl.key.location": str(pki.mallory.key), "error_cb": errors.append,
    })
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    del producer
    assert errors, "librdkafka reported no error"
    assert errors[0].code() in (KafkaError._SSL, KafkaError._TRANSPORT), errors[0]
    assert "alert" in errors[0].str(), errors[0]
    warn = mark.wait_warn("TLS handshake failed")
    assert "BadSignature" in warn, warn
    serves_good_client(secured, pki, "MTLS")


# A client that can never connect gives up at its API timeout: keep it short where that is expected.
SHORT_PROBE = ("default.api.timeout.ms=3000", "request.timeout.ms=1500")


def test_java_plaintext_client_to_ssl_port(secured, pki, java):
    mark = LogMark(secured)
    probe = java.run("SecureClient", "probe", secured.bootstrap_of("SSL"), "security.protocol=PLAINTEXT",
                     *SHORT_PROBE)
    # The broker drops the connection at the handshake; the client sees disconnects until its timeout.
    assert [(p["event"], p["class"]) for p in probe] == [("error", "TimeoutException")], probe
    assert "InvalidContentType" in mark.wait_warn("TLS handshake failed")
    serves_good_client(secured, pki, "SSL")


def test_java_tls_client_to_plaintext_port(secured, pki, java):
    mark = LogMark(secured)
    probe = java.run("SecureClient", "probe", secured.bootstrap_of("PLAINTEXT"), *java_ssl(pki), *SHORT_PROBE)
    # The broker closes the connection on the ClientHello (as Kafka does, taking it for an
    # oversized frame); the client sees disconnects until its timeout.
    assert [(p["event"], p["class"]) for p in probe] == [("error", "TimeoutException")], probe
    mark.wait_warn("the client started a TLS handshake on a listener without TLS")
    serves_good_client(secured, pki, "PLAINTEXT")


# ---- re-authentication -----------------------------------------------------------------------

def test_scram_consumer_reauthenticates_without_losing_its_connection(secured, pki, java):
    create_topic(secured.bootstrap, "reauth")
    mark = LogMark(secured)
    out = java.run("SecureClient", "reauth-consume", secured.bootstrap_of("REAUTH"), "reauth", 11,
                   *java_sasl(None, "SCRAM-SHA-512", SCRAM_LOGIN, username="alice", password=ALICE_SCRAM))
    by_event = {line["event"]: line for line in out}
    produced = by_event["produced"]["count"]
    assert produced >= 60
    assert by_event["consumed"]["offsets"] == list(range(produced))
    first, last = by_event["metrics"]["first"], by_event["metrics"]["last"]
    assert last["successful-reauthentication-total"] - first["successful-reauthentication-total"] > 2, (first, last)
    assert last["failed-reauthentication-total"] == 0, last
    # The same connections served the whole run: none closed by the broker, none opened anew.
    assert last["connection-creation-total"] == first["connection-creation-total"], (first, last)
    assert last["connection-close-total"] == first["connection-close-total"], (first, last)
    assert not [line for line in mark.new_lines() if "session expired" in line]


# ---- ACLs -------------------------------------------------------------------------------------

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
BOB_PLAIN = "bob-plain-Pw-66t"


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory, strata_bin) -> StrataBroker:
    """A broker with Kafka's StandardAuthorizer, super user admin, PLAIN users admin, alice, bob."""
    root = tmp_path_factory.mktemp("acl-broker")
    (root / "output").mkdir()
    broker = StrataBroker(strata_bin, root / "data", root / "output", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            jaas(PLAIN_LOGIN, user_admin=ADMIN_PLAIN, user_alice=ALICE_PLAIN, user_bob=BOB_PLAIN),
    })
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def plain_user(user: str, password: str) -> list[str]:
    return java_sasl(None, "PLAIN", PLAIN_LOGIN, username=user, password=password)


def test_acls_with_java_admin(acl_broker, java, request):
    request.node.strata_brokers = [acl_broker]
    sasl = acl_broker.bootstrap_of("SASL_PLAINTEXT")
    admin, alice = plain_user("admin", ADMIN_PLAIN), plain_user("alice", ALICE_PLAIN)
    grants = ["User:alice:topic:acl-orders:write:allow", "User:alice:topic:acl-orders:describe:allow"]

    out = java.run("SecureClient", "create-acls", sasl, *grants, *alice)
    assert [(o["event"], o.get("class")) for o in out] == [("error", "ClusterAuthorizationException")], out
    assert java.run("SecureClient", "create-acls", sasl, *grants, *admin) == [{"event": "created"}]
    out = java.run("SecureClient", "describe-acls", sasl, *admin)
    assert out == [{"event": "acls", "acls": ["User:alice TOPIC acl-orders LITERAL DESCRIBE ALLOW",
                                              "User:alice TOPIC acl-orders LITERAL WRITE ALLOW"]}]
    assert java.run("SecureClient", "create-topic", sasl, "acl-orders", *admin) == [{"event": "created"}]
    assert java.run("SecureClient", "produce-one", sasl, "acl-orders", *alice) == [
        {"event": "produced", "offset": 0}]


def test_acls_deny_produce_without_a_grant(acl_broker, java, request):
    """Kafka refuses a Produce from a principal with no WRITE grant on the topic."""
    request.node.strata_brokers = [acl_broker]
    sasl = acl_broker.bootstrap_of("SASL_PLAINTEXT")
    java.run("SecureClient", "create-topic", sasl, "acl-private", *plain_user("admin", ADMIN_PLAIN))
    out = java.run("SecureClient", "produce-one", sasl, "acl-private", *plain_user("bob", BOB_PLAIN))
    assert [(o["event"], o.get("class")) for o in out] == [("error", "TopicAuthorizationException")], out


def test_broker_log_has_no_secrets(secured, pki):
    """Runs last: every password used in this module, good or wrong, and the key stay out of the log."""
    assert_no_secrets(secured, pki)
