//! Handshake tests: a rustls client against [`TlsServer::server_config`] over
//! in-memory buffers, with keys and stores made at test time by `openssl`
//! and `keytool` in a temporary directory (no key is committed). A missing
//! tool fails the test.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls::crypto::aws_lc_rs;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

use super::pem;
use super::*;

/// Runs a tool; its failure (or absence) fails the test.
fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} must be installed for these tests: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const SERVER_EXT: &str =
    "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n";
const CLIENT_EXT: &str = "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n";
const STORE_PASSWORD: &str = "s3cret-store-pw";

/// A CA, server and client keys and certificates in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = Pki { dir };
        std::fs::write(pki.path("server.ext"), SERVER_EXT).expect("write ext");
        std::fs::write(pki.path("client.ext"), CLIENT_EXT).expect("write ext");
        pki.ca("ca");
        pki.ca("evil-ca");
        pki.leaf("server", "/CN=localhost", "ca", "server.ext");
        pki.leaf(
            "client",
            "/C=US/O=Acme, Inc./OU=eng/CN=alice",
            "ca",
            "client.ext",
        );
        pki.leaf("intruder", "/CN=mallory", "evil-ca", "client.ext");
        pki
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn text(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).expect("read test file")
    }

    fn ca(&self, name: &str) {
        run(
            self.dir.path(),
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
                "-days",
                "2",
                "-subj",
                &format!("/CN={name}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
    }

    /// A P-256 key (PKCS#8) and a certificate for `subject` signed by `ca`.
    fn leaf(&self, name: &str, subject: &str, ca: &str, ext: &str) {
        self.leaf_with(name, subject, ca, ext, &[]);
    }

    fn leaf_with(&self, name: &str, subject: &str, ca: &str, ext: &str, req_args: &[&str]) {
        let (key, csr, cert) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        let mut args = vec![
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            subject,
        ];
        args.extend_from_slice(req_args);
        run(self.dir.path(), "openssl", &args);
        self.sign(&csr, &cert, ca, ext);
    }

    fn sign(&self, csr: &str, cert: &str, ca: &str, ext: &str) {
        run(
            self.dir.path(),
            "openssl",
            &[
                "x509",
                "-req",
                "-in",
                csr,
                "-CA",
                &format!("{ca}.pem"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                cert,
                "-extfile",
                ext,
            ],
        );
    }

    fn certs(&self, name: &str) -> Vec<CertificateDer<'static>> {
        pem::parse(&self.text(name))
            .expect("test PEM")
            .into_iter()
            .filter(|b| b.label == "CERTIFICATE")
            .map(|b| CertificateDer::from(b.der))
            .collect()
    }

    fn key(&self, name: &str) -> PrivateKeyDer<'static> {
        let block = pem::parse(&self.text(name)).expect("test PEM").remove(0);
        PrivateKeyDer::try_from(block.der).expect("PKCS#8 test key")
    }

    /// `server.pem` followed by `ca.pem`: the chain a broker presents.
    fn server_chain(&self) -> String {
        self.text("server.pem") + &self.text("ca.pem")
    }
}

fn settings(pairs: &[(&str, &str)]) -> SslSettings {
    try_settings(pairs).unwrap_or_else(|e| panic!("settings: {e}"))
}

fn try_settings(pairs: &[(&str, &str)]) -> Result<SslSettings, TlsConfigError> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    SslSettings::from_lookup(&|k| map.get(k).cloned())
}

fn inline_pem(pki: &Pki) -> Vec<(&'static str, String)> {
    vec![
        (prop::KEYSTORE_TYPE, "PEM".to_owned()),
        (prop::KEYSTORE_CERTIFICATE_CHAIN, pki.server_chain()),
        (prop::KEYSTORE_KEY, pki.text("server.key")),
    ]
}

fn as_pairs<'a>(owned: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    owned.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A client trusting `ca.pem`, optionally presenting `client` (`<client>.pem` and `.key`).
fn client(
    pki: &Pki,
    client: Option<&str>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in pki.certs("ca.pem") {
        roots.add(cert).expect("CA is a valid trust anchor");
    }
    let builder = ClientConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_protocol_versions(versions)
        .expect("client versions")
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(name) => builder
            .with_client_auth_cert(
                pki.certs(&format!("{name}.pem")),
                pki.key(&format!("{name}.key")),
            )
            .expect("client cert"),
    };
    Arc::new(config)
}

