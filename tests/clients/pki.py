"""Test certificates made with `openssl` and `keytool` at test time (never committed).

`make_pki(dir)` writes, under `dir`:
- a CA (`ca.crt`, `ca.key`);
- the broker's certificate for `localhost` / `127.0.0.1` (subjectAltName), signed by the CA, as
  PEM (`broker.crt`, `broker.key`) and as a PKCS12 keystore made by `openssl pkcs12 -export`;
- a PKCS12 truststore holding the CA, made by `keytool -importcert` (keytool encrypts its
  certificate bags, which the broker's reader must open);
- client certificates signed by the CA (`alice`: subject `CN=alice,OU=clients,O=Strata`) and an
  untrusted one (`mallory`), signed by a rogue CA that copies the real CA's subject name, each as
  PEM and as a PKCS12 keystore. (Clients offer only a certificate whose issuer is among the CA
  names the server asks for, so a plain self-signed one would never reach the broker: this one
  does, and only its signature gives it away.)

Every store has its own password; `Pki.secrets()` lists them all, so a test can check that none
reaches the broker's log.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"
CA_SUBJECT = "/O=Strata/CN=Strata Test CA"


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
    mallory: Identity  # signed by a rogue CA with the real CA's name

    def secrets(self) -> list[str]:
        return [self.truststore_password, self.broker.password, self.alice.password, self.mallory.password]


def _run(*cmd: str, cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")


def _ca(dir: Path, name: str) -> None:
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt",
         "-days", DAYS, "-sha256", "-subj", CA_SUBJECT,
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=dir)


def _signed(dir: Path, name: str, subject: str, extensions: str, password: str, ca: str = "ca") -> Identity:
    """A key and a certificate signed by `ca`, with `extensions` (an openssl extension section)."""
    ext = dir / f"{name}.ext"
    ext.write_text(extensions)
    _run("openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
         "-out", f"{name}.csr", "-subj", subject, cwd=dir)
    _run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
         "-CAcreateserial", "-days", DAYS, "-sha256", "-extfile", ext.name, "-out", f"{name}.crt", cwd=dir)
    _run("openssl", "pkcs12", "-export", "-in", f"{name}.crt", "-inkey", f"{name}.key", "-certfile", f"{ca}.crt",
         "-name", name, "-out", f"{name}.p12", "-passout", f"pass:{password}", cwd=dir)
    return Identity(dir / f"{name}.crt", dir / f"{name}.key", dir / f"{name}.p12", password)


def make_pki(dir: Path) -> Pki:
    dir.mkdir(parents=True, exist_ok=True)
    _ca(dir, "ca")
    _ca(dir, "rogue-ca")
    broker = _signed(dir, "broker", "/O=Strata/CN=localhost", (
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n"), "broker-store-Pw-4kq")
    alice = _signed(dir, "alice", "/O=Strata/OU=clients/CN=alice", (
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=clientAuth\n"), "alice-store-Pw-9zv")
    mallory = _signed(dir, "mallory", "/O=Strata/OU=clients/CN=mallory", (
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=clientAuth\n"), "mallory-store-Pw-2hd", ca="rogue-ca")
    truststore_password = "trust-store-Pw-6mn"
    _run("keytool", "-importcert", "-noprompt", "-alias", "strata-test-ca", "-file", "ca.crt",
         "-keystore", "truststore.p12", "-storetype", "PKCS12", "-storepass", truststore_password, cwd=dir)
    return Pki(dir, dir / "ca.crt", dir / "truststore.p12", truststore_password, broker, alice, mallory)
