"""Test certificates made with `openssl` and `keytool` at test time (never committed).

`make_pki(dir)` writes, under `dir`:
- a CA (`ca.crt`, `ca.key`);
- the broker's certificate for `localhost` / `127.0.0.1` (subjectAltName), signed by the CA, as
  PEM (`broker.crt`, `broker.key`) and as a PKCS12 keystore made by `openssl pkcs12 -export`;
- a PKCS12 truststore holding the CA, made by `keytool -importcert` (keytool encrypts its
  certificate bags, which the broker's reader must open);
- client certificates signed by the CA (`alice`: subject `CN=alice,OU=clients,O=Strata`) and an
  untrusted self-signed one (`mallory`), each as PEM and as a PKCS12 keystore.

Every store has its own password; `Pki.secrets()` lists them all, so a test can check that none
reaches the broker's log.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"


@dataclass(frozen=True)
class Identity:
    """A certificate with its key, as PEM files and as a PKCS12 keystore."""

    cert: Path
    key: Path
    p12: Path
    password: str


@dataclass(frozen=True)
class Pki:
    dir: Path
    ca_cert: Path
    truststore: Path  # PKCS12, the CA only (keytool)
    truststore_password: str
    broker: Identity
    alice: Identity  # signed by the CA
    mallory: Identity  # self-signed, trusted by no one

    def secrets(self) -> list[str]:
        return [self.truststore_password, self.broker.password, self.alice.password, self.mallory.password]


def _run(*cmd: str, cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")


def _signed(dir: Path, name: str, subject: str, extensions: str, password: str) -> Identity:
    """A key and a CA-signed certificate with `extensions` (an openssl extension section)."""
    ext = dir / f"{name}.ext"
    ext.write_text(extensions)
    _run("openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
         "-out", f"{name}.csr", "-subj", subject, cwd=dir)
    _run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", DAYS, "-sha256", "-extfile", ext.name, "-out", f"{name}.crt", cwd=dir)
    return _p12(dir, name, password, chain=True)


def _p12(dir: Path, name: str, password: str, chain: bool) -> Identity:
    args = ["openssl", "pkcs12", "-export", "-in", f"{name}.crt", "-inkey", f"{name}.key", "-name", name,
            "-out", f"{name}.p12", "-passout", f"pass:{password}"]
    if chain:
        args += ["-certfile", "ca.crt"]
    _run(*args, cwd=dir)
    return Identity(dir / f"{name}.crt", dir / f"{name}.key", dir / f"{name}.p12", password)


def make_pki(dir: Path) -> Pki:
    dir.mkdir(parents=True, exist_ok=True)
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
         "-days", DAYS, "-sha256", "-subj", "/O=Strata/CN=Strata Test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=dir)
    broker = _signed(dir, "broker", "/O=Strata/CN=localhost", (
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n"), "broker-store-Pw-4kq")
    alice = _signed(dir, "alice", "/O=Strata/OU=clients/CN=alice", (
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=clientAuth\n"), "alice-store-Pw-9zv")
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "mallory.key",
         "-out", "mallory.crt", "-days", DAYS, "-sha256", "-subj", "/O=Elsewhere/CN=mallory",
         "-addext", "extendedKeyUsage=clientAuth", cwd=dir)
    mallory = _p12(dir, "mallory", "mallory-store-Pw-2hd", chain=False)
    truststore_password = "trust-store-Pw-6mn"
    _run("keytool", "-importcert", "-noprompt", "-alias", "strata-test-ca", "-file", "ca.crt",
         "-keystore", "truststore.p12", "-storetype", "PKCS12", "-storepass", truststore_password, cwd=dir)
    return Pki(dir, dir / "ca.crt", dir / "truststore.p12", truststore_password, broker, alice, mallory)