fn default_client(pki: &Pki, cert: Option<&str>) -> Arc<ClientConfig> {
    client(pki, cert, rustls::DEFAULT_VERSIONS)
}

/// Runs a handshake in memory; the first error of either side ends it.
fn handshake(
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
) -> Result<(ServerConnection, ClientConnection), rustls::Error> {
    let name = ServerName::try_from("localhost").expect("server name");
    let mut c = ClientConnection::new(client, name)?;
    let mut s = ServerConnection::new(server)?;
    for _ in 0..20 {
        let mut buf = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut buf).expect("write to memory");
        }
        let mut rd = buf.as_slice();
        while !rd.is_empty() {
            s.read_tls(&mut rd).expect("read from memory");
            s.process_new_packets()?;
        }
        let mut buf = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut buf).expect("write to memory");
        }
        let mut rd = buf.as_slice();
        while !rd.is_empty() {
            c.read_tls(&mut rd).expect("read from memory");
            c.process_new_packets()?;
        }
        if !c.is_handshaking() && !s.is_handshaking() && !c.wants_write() && !s.wants_write() {
            return Ok((s, c));
        }
    }
    panic!("handshake did not finish");
}

/// The server certificate a client saw.
fn seen_cert(c: &ClientConnection) -> Vec<u8> {
    c.peer_certificates()
        .and_then(|p| p.first())
        .expect("server certificate")
        .to_vec()
}

#[test]
fn inline_pem_keystore() {
    let pki = Pki::new();
    let server = TlsServer::new(&settings(&as_pairs(&inline_pem(&pki)))).expect("server");
    let (_, c) = handshake(server.server_config(), default_client(&pki, None)).expect("handshake");
    assert_eq!(seen_cert(&c), pki.certs("server.pem")[0].to_vec());
    assert_eq!(
        c.peer_certificates().map(<[_]>::len),
        Some(2),
        "chain with the CA"
    );
    assert_eq!(server.client_auth(), ClientAuth::None);
    // Neither the settings nor the server print the key.
    let key_line = pki
        .text("server.key")
        .lines()
        .nth(1)
        .expect("key body")
        .to_owned();
    let settings_debug = format!("{:?}", settings(&as_pairs(&inline_pem(&pki))));
    assert!(!settings_debug.contains(&key_line), "{settings_debug}");
    assert!(!format!("{server:?}").contains(&key_line));
}

#[test]
fn truststore_files() {
    let pki = Pki::new();
    let dir = pki.dir.path();
    // PEM file truststore.
    let mut pairs = inline_pem(&pki);
    pairs.push((prop::TRUSTSTORE_TYPE, "PEM".to_owned()));
    pairs.push((
        prop::TRUSTSTORE_LOCATION,
        pki.path("ca.pem").display().to_string(),
    ));
    pairs.push((prop::CLIENT_AUTH, "required".to_owned()));
    let server = TlsServer::new(&settings(&as_pairs(&pairs))).expect("PEM truststore file");
    handshake(server.server_config(), default_client(&pki, Some("client")))
        .expect("trusted client");

    // PKCS12 truststore from openssl, with and without its password.
    let passout = format!("pass:{STORE_PASSWORD}");
    run(
        dir,
        "openssl",
        &[
            "pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-out", "ts.p12", "-passout", &passout,
        ],
    );
    let mut pairs = inline_pem(&pki);
    pairs.push((
        prop::TRUSTSTORE_LOCATION,
        pki.path("ts.p12").display().to_string(),
    ));
    pairs.push((prop::CLIENT_AUTH, "required".to_owned()));
    let err = TlsServer::new(&settings(&as_pairs(&pairs))).expect_err("no truststore password");
    assert!(
        matches!(
            err,
            TlsConfigError::Missing {
                property: prop::TRUSTSTORE_PASSWORD,
                ..
            }
        ),
        "{err}"
    );
    pairs.push((prop::TRUSTSTORE_PASSWORD, STORE_PASSWORD.to_owned()));
    let server = TlsServer::new(&settings(&as_pairs(&pairs))).expect("PKCS12 truststore");
    handshake(server.server_config(), default_client(&pki, Some("client")))
        .expect("trusted client");
    handshake(
        server.server_config(),
        default_client(&pki, Some("intruder")),
    )
    .expect_err("untrusted");
}

