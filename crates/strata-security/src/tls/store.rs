//! Reading keystores and truststores: PKCS12 files (as keytool and
//! `openssl pkcs12 -export` write them), PEM files and inline PEM (KIP-651).
//!
//! Kafka's rules followed here:
//! - A keystore holds exactly one private key with its certificate chain,
//!   leaf first.
//! - A store typed JKS is read when its file is really PKCS12 (Java 9+ made
//!   PKCS12 the default and `KeyStore.getInstance("JKS")` reads both). A real
//!   JKS or JCEKS file (magic `FEEDFEED` / `CECECECE`) is refused with the
//!   `keytool` command that converts it.
//! - PEM keys are PKCS#8, encrypted PKCS#8 (PBES2, with `ssl.key.password`),
//!   and, beyond Kafka, PKCS#1 RSA and SEC1 EC keys.
//! - A truststore holds trusted certificates: every certificate of a PKCS12
//!   truststore (keytool's trusted entries and openssl's plain certificate
//!   bags alike). Kafka lets a PKCS12 truststore go without a password (no
//!   integrity check); Strata needs it, since the reader checks the MAC and
//!   keytool encrypts certificate bags, and says so when it is missing.
//! - A PKCS12 keystore is opened with `ssl.keystore.password` for both the
//!   store and its key; a key protected by a different `ssl.key.password` is
//!   not supported (keytool and openssl use one password by default).

use std::fs;
use std::path::Path;

use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};
use rustls::pki_types::{
    CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer,
};

use super::error::TlsConfigError;
use super::pem;
use super::settings::{prop, KeystoreSource, Secret, StoreType, TruststoreSource};

/// The magic numbers of Java's JKS and JCEKS formats.
const JKS_MAGIC: [u8; 4] = [0xfe, 0xed, 0xfe, 0xed];
const JCEKS_MAGIC: [u8; 4] = [0xce, 0xce, 0xce, 0xce];

/// A private key and its certificate chain, leaf first.
pub(crate) struct KeyMaterial {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// Where it came from, for error messages.
    pub origin: String,
    /// The property naming the source, for error messages.
    pub property: &'static str,
}

/// Reads the keystore `source` describes.
pub(crate) fn load_keystore(source: &KeystoreSource) -> Result<KeyMaterial, TlsConfigError> {
    match source {
        KeystoreSource::InlinePem {
            chain,
            key,
            key_password,
        } => {
            let origin = prop::KEYSTORE_CERTIFICATE_CHAIN.to_owned();
            let chain = pem_certificates(prop::KEYSTORE_CERTIFICATE_CHAIN, &origin, chain)?;
            let key = pem_key(
                prop::KEYSTORE_KEY,
                prop::KEYSTORE_KEY,
                key.expose(),
                key_password.as_ref(),
            )?;
            Ok(KeyMaterial {
                chain,
                key,
                origin: prop::KEYSTORE_KEY.to_owned(),
                property: prop::KEYSTORE_KEY,
            })
        }
        KeystoreSource::File {
            store_type,
            path,
            password,
            key_password,
        } => {
            let property = prop::KEYSTORE_LOCATION;
            let origin = path.display().to_string();
            let data = read(property, path)?;
            if *store_type == StoreType::Pem {
                let text = pem_text(property, &origin, &data)?;
                let chain = pem_certificates(property, &origin, text)?;
                let key = pem_key(property, &origin, text, key_password.as_ref())?;
                return Ok(KeyMaterial {
                    chain,
                    key,
                    origin,
                    property,
                });
            }
            refuse_java_formats(property, path, &data)?;
            let password = password.as_ref().map_or("", Secret::expose);
            let store = KeyStore::from_pkcs12(&data, password, Pkcs12ImportPolicy::Strict)
                .map_err(|e| pkcs12_error(property, prop::KEYSTORE_PASSWORD, path, e))?;
            let mut chains = store.entries().filter_map(|(_, entry)| match entry {
                KeyStoreEntry::PrivateKeyChain(chain) => Some(chain),
                _ => None,
            });
            let Some(chain) = chains.next() else {
                return Err(TlsConfigError::NoPrivateKey { property, origin });
            };
            if chains.next().is_some() {
                return Err(TlsConfigError::MultiplePrivateKeys { property, origin });
            }
            let certs: Vec<CertificateDer<'static>> = chain
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            if certs.is_empty() {
                return Err(TlsConfigError::NoCertificate { property, origin });
            }
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
            Ok(KeyMaterial {
                chain: certs,
                key,
                origin,
                property,
            })
        }
    }
}