/// Certificate and DN parsing sees bytes from the network: garbage and
/// truncations of a real certificate must be errors, never panics.
#[test]
fn principal_of_garbage_is_an_error() {
    use rand::{Rng, SeedableRng};
    let pki = Pki::new();
    let der = pki.certs("client.pem").remove(0).to_vec();
    let rules = PrincipalMappingRules::default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for len in 0..der.len() {
        assert!(
            principal_name(Some(&der[..len]), &rules).is_err(),
            "truncated at {len}"
        );
    }
    for _ in 0..2000 {
        let mut mutated = der.clone();
        for _ in 0..rng.gen_range(1..8) {
            let i = rng.gen_range(0..mutated.len());
            mutated[i] = rng.gen();
        }
        let _ = principal_name(Some(&mutated), &rules);
        let name: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
        let _ = super::dn::rfc2253(&name);
    }
}

#[test]
fn pem_file_keystore_and_encrypted_key() {
    let pki = Pki::new();
    std::fs::write(
        pki.path("ks.pem"),
        pki.text("server.key") + &pki.server_chain(),
    )
    .expect("write");
    let location = pki.path("ks.pem").display().to_string();
    let server = TlsServer::new(&settings(&[
        (prop::KEYSTORE_TYPE, "PEM"),
        (prop::KEYSTORE_LOCATION, &location),
    ]))
    .expect("server");
    let (_, c) = handshake(server.server_config(), default_client(&pki, None)).expect("handshake");
    assert_eq!(seen_cert(&c), pki.certs("server.pem")[0].to_vec());

    // An encrypted PKCS#8 key (PBES2, AES-256-CBC) with ssl.key.password.
    run(
        pki.dir.path(),
        "openssl",
        &[
            "pkcs8",
            "-topk8",
            "-v2",
            "aes-256-cbc",
            "-in",
            "server.key",
            "-out",
            "server.enc.key",
            "-passout",
            "pass:kpw-123",
        ],
    );
    let mut pairs = inline_pem(&pki);
    pairs[2].1 = pki.text("server.enc.key");
    assert!(pairs[2].1.contains("ENCRYPTED PRIVATE KEY"));
    pairs.push((prop::KEY_PASSWORD, "kpw-123".to_owned()));
    let server = TlsServer::new(&settings(&as_pairs(&pairs))).expect("encrypted key");
    handshake(server.server_config(), default_client(&pki, None)).expect("handshake");

    pairs.pop();
    let err = TlsServer::new(&settings(&as_pairs(&pairs))).expect_err("no password");
    assert!(
        matches!(err, TlsConfigError::EncryptedKeyWithoutPassword { .. }),
        "{err}"
    );
    pairs.push((prop::KEY_PASSWORD, "wrong-pw".to_owned()));
    let err = TlsServer::new(&settings(&as_pairs(&pairs))).expect_err("wrong password");
    assert!(matches!(err, TlsConfigError::KeyDecrypt { .. }), "{err}");
    assert!(!err.to_string().contains("wrong-pw"));
}

#[test]
fn pkcs12_from_keytool() {
    let pki = Pki::new();
    let dir = pki.dir.path();
    let pw = STORE_PASSWORD;
    run(
        dir,
        "keytool",
        &[
            "-genkeypair",
            "-alias",
            "broker",
            "-keyalg",
            "EC",
            "-groupname",
            "secp256r1",
            "-dname",
            "CN=localhost",
            "-storetype",
            "PKCS12",
            "-keystore",
            "kt.p12",
            "-storepass",
            pw,
            "-keypass",
            pw,
            "-validity",
            "2",
        ],
    );
    run(
        dir,
        "keytool",
        &[
            "-certreq",
            "-alias",
            "broker",
            "-keystore",
            "kt.p12",
            "-storepass",
            pw,
            "-file",
            "kt.csr",
        ],
    );
    pki.sign("kt.csr", "kt.pem", "ca", "server.ext");
    run(
        dir,
        "keytool",
        &[
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-file",
            "ca.pem",
            "-keystore",
            "kt.p12",
            "-storepass",
            pw,
        ],
    );
    run(
        dir,
        "keytool",
        &[
            "-importcert",
            "-alias",
            "broker",
            "-file",
            "kt.pem",
            "-keystore",
            "kt.p12",
            "-storepass",
            pw,
        ],
    );

    let location = pki.path("kt.p12").display().to_string();
    // Type JKS (Kafka's default) with a PKCS12 file is read, as Java 9+ does.
    for store_type in ["PKCS12", "JKS"] {
        let s = settings(&[
            (prop::KEYSTORE_TYPE, store_type),
            (prop::KEYSTORE_LOCATION, &location),
            (prop::KEYSTORE_PASSWORD, pw),
        ]);
        let server = TlsServer::new(&s).expect("keytool PKCS12");
        let (_, c) =
            handshake(server.server_config(), default_client(&pki, None)).expect("handshake");
        assert_eq!(seen_cert(&c), pki.certs("kt.pem")[0].to_vec());
    }

    let s = settings(&[
        (prop::KEYSTORE_TYPE, "PKCS12"),
        (prop::KEYSTORE_LOCATION, &location),
        (prop::KEYSTORE_PASSWORD, "not-it"),
    ]);
    let err = TlsServer::new(&s).expect_err("wrong password");
    assert!(
        matches!(
            err,
            TlsConfigError::WrongPassword {
                property: prop::KEYSTORE_PASSWORD,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("not-it"));

    // A keytool truststore verifies client certificates.
    run(
        dir,
        "keytool",
        &[
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-file",
            "ca.pem",
            "-storetype",
            "PKCS12",
            "-keystore",
            "ts.p12",
            "-storepass",
            pw,
        ],
    );
    let ts = pki.path("ts.p12").display().to_string();
    let s = settings(&[
        (prop::KEYSTORE_LOCATION, &location),
        (prop::KEYSTORE_PASSWORD, pw),
        (prop::TRUSTSTORE_LOCATION, &ts),
        (prop::TRUSTSTORE_PASSWORD, pw),
        (prop::CLIENT_AUTH, "required"),
    ]);
    let server = TlsServer::new(&s).expect("keytool truststore");
    handshake(server.server_config(), default_client(&pki, Some("client")))
        .expect("trusted client");
    handshake(server.server_config(), default_client(&pki, None)).expect_err("no client cert");
}

#[test]
fn real_jks_is_refused_with_conversion_hint() {
    let pki = Pki::new();
    run(
        pki.dir.path(),
        "keytool",
        &[
            "-genkeypair",
            "-alias",
            "broker",
            "-keyalg",
            "EC",
            "-groupname",
            "secp256r1",
            "-dname",
            "CN=localhost",
            "-storetype",
            "JKS",
            "-keystore",
            "old.jks",
            "-storepass",
            STORE_PASSWORD,
            "-keypass",
            STORE_PASSWORD,
        ],
    );
    let location = pki.path("old.jks").display().to_string();
    let s = settings(&[
        (prop::KEYSTORE_LOCATION, &location),
        (prop::KEYSTORE_PASSWORD, STORE_PASSWORD),
    ]);
    let err = TlsServer::new(&s).expect_err("JKS");
    assert!(
        matches!(err, TlsConfigError::JksNotSupported { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("-deststoretype PKCS12"), "{err}");
}

#[test]
fn pkcs12_from_openssl_modern_and_legacy() {
    let pki = Pki::new();
    let variants: [(&str, &[&str]); 3] = [
        ("modern.p12", &[]),
        ("legacy.p12", &["-legacy"]),
        (
            "3des.p12",
            &[
                "-keypbe",
                "PBE-SHA1-3DES",
                "-certpbe",
                "PBE-SHA1-3DES",
                "-macalg",
                "sha1",
            ],
        ),
    ];
    for (file, extra) in variants {
        let passout = format!("pass:{STORE_PASSWORD}");
        let mut args = vec![
            "pkcs12",
            "-export",
            "-in",
            "server.pem",
            "-inkey",
            "server.key",
            "-certfile",
            "ca.pem",
            "-name",
            "broker",
            "-out",
            file,
            "-passout",
            &passout,
        ];
        args.extend_from_slice(extra);
        run(pki.dir.path(), "openssl", &args);
        let location = pki.path(file).display().to_string();
        let s = settings(&[
            (prop::KEYSTORE_TYPE, "PKCS12"),
            (prop::KEYSTORE_LOCATION, &location),
            (prop::KEYSTORE_PASSWORD, STORE_PASSWORD),
        ]);
        let server = TlsServer::new(&s).unwrap_or_else(|e| panic!("{file}: {e}"));
        let (_, c) =
            handshake(server.server_config(), default_client(&pki, None)).expect("handshake");
        assert_eq!(seen_cert(&c), pki.certs("server.pem")[0].to_vec(), "{file}");
    }
}

fn client_auth_server(pki: &Pki, mode: &str, rules: &str) -> TlsServer {
    let mut pairs = inline_pem(pki);
    pairs.push((prop::TRUSTSTORE_TYPE, "PEM".to_owned()));
    pairs.push((prop::TRUSTSTORE_CERTIFICATES, pki.text("ca.pem")));
    pairs.push((prop::CLIENT_AUTH, mode.to_owned()));
    pairs.push((prop::PRINCIPAL_MAPPING_RULES, rules.to_owned()));
    TlsServer::new(&settings(&as_pairs(&pairs))).expect("server with client auth")
}

#[test]
fn client_auth_required() {
    let pki = Pki::new();
    let rules = "RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U,DEFAULT";
    let server = client_auth_server(&pki, "required", rules);
    assert_eq!(server.client_auth(), ClientAuth::Required);

    let err =
        handshake(server.server_config(), default_client(&pki, None)).expect_err("no client cert");
    assert!(
        matches!(err, rustls::Error::NoCertificatesPresented),
        "{err}"
    );

    let (s, _) = handshake(server.server_config(), default_client(&pki, Some("client")))
        .expect("trusted client");
    let peer = s
        .peer_certificates()
        .and_then(|p| p.first())
        .map(|c| c.to_vec());
    let parsed = PrincipalMappingRules::parse(rules).expect("rules");
    assert_eq!(
        principal_name(peer.as_deref(), &parsed).ok().as_deref(),
        Some("ALICE@ENG")
    );
    assert_eq!(
        principal_name(peer.as_deref(), &PrincipalMappingRules::default())
            .ok()
            .as_deref(),
        Some("CN=alice,OU=eng,O=Acme\\, Inc.,C=US")
    );

    let err = handshake(
        server.server_config(),
        default_client(&pki, Some("intruder")),
    )
    .expect_err("untrusted client");
    assert!(matches!(err, rustls::Error::InvalidCertificate(_)), "{err}");
}

#[test]
fn client_auth_requested() {
    let pki = Pki::new();
    let server = client_auth_server(&pki, "requested", "DEFAULT");
    let (s, _) =
        handshake(server.server_config(), default_client(&pki, None)).expect("no cert is fine");
    let peer = s
        .peer_certificates()
        .and_then(|p| p.first())
        .map(|c| c.to_vec());
    assert_eq!(
        principal_name(peer.as_deref(), &PrincipalMappingRules::default())
            .ok()
            .as_deref(),
        Some(ANONYMOUS)
    );
    let (s, _) = handshake(server.server_config(), default_client(&pki, Some("client")))
        .expect("trusted cert");
    assert!(s.peer_certificates().is_some());
    // Offered certificates are still verified.
    handshake(
        server.server_config(),
        default_client(&pki, Some("intruder")),
    )
    .expect_err("untrusted client");
}

#[test]
fn client_auth_needs_truststore() {
    let pki = Pki::new();
    let mut pairs = inline_pem(&pki);
    pairs.push((prop::CLIENT_AUTH, "required".to_owned()));
    let err = TlsServer::new(&settings(&as_pairs(&pairs))).expect_err("no truststore");
    assert!(
        matches!(
            err,
            TlsConfigError::ClientAuthWithoutTruststore {
                client_auth: "required"
            }
        ),
        "{err}"
    );
}

#[test]
fn tls13_only_refuses_tls12_client() {
    let pki = Pki::new();
    let mut pairs = inline_pem(&pki);
    pairs.push((prop::ENABLED_PROTOCOLS, "TLSv1.3".to_owned()));
    let server = TlsServer::new(&settings(&as_pairs(&pairs))).expect("server");
    handshake(
        server.server_config(),
        client(&pki, None, &[&rustls::version::TLS12]),
    )
    .expect_err("TLS 1.2 client");
    let (s, _) = handshake(
        server.server_config(),
        client(&pki, None, &[&rustls::version::TLS13]),
    )
    .expect("TLS 1.3 client");
    assert_eq!(s.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));

    // And a named TLS 1.2 suite is the one negotiated.
    let mut pairs = inline_pem(&pki);
    pairs.push((
        prop::CIPHER_SUITES,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_owned(),
    ));
    let server = TlsServer::new(&settings(&as_pairs(&pairs))).expect("server");
    let (s, _) =
        handshake(server.server_config(), default_client(&pki, None)).expect("TLS 1.2 suite");
    assert_eq!(s.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
    assert_eq!(
        s.negotiated_cipher_suite().map(|x| x.suite()),
        Some(rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
    );
}

#[test]
fn reload_swaps_certificate_for_new_handshakes() {
    let pki = Pki::new();
    pki.leaf("server2", "/CN=localhost", "ca", "server.ext");
    pki.leaf("other", "/CN=other.example", "ca", "server.ext");
    let file = pki.path("ks.pem");
    let location = file.display().to_string();
    let write = |name: &str| {
        let pem = pki.text(&format!("{name}.key")) + &pki.text(&format!("{name}.pem"));
        std::fs::write(&file, pem).expect("write keystore");
    };
    let s = settings(&[
        (prop::KEYSTORE_TYPE, "PEM"),
        (prop::KEYSTORE_LOCATION, &location),
    ]);
    write("server");
    let server = TlsServer::new(&s).expect("server");
    let (_, before) =
        handshake(server.server_config(), default_client(&pki, None)).expect("handshake");
    assert_eq!(seen_cert(&before), pki.certs("server.pem")[0].to_vec());

    assert!(!server.reload(&s).expect("same file"), "nothing changed");

    write("server2");
    assert!(server.reload(&s).expect("rotated file"));
    let (_, after) =
        handshake(server.server_config(), default_client(&pki, None)).expect("handshake");
    assert_eq!(seen_cert(&after), pki.certs("server2.pem")[0].to_vec());
    // The connection made before keeps the certificate it was made with.
    assert_eq!(seen_cert(&before), pki.certs("server.pem")[0].to_vec());

    // A bad keystore is an error and the current certificate stays.
    std::fs::write(&file, pki.text("client.key") + &pki.text("server.pem")).expect("write");
    let err = server.reload(&s).expect_err("mismatched key");
    assert!(matches!(err, TlsConfigError::KeyMismatch { .. }), "{err}");
    std::fs::remove_file(&file).expect("remove");
    let err = server.reload(&s).expect_err("missing file");
    assert!(
        matches!(err, TlsConfigError::ReadFile { ref path, .. } if *path == file),
        "{err}"
    );
    let (_, c) = handshake(server.server_config(), default_client(&pki, None)).expect("handshake");
    assert_eq!(seen_cert(&c), pki.certs("server2.pem")[0].to_vec());

    // A different subject needs ssl.allow.dn.changes (and a different SAN set
    // ssl.allow.san.changes; this leaf keeps DNS:localhost).
    write("other");
    let err = server.reload(&s).expect_err("subject changed");
    assert!(matches!(err, TlsConfigError::DnChanged { .. }), "{err}");
    let allow = settings(&[
        (prop::KEYSTORE_TYPE, "PEM"),
        (prop::KEYSTORE_LOCATION, &location),
        (prop::ALLOW_DN_CHANGES, "true"),
    ]);
    assert!(server.reload(&allow).expect("allowed"));
}

#[test]
fn reload_refuses_san_change() {
    let pki = Pki::new();
    std::fs::write(pki.path("other.ext"), "subjectAltName=DNS:other.example\n").expect("write ext");
    pki.leaf("renamed", "/CN=localhost", "ca", "other.ext");
    let server = TlsServer::new(&settings(&as_pairs(&inline_pem(&pki)))).expect("server");
    let mut pairs = inline_pem(&pki);
    pairs[1].1 = pki.text("renamed.pem");
    pairs[2].1 = pki.text("renamed.key");
    let err = server
        .reload(&settings(&as_pairs(&pairs)))
        .expect_err("SAN changed");
    assert!(matches!(err, TlsConfigError::SanChanged), "{err}");
    pairs.push((prop::ALLOW_SAN_CHANGES, "true".to_owned()));
    assert!(server
        .reload(&settings(&as_pairs(&pairs)))
        .expect("allowed"));
}

#[test]
fn keystore_errors_name_the_problem() {
    let pki = Pki::new();
    let missing = pki.path("nope.p12");
    let s = settings(&[
        (prop::KEYSTORE_LOCATION, &missing.display().to_string()),
        (prop::KEYSTORE_PASSWORD, "pw"),
    ]);
    let err = TlsServer::new(&s).expect_err("missing file");
    assert!(
        matches!(err, TlsConfigError::ReadFile { property: prop::KEYSTORE_LOCATION, ref path, .. } if *path == missing)
    );
    assert!(err.to_string().contains("nope.p12"), "{err}");

    let mut pairs = inline_pem(&pki);
    pairs[2].1 = pki.text("client.key");
    let err = TlsServer::new(&settings(&as_pairs(&pairs))).expect_err("key of another cert");
    assert!(matches!(err, TlsConfigError::KeyMismatch { .. }), "{err}");

    let mut pairs = inline_pem(&pki);
    pairs[2].1 = pki.text("server.pem");
    let err = TlsServer::new(&settings(&as_pairs(&pairs))).expect_err("no key");
    assert!(matches!(err, TlsConfigError::NoPrivateKey { .. }), "{err}");

    let mut pairs = inline_pem(&pki);
    pairs[1].1 = "no certificate here".to_owned();
    let err = TlsServer::new(&settings(&as_pairs(&pairs))).expect_err("no cert");
    assert!(matches!(err, TlsConfigError::NoCertificate { .. }), "{err}");

    let err = TlsServer::new(&settings(&[])).expect_err("no keystore");
    assert!(matches!(err, TlsConfigError::NoKeystore));

    // A PKCS12 keystore holding only a certificate.
    run(
        pki.dir.path(),
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-nokeys",
            "-in",
            "ca.pem",
            "-out",
            "certonly.p12",
            "-passout",
            &format!("pass:{STORE_PASSWORD}"),
        ],
    );
    let s = settings(&[
        (prop::KEYSTORE_TYPE, "PKCS12"),
        (
            prop::KEYSTORE_LOCATION,
            &pki.path("certonly.p12").display().to_string(),
        ),
        (prop::KEYSTORE_PASSWORD, STORE_PASSWORD),
    ]);
    let err = TlsServer::new(&s).expect_err("no key");
    assert!(matches!(err, TlsConfigError::NoPrivateKey { .. }), "{err}");
    assert!(!format!("{err} {err:?}").contains(STORE_PASSWORD));
}

/// Subjects made by openssl, printed as OpenJDK 17's
/// `X509Certificate.getSubjectX500Principal().getName()` prints them.
#[test]
fn subject_dn_vectors_from_real_certificates() {
    let pki = Pki::new();
    let cases: [(&str, &[&str], &str); 5] = [
        ("/C=US/O=Acme, Inc./OU=eng/CN=alice", &[], "CN=alice,OU=eng,O=Acme\\, Inc.,C=US"),
        (
            "/C=US/O=Acme/CN=bob/emailAddress=bob@example.com",
            &[],
            "1.2.840.113549.1.9.1=#160f626f62406578616d706c652e636f6d,CN=bob,O=Acme,C=US",
        ),
        ("/C=US/O=Acme/OU=eng+CN=carol", &["-multivalue-rdn"], "OU=eng+CN=carol,O=Acme,C=US"),
        ("/CN=zed+OU=aaa+C=US", &["-multivalue-rdn"], "C=US+CN=zed+OU=aaa"),
        (
            "/CN=#hash/title=boss/GN=Eve/SN=Smith/OU=a_b@c",
            &[],
            "OU=a_b@c,2.5.4.4=#0c05536d697468,2.5.4.42=#0c03457665,2.5.4.12=#0c04626f7373,CN=\\#hash",
        ),
    ];
    for (i, (subject, extra, expected)) in cases.iter().enumerate() {
        let name = format!("dn{i}");
        pki.leaf_with(&name, subject, "ca", "client.ext", extra);
        let der = pki.certs(&format!("{name}.pem")).remove(0);
        assert_eq!(
            principal_name(Some(&der), &PrincipalMappingRules::default())
                .ok()
                .as_deref(),
            Some(*expected),
            "{subject}"
        );
    }
}