/// Reads the trusted certificates `source` describes.
pub(crate) fn load_truststore(
    source: &TruststoreSource,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    match source {
        TruststoreSource::InlinePem { certificates } => pem_certificates(
            prop::TRUSTSTORE_CERTIFICATES,
            prop::TRUSTSTORE_CERTIFICATES,
            certificates,
        ),
        TruststoreSource::File {
            store_type,
            path,
            password,
        } => {
            let property = prop::TRUSTSTORE_LOCATION;
            let origin = path.display().to_string();
            let data = read(property, path)?;
            if *store_type == StoreType::Pem {
                let text = pem_text(property, &origin, &data)?;
                return pem_certificates(property, &origin, text);
            }
            refuse_java_formats(property, path, &data)?;
            let store = KeyStore::from_pkcs12(
                &data,
                password.as_ref().map_or("", Secret::expose),
                Pkcs12ImportPolicy::Raw,
            )
            .map_err(|e| {
                match (
                    password,
                    pkcs12_error(property, prop::TRUSTSTORE_PASSWORD, path, e),
                ) {
                    (None, TlsConfigError::WrongPassword { .. }) => TlsConfigError::Missing {
                        property: prop::TRUSTSTORE_PASSWORD,
                        reason: "the PKCS12 truststore cannot be read without its password",
                    },
                    (_, other) => other,
                }
            })?;
            let certs: Vec<CertificateDer<'static>> = store
                .entries()
                .filter_map(|(_, entry)| match entry {
                    KeyStoreEntry::Certificate(cert) => {
                        Some(CertificateDer::from(cert.as_der().to_vec()))
                    }
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(TlsConfigError::NoCertificate { property, origin });
            }
            Ok(certs)
        }
    }
}

fn read(property: &'static str, path: &Path) -> Result<Vec<u8>, TlsConfigError> {
    fs::read(path).map_err(|source| TlsConfigError::ReadFile {
        property,
        path: path.to_owned(),
        source,
    })
}

fn refuse_java_formats(
    property: &'static str,
    path: &Path,
    data: &[u8],
) -> Result<(), TlsConfigError> {
    if data.starts_with(&JKS_MAGIC) || data.starts_with(&JCEKS_MAGIC) {
        return Err(TlsConfigError::JksNotSupported {
            property,
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Maps the PKCS12 reader's error: a failed MAC or padding means a wrong password.
fn pkcs12_error(
    property: &'static str,
    password_property: &'static str,
    path: &Path,
    error: p12_keystore::error::Error,
) -> TlsConfigError {
    use p12_keystore::error::Error;
    match error {
        Error::MacError(_) | Error::UnpadError => TlsConfigError::WrongPassword {
            property: password_property,
            path: path.to_owned(),
        },
        source => TlsConfigError::Pkcs12 {
            property,
            path: path.to_owned(),
            source,
        },
    }
}

fn pem_text<'a>(
    property: &'static str,
    origin: &str,
    data: &'a [u8],
) -> Result<&'a str, TlsConfigError> {
    std::str::from_utf8(data).map_err(|_| TlsConfigError::Pem {
        property,
        origin: origin.to_owned(),
        reason: "the file is not text",
    })
}

fn pem_blocks(
    property: &'static str,
    origin: &str,
    text: &str,
) -> Result<Vec<pem::Block>, TlsConfigError> {
    pem::parse(text).map_err(|e| TlsConfigError::Pem {
        property,
        origin: origin.to_owned(),
        reason: match e {
            pem::PemError::Unterminated => "a BEGIN line has no matching END line",
            pem::PemError::BadBase64 => "a block's body is not base64",
        },
    })
}

fn pem_certificates(
    property: &'static str,
    origin: &str,
    text: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs: Vec<CertificateDer<'static>> = pem_blocks(property, origin, text)?
        .into_iter()
        .filter(|b| b.label == "CERTIFICATE")
        .map(|b| CertificateDer::from(b.der))
        .collect();
    if certs.is_empty() {
        return Err(TlsConfigError::NoCertificate {
            property,
            origin: origin.to_owned(),
        });
    }
    Ok(certs)
}

fn pem_key(
    property: &'static str,
    origin: &str,
    text: &str,
    password: Option<&Secret>,
) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    let mut keys = pem_blocks(property, origin, text)?
        .into_iter()
        .filter(|b| b.label.ends_with("PRIVATE KEY"));
    let Some(block) = keys.next() else {
        return Err(TlsConfigError::NoPrivateKey {
            property,
            origin: origin.to_owned(),
        });
    };
    if keys.next().is_some() {
        return Err(TlsConfigError::MultiplePrivateKeys {
            property,
            origin: origin.to_owned(),
        });
    }
    if block.legacy_encrypted {
        return Err(TlsConfigError::Pem {
            property,
            origin: origin.to_owned(),
            reason: "legacy OpenSSL key encryption (Proc-Type) is not supported; \
                     convert the key with `openssl pkcs8 -topk8 -v2 aes-256-cbc`",
        });
    }
    match block.label.as_str() {
        "PRIVATE KEY" => Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(block.der))),
        "RSA PRIVATE KEY" => Ok(PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(block.der))),
        "EC PRIVATE KEY" => Ok(PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(block.der))),
        "ENCRYPTED PRIVATE KEY" => {
            let Some(password) = password else {
                return Err(TlsConfigError::EncryptedKeyWithoutPassword {
                    property,
                    origin: origin.to_owned(),
                });
            };
            let decrypt_error = || TlsConfigError::KeyDecrypt {
                origin: origin.to_owned(),
            };
            let info = pkcs8::EncryptedPrivateKeyInfoRef::try_from(block.der.as_slice())
                .map_err(|_| decrypt_error())?;
            let plain = info
                .decrypt(password.expose())
                .map_err(|_| decrypt_error())?;
            Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
                plain.as_bytes().to_vec(),
            )))
        }
        _ => Err(TlsConfigError::Pem {
            property,
            origin: origin.to_owned(),
            reason: "unknown private key block (expected PRIVATE KEY, ENCRYPTED PRIVATE KEY, \
                     RSA PRIVATE KEY or EC PRIVATE KEY)",
        }),
    }
}
