//! A listener's `ssl.*` settings, read and validated in one pass with Kafka's
//! names, defaults and combination rules (`SslConfigs`,
//! `DefaultSslEngineFactory`, KIP-651 for PEM).
//!
//! The caller applies Kafka's precedence (`listener.name.<l>.ssl.*` over the
//! plain name) in its lookup function; this module only sees final values.
//! Values are trimmed as Kafka's `ConfigDef` trims them, and an empty value
//! counts as unset.
//!
//! Differences from Kafka, all on the lenient side or forced by rustls:
//! - JKS and JCEKS files cannot be read; a store whose type says JKS but whose
//!   file is PKCS12 is read, as Java 9+ does.
//! - PEM keys may also be PKCS#1 (`RSA PRIVATE KEY`) or SEC1
//!   (`EC PRIVATE KEY`), and an unencrypted key is accepted even when
//!   `ssl.key.password` is set.
//! - Only TLSv1.2 and TLSv1.3 exist; `ssl.protocol` is validated but the
//!   enabled protocols alone decide what is negotiated (as they do in Kafka,
//!   which always sets them on the engine).
//! - `ssl.endpoint.identification.algorithm`, `ssl.keymanager.algorithm`,
//!   `ssl.trustmanager.algorithm`, `ssl.provider` and
//!   `ssl.secure.random.implementation` are client-side or JVM-specific and
//!   are not read.

use std::fmt;
use std::path::PathBuf;

use rustls::crypto::aws_lc_rs;
use rustls::{ProtocolVersion, SupportedCipherSuite};

use super::error::TlsConfigError;
use super::principal::PrincipalMappingRules;

/// The Kafka property names this module reads.
pub mod prop {
    /// Keystore type: JKS (default), PKCS12 or PEM.
    pub const KEYSTORE_TYPE: &str = "ssl.keystore.type";
    /// Keystore file.
    pub const KEYSTORE_LOCATION: &str = "ssl.keystore.location";
    /// Keystore file password.
    pub const KEYSTORE_PASSWORD: &str = "ssl.keystore.password";
    /// Private key password (encrypted PEM keys).
    pub const KEY_PASSWORD: &str = "ssl.key.password";
    /// Inline PEM private key (KIP-651).
    pub const KEYSTORE_KEY: &str = "ssl.keystore.key";
    /// Inline PEM certificate chain, leaf first (KIP-651).
    pub const KEYSTORE_CERTIFICATE_CHAIN: &str = "ssl.keystore.certificate.chain";
    /// Truststore type: JKS (default), PKCS12 or PEM.
    pub const TRUSTSTORE_TYPE: &str = "ssl.truststore.type";
    /// Truststore file.
    pub const TRUSTSTORE_LOCATION: &str = "ssl.truststore.location";
    /// Truststore file password.
    pub const TRUSTSTORE_PASSWORD: &str = "ssl.truststore.password";
    /// Inline PEM trusted certificates (KIP-651).
    pub const TRUSTSTORE_CERTIFICATES: &str = "ssl.truststore.certificates";
    /// `none`, `requested` or `required`.
    pub const CLIENT_AUTH: &str = "ssl.client.auth";
    /// The SSLContext protocol.
    pub const PROTOCOL: &str = "ssl.protocol";
    /// Enabled protocol versions.
    pub const ENABLED_PROTOCOLS: &str = "ssl.enabled.protocols";
    /// Enabled cipher suites (IANA/JSSE names).
    pub const CIPHER_SUITES: &str = "ssl.cipher.suites";
    /// Rules mapping the client certificate's subject to a principal.
    pub const PRINCIPAL_MAPPING_RULES: &str = "ssl.principal.mapping.rules";
    /// Whether a keystore reload may change the certificate's subject.
    pub const ALLOW_DN_CHANGES: &str = "ssl.allow.dn.changes";
    /// Whether a keystore reload may change the subject alternative names.
    pub const ALLOW_SAN_CHANGES: &str = "ssl.allow.san.changes";
}

/// A password, kept out of `Debug` output and error messages.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// How a store is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    /// Java's proprietary format; only accepted when the file is really PKCS12.
    Jks,
    /// PKCS#12.
    Pkcs12,
    /// PEM text (KIP-651).
    Pem,
}

impl StoreType {
    fn parse(property: &'static str, value: &str) -> Result<Self, TlsConfigError> {
        // Java's KeyStore.getInstance ignores case.
        match value.to_ascii_uppercase().as_str() {
            "JKS" => Ok(Self::Jks),
            "PKCS12" => Ok(Self::Pkcs12),
            "PEM" => Ok(Self::Pem),
            _ => Err(TlsConfigError::UnsupportedStoreType {
                property,
                store_type: value.to_owned(),
            }),
        }
    }
}

/// `ssl.client.auth`: whether the server asks for a client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate is asked for (the default).
    #[default]
    None,
    /// A client certificate is asked for and verified if sent; a client
    /// without one is let in as `ANONYMOUS`.
    Requested,
    /// A verified client certificate is required; the handshake fails without.
    Required,
}

impl ClientAuth {
    /// Kafka's value for this setting.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Requested => "requested",
            Self::Required => "required",
        }
    }
}

/// A protocol version rustls can negotiate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLSv1.2.
    Tls12,
    /// TLSv1.3.
    Tls13,
}

impl TlsVersion {
    fn parse(property: &'static str, name: &str) -> Result<Self, TlsConfigError> {
        // JSSE protocol names are case-sensitive.
        match name {
            "TLSv1.2" => Ok(Self::Tls12),
            "TLSv1.3" => Ok(Self::Tls13),
            _ => Err(TlsConfigError::UnsupportedProtocol {
                property,
                protocol: name.to_owned(),
            }),
        }
    }

    pub(crate) fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            Self::Tls12 => &rustls::version::TLS12,
            Self::Tls13 => &rustls::version::TLS13,
        }
    }

    fn protocol_version(self) -> ProtocolVersion {
        self.rustls().version
    }
}

/// Where the keystore comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeystoreSource {
    /// `ssl.keystore.location` with its type and passwords.
    File {
        store_type: StoreType,
        path: PathBuf,
        password: Option<Secret>,
        key_password: Option<Secret>,
    },
    /// `ssl.keystore.certificate.chain` and `ssl.keystore.key`.
    InlinePem {
        chain: String,
        key: Secret,
        key_password: Option<Secret>,
    },
}

/// Where the truststore comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TruststoreSource {
    /// `ssl.truststore.location` with its type and optional password.
    File {
        store_type: StoreType,
        path: PathBuf,
        password: Option<Secret>,
    },
    /// `ssl.truststore.certificates`.
    InlinePem { certificates: String },
}

/// A listener's `ssl.*` settings after Kafka's precedence was applied by the
/// caller, parsed and validated.
#[derive(Debug, Clone)]
pub struct SslSettings {
    pub(crate) keystore: Option<KeystoreSource>,
    pub(crate) truststore: Option<TruststoreSource>,
    client_auth: ClientAuth,
    versions: Vec<TlsVersion>,
    cipher_suites: Vec<SupportedCipherSuite>,
    principal_mapping_rules: PrincipalMappingRules,
    allow_dn_changes: bool,
    allow_san_changes: bool,
}

impl SslSettings {
    /// Reads and validates the settings; `lookup` returns a property's value
    /// (listener-prefixed if set, else the plain name, else `None`).
    ///
    /// Stores are only described here, not read: [`super::TlsServer::new`]
    /// reads them, and [`super::TlsServer::reload`] reads them again.
    ///
    /// # Errors
    /// A [`TlsConfigError`] naming the property for a value Kafka refuses, a
    /// combination Kafka refuses (for example a PEM key together with a
    /// keystore location), a protocol other than TLSv1.2/TLSv1.3, an unknown
    /// cipher suite, or invalid principal mapping rules.
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SslSettings, TlsConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let secret = |name: &str| get(name).map(Secret);

        let keystore = keystore(&get, &secret)?;
        let truststore = truststore(&get, &secret)?;

        let client_auth = match get(prop::CLIENT_AUTH) {
            None => ClientAuth::None,
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "none" => ClientAuth::None,
                "requested" => ClientAuth::Requested,
                "required" => ClientAuth::Required,
                _ => {
                    return Err(TlsConfigError::InvalidValue {
                        property: prop::CLIENT_AUTH,
                        value: v,
                        reason: "expected none, requested or required",
                    });
                }
            },
        };

        if let Some(protocol) = get(prop::PROTOCOL) {
            if !matches!(protocol.as_str(), "TLS" | "TLSv1.2" | "TLSv1.3") {
                return Err(TlsConfigError::UnsupportedProtocol {
                    property: prop::PROTOCOL,
                    protocol,
                });
            }
        }

        let mut versions = Vec::new();
        for name in list(get(prop::ENABLED_PROTOCOLS)) {
            let version = TlsVersion::parse(prop::ENABLED_PROTOCOLS, &name)?;
            if !versions.contains(&version) {
                versions.push(version);
            }
        }
        if versions.is_empty() {
            versions = vec![TlsVersion::Tls12, TlsVersion::Tls13];
        }

        let named = list(get(prop::CIPHER_SUITES));
        let cipher_suites = if named.is_empty() {
            aws_lc_rs::DEFAULT_CIPHER_SUITES.to_vec()
        } else {
            named
                .iter()
                .map(|name| cipher_suite(name))
                .collect::<Result<Vec<_>, _>>()?
        };
        // Keep the versions some suite can serve; none at all is an error.
        versions.retain(|v| {
            cipher_suites
                .iter()
                .any(|s| s.version().version == v.protocol_version())
        });
        if versions.is_empty() {
            return Err(TlsConfigError::NoUsableCipherSuite);
        }

        let principal_mapping_rules = match get(prop::PRINCIPAL_MAPPING_RULES) {
            Some(rules) => PrincipalMappingRules::parse(&rules)?,
            None => PrincipalMappingRules::default_rules(),
        };

        Ok(SslSettings {
            keystore,
            truststore,
            client_auth,
            versions,
            cipher_suites,
            principal_mapping_rules,
            allow_dn_changes: boolean(prop::ALLOW_DN_CHANGES, get(prop::ALLOW_DN_CHANGES))?,
            allow_san_changes: boolean(prop::ALLOW_SAN_CHANGES, get(prop::ALLOW_SAN_CHANGES))?,
        })
    }

    /// `ssl.client.auth`.
    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
    }

    /// The protocol versions that will be offered: `ssl.enabled.protocols`
    /// less any version no enabled cipher suite serves.
    pub fn enabled_protocols(&self) -> &[TlsVersion] {
        &self.versions
    }

    /// The enabled cipher suites (`ssl.cipher.suites`, or rustls' defaults).
    pub fn cipher_suites(&self) -> &[SupportedCipherSuite] {
        &self.cipher_suites
    }

    /// `ssl.principal.mapping.rules`.
    pub fn principal_mapping_rules(&self) -> &PrincipalMappingRules {
        &self.principal_mapping_rules
    }

    /// `ssl.allow.dn.changes`.
    pub fn allow_dn_changes(&self) -> bool {
        self.allow_dn_changes
    }

    /// `ssl.allow.san.changes`.
    pub fn allow_san_changes(&self) -> bool {
        self.allow_san_changes
    }

    /// Whether a keystore is configured.
    pub fn has_keystore(&self) -> bool {
        self.keystore.is_some()
    }

    /// Whether a truststore is configured.
    pub fn has_truststore(&self) -> bool {
        self.truststore.is_some()
    }
}

type Get<'a> = dyn Fn(&str) -> Option<String> + 'a;
type GetSecret<'a> = dyn Fn(&str) -> Option<Secret> + 'a;

fn keystore(
    get: &Get<'_>,
    secret: &GetSecret<'_>,
) -> Result<Option<KeystoreSource>, TlsConfigError> {
    let type_name = get(prop::KEYSTORE_TYPE).unwrap_or_else(|| "JKS".to_owned());
    let store_type = StoreType::parse(prop::KEYSTORE_TYPE, &type_name)?;
    let location = get(prop::KEYSTORE_LOCATION);
    let password = secret(prop::KEYSTORE_PASSWORD);
    let key_password = secret(prop::KEY_PASSWORD);
    let key = secret(prop::KEYSTORE_KEY);
    let chain = get(prop::KEYSTORE_CERTIFICATE_CHAIN);

    if key.is_some() || chain.is_some() {
        if store_type != StoreType::Pem {
            return Err(TlsConfigError::InvalidValue {
                property: prop::KEYSTORE_TYPE,
                value: type_name,
                reason: "ssl.keystore.key and ssl.keystore.certificate.chain need type PEM",
            });
        }
        if location.is_some() {
            return Err(TlsConfigError::Conflict {
                property: prop::KEYSTORE_KEY,
                other: prop::KEYSTORE_LOCATION,
                reason: "the keystore is either a file or inline PEM",
            });
        }
        if password.is_some() {
            return Err(TlsConfigError::Conflict {
                property: prop::KEYSTORE_PASSWORD,
                other: prop::KEYSTORE_KEY,
                reason: "an inline PEM key is protected by ssl.key.password only",
            });
        }
        let Some(key) = key else {
            return Err(TlsConfigError::Missing {
                property: prop::KEYSTORE_KEY,
                reason: "ssl.keystore.certificate.chain is set",
            });
        };
        let Some(chain) = chain else {
            return Err(TlsConfigError::Missing {
                property: prop::KEYSTORE_CERTIFICATE_CHAIN,
                reason: "ssl.keystore.key is set",
            });
        };
        return Ok(Some(KeystoreSource::InlinePem {
            chain,
            key,
            key_password,
        }));
    }

    let Some(location) = location else {
        if password.is_some() {
            return Err(TlsConfigError::Missing {
                property: prop::KEYSTORE_LOCATION,
                reason: "ssl.keystore.password is set",
            });
        }
        return Ok(None);
    };
    match (store_type, &password) {
        (StoreType::Pem, Some(_)) => Err(TlsConfigError::Conflict {
            property: prop::KEYSTORE_PASSWORD,
            other: prop::KEYSTORE_TYPE,
            reason: "a PEM keystore file is protected by ssl.key.password only",
        }),
        (StoreType::Jks | StoreType::Pkcs12, None) => Err(TlsConfigError::Missing {
            property: prop::KEYSTORE_PASSWORD,
            reason: "ssl.keystore.location is set",
        }),
        _ => Ok(Some(KeystoreSource::File {
            store_type,
            path: PathBuf::from(location),
            password,
            key_password,
        })),
    }
}

fn truststore(
    get: &Get<'_>,
    secret: &GetSecret<'_>,
) -> Result<Option<TruststoreSource>, TlsConfigError> {
    let type_name = get(prop::TRUSTSTORE_TYPE).unwrap_or_else(|| "JKS".to_owned());
    let store_type = StoreType::parse(prop::TRUSTSTORE_TYPE, &type_name)?;
    let location = get(prop::TRUSTSTORE_LOCATION);
    let password = secret(prop::TRUSTSTORE_PASSWORD);

    if let Some(certificates) = get(prop::TRUSTSTORE_CERTIFICATES) {
        if store_type != StoreType::Pem {
            return Err(TlsConfigError::InvalidValue {
                property: prop::TRUSTSTORE_TYPE,
                value: type_name,
                reason: "ssl.truststore.certificates needs type PEM",
            });
        }
        if location.is_some() {
            return Err(TlsConfigError::Conflict {
                property: prop::TRUSTSTORE_CERTIFICATES,
                other: prop::TRUSTSTORE_LOCATION,
                reason: "the truststore is either a file or inline PEM",
            });
        }
        if password.is_some() {
            return Err(TlsConfigError::Conflict {
                property: prop::TRUSTSTORE_PASSWORD,
                other: prop::TRUSTSTORE_CERTIFICATES,
                reason: "PEM truststores have no password",
            });
        }
        return Ok(Some(TruststoreSource::InlinePem { certificates }));
    }

    let Some(location) = location else {
        if password.is_some() {
            return Err(TlsConfigError::Missing {
                property: prop::TRUSTSTORE_LOCATION,
                reason: "ssl.truststore.password is set",
            });
        }
        return Ok(None);
    };
    if store_type == StoreType::Pem && password.is_some() {
        return Err(TlsConfigError::Conflict {
            property: prop::TRUSTSTORE_PASSWORD,
            other: prop::TRUSTSTORE_TYPE,
            reason: "PEM truststores have no password",
        });
    }
    Ok(Some(TruststoreSource::File {
        store_type,
        path: PathBuf::from(location),
        password,
    }))
}

/// A Kafka LIST value: comma separated, items trimmed, empty items dropped.
fn list(value: Option<String>) -> Vec<String> {
    value
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn boolean(property: &'static str, value: Option<String>) -> Result<bool, TlsConfigError> {
    match value {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(TlsConfigError::InvalidValue {
            property,
            value: v,
            reason: "expected true or false",
        }),
    }
}

/// The IANA (and JSSE) name of a rustls cipher suite: rustls spells TLS 1.3
/// suites `TLS13_…` where IANA has `TLS_…`.
pub(crate) fn iana_name(suite: SupportedCipherSuite) -> String {
    let name = suite.suite().as_str().unwrap_or("unknown");
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_owned(),
    }
}

fn cipher_suite(name: &str) -> Result<SupportedCipherSuite, TlsConfigError> {
    aws_lc_rs::ALL_CIPHER_SUITES
        .iter()
        .copied()
        .find(|s| iana_name(*s) == name)
        .ok_or_else(|| TlsConfigError::UnsupportedCipherSuite {
            name: name.to_owned(),
            offered: aws_lc_rs::ALL_CIPHER_SUITES
                .iter()
                .map(|s| iana_name(*s))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<SslSettings, TlsConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        SslSettings::from_lookup(&|k| map.get(k).cloned())
    }

    const PEM_KEY: (&str, &str) = (
        prop::KEYSTORE_KEY,
        "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----",
    );
    const PEM_CHAIN: (&str, &str) = (
        prop::KEYSTORE_CERTIFICATE_CHAIN,
        "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----",
    );
    const PEM_TYPE: (&str, &str) = (prop::KEYSTORE_TYPE, "PEM");

    #[test]
    fn defaults() {
        let s = settings(&[]).expect("no settings are valid");
        assert_eq!(s.client_auth(), ClientAuth::None);
        assert_eq!(
            s.enabled_protocols(),
            &[TlsVersion::Tls12, TlsVersion::Tls13]
        );
        assert_eq!(
            s.cipher_suites().len(),
            aws_lc_rs::DEFAULT_CIPHER_SUITES.len()
        );
        assert!(!s.has_keystore() && !s.has_truststore());
        assert!(!s.allow_dn_changes() && !s.allow_san_changes());
        assert_eq!(s.principal_mapping_rules().to_string(), "DEFAULT");
    }

    #[test]
    fn file_keystore_needs_password_unless_pem() {
        let s = settings(&[
            (prop::KEYSTORE_LOCATION, " /etc/ks.p12 "),
            (prop::KEYSTORE_PASSWORD, "pw"),
        ])
        .expect("JKS-typed file with password");
        assert!(matches!(
            s.keystore,
            Some(KeystoreSource::File { store_type: StoreType::Jks, ref path, .. }) if path == &PathBuf::from("/etc/ks.p12")
        ));
        assert!(matches!(
            settings(&[
                (prop::KEYSTORE_LOCATION, "/k.p12"),
                (prop::KEYSTORE_TYPE, "pkcs12")
            ]),
            Err(TlsConfigError::Missing {
                property: prop::KEYSTORE_PASSWORD,
                ..
            })
        ));
        assert!(matches!(
            settings(&[(prop::KEYSTORE_PASSWORD, "pw")]),
            Err(TlsConfigError::Missing {
                property: prop::KEYSTORE_LOCATION,
                ..
            })
        ));
        assert!(settings(&[(prop::KEYSTORE_LOCATION, "/k.pem"), PEM_TYPE]).is_ok());
        assert!(matches!(
            settings(&[
                (prop::KEYSTORE_LOCATION, "/k.pem"),
                PEM_TYPE,
                (prop::KEYSTORE_PASSWORD, "pw")
            ]),
            Err(TlsConfigError::Conflict {
                property: prop::KEYSTORE_PASSWORD,
                ..
            })
        ));
    }

    #[test]
    fn inline_pem_rules() {
        assert!(matches!(
            settings(&[PEM_TYPE, PEM_KEY, PEM_CHAIN, (prop::KEY_PASSWORD, "kp")])
                .map(|s| s.keystore),
            Ok(Some(KeystoreSource::InlinePem {
                key_password: Some(_),
                ..
            }))
        ));
        assert!(matches!(
            settings(&[PEM_KEY, PEM_CHAIN]),
            Err(TlsConfigError::InvalidValue {
                property: prop::KEYSTORE_TYPE,
                ..
            })
        ));
        assert!(matches!(
            settings(&[PEM_TYPE, PEM_KEY]),
            Err(TlsConfigError::Missing {
                property: prop::KEYSTORE_CERTIFICATE_CHAIN,
                ..
            })
        ));
        assert!(matches!(
            settings(&[PEM_TYPE, PEM_CHAIN]),
            Err(TlsConfigError::Missing {
                property: prop::KEYSTORE_KEY,
                ..
            })
        ));
        assert!(matches!(
            settings(&[
                PEM_TYPE,
                PEM_KEY,
                PEM_CHAIN,
                (prop::KEYSTORE_LOCATION, "/k")
            ]),
            Err(TlsConfigError::Conflict {
                property: prop::KEYSTORE_KEY,
                ..
            })
        ));
        assert!(matches!(
            settings(&[PEM_TYPE, PEM_KEY, PEM_CHAIN, (prop::KEYSTORE_PASSWORD, "p")]),
            Err(TlsConfigError::Conflict {
                property: prop::KEYSTORE_PASSWORD,
                ..
            })
        ));
    }

    #[test]
    fn truststore_rules() {
        let certs = (
            prop::TRUSTSTORE_CERTIFICATES,
            "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----",
        );
        let pem = (prop::TRUSTSTORE_TYPE, "PEM");
        assert!(settings(&[certs, pem]).is_ok_and(|s| s.has_truststore()));
        assert!(matches!(
            settings(&[certs]),
            Err(TlsConfigError::InvalidValue {
                property: prop::TRUSTSTORE_TYPE,
                ..
            })
        ));
        assert!(matches!(
            settings(&[certs, pem, (prop::TRUSTSTORE_PASSWORD, "x")]),
            Err(TlsConfigError::Conflict {
                property: prop::TRUSTSTORE_PASSWORD,
                ..
            })
        ));
        assert!(matches!(
            settings(&[certs, pem, (prop::TRUSTSTORE_LOCATION, "/t")]),
            Err(TlsConfigError::Conflict {
                property: prop::TRUSTSTORE_CERTIFICATES,
                ..
            })
        ));
        // A JKS/PKCS12 truststore password is optional.
        assert!(
            settings(&[(prop::TRUSTSTORE_LOCATION, "/t.p12")]).is_ok_and(|s| s.has_truststore())
        );
        assert!(matches!(
            settings(&[(prop::TRUSTSTORE_PASSWORD, "x")]),
            Err(TlsConfigError::Missing {
                property: prop::TRUSTSTORE_LOCATION,
                ..
            })
        ));
        assert!(matches!(
            settings(&[(prop::TRUSTSTORE_TYPE, "JCEKS")]),
            Err(TlsConfigError::UnsupportedStoreType { .. })
        ));
    }

    #[test]
    fn client_auth_values() {
        for (value, expected) in [
            ("none", ClientAuth::None),
            ("requested", ClientAuth::Requested),
            ("REQUIRED", ClientAuth::Required),
        ] {
            assert_eq!(
                settings(&[(prop::CLIENT_AUTH, value)])
                    .map(|s| s.client_auth())
                    .ok(),
                Some(expected)
            );
        }
        assert!(matches!(
            settings(&[(prop::CLIENT_AUTH, "want")]),
            Err(TlsConfigError::InvalidValue {
                property: prop::CLIENT_AUTH,
                ..
            })
        ));
    }

    #[test]
    fn protocols() {
        let s = settings(&[(prop::ENABLED_PROTOCOLS, " TLSv1.3 , ")]).expect("TLSv1.3 only");
        assert_eq!(s.enabled_protocols(), &[TlsVersion::Tls13]);
        for old in ["TLSv1", "TLSv1.1", "SSLv3", "tlsv1.2"] {
            assert!(
                matches!(
                    settings(&[(prop::ENABLED_PROTOCOLS, &format!("TLSv1.2,{old}"))]),
                    Err(TlsConfigError::UnsupportedProtocol { property: prop::ENABLED_PROTOCOLS, ref protocol }) if protocol == old
                ),
                "{old}"
            );
        }
        for ok in ["TLS", "TLSv1.2", "TLSv1.3"] {
            assert!(settings(&[(prop::PROTOCOL, ok)]).is_ok(), "{ok}");
        }
        assert!(matches!(
            settings(&[(prop::PROTOCOL, "TLSv1.1")]),
            Err(TlsConfigError::UnsupportedProtocol {
                property: prop::PROTOCOL,
                ..
            })
        ));
    }

    #[test]
    fn cipher_suites_by_iana_name() {
        let s = settings(&[(
            prop::CIPHER_SUITES,
            "TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        )])
        .expect("known suites");
        let names: Vec<String> = s.cipher_suites().iter().map(|s| iana_name(*s)).collect();
        assert_eq!(
            names,
            [
                "TLS_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
            ]
        );
        // Suites of one version only: the other version is dropped.
        let s = settings(&[(prop::CIPHER_SUITES, "TLS_AES_256_GCM_SHA384")]).expect("1.3 suite");
        assert_eq!(s.enabled_protocols(), &[TlsVersion::Tls13]);
        for bad in [
            "TLS_RSA_WITH_AES_128_CBC_SHA",
            "TLS13_AES_128_GCM_SHA256",
            "NOPE",
        ] {
            assert!(
                matches!(
                    settings(&[(prop::CIPHER_SUITES, bad)]),
                    Err(TlsConfigError::UnsupportedCipherSuite { ref name, .. }) if name == bad
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            settings(&[
                (prop::CIPHER_SUITES, "TLS_AES_256_GCM_SHA384"),
                (prop::ENABLED_PROTOCOLS, "TLSv1.2")
            ]),
            Err(TlsConfigError::NoUsableCipherSuite)
        ));
    }

    #[test]
    fn rules_and_booleans() {
        let s = settings(&[
            (
                prop::PRINCIPAL_MAPPING_RULES,
                "RULE:^CN=(.*?),.*$/$1/L,DEFAULT",
            ),
            (prop::ALLOW_DN_CHANGES, "TRUE"),
        ])
        .expect("valid");
        assert_eq!(
            s.principal_mapping_rules()
                .apply("CN=Bob,O=x")
                .ok()
                .as_deref(),
            Some("bob")
        );
        assert!(s.allow_dn_changes());
        assert!(matches!(
            settings(&[(prop::PRINCIPAL_MAPPING_RULES, "RULE:x")]),
            Err(TlsConfigError::InvalidMappingRule { .. })
        ));
        assert!(matches!(
            settings(&[(prop::ALLOW_SAN_CHANGES, "yes")]),
            Err(TlsConfigError::InvalidValue {
                property: prop::ALLOW_SAN_CHANGES,
                ..
            })
        ));
    }

    #[test]
    fn debug_redacts_secrets() {
        let s = settings(&[
            (prop::KEYSTORE_LOCATION, "/k.p12"),
            (prop::KEYSTORE_PASSWORD, "hunter2-store"),
            (prop::KEY_PASSWORD, "hunter2-key"),
        ])
        .expect("valid");
        let debug = format!("{s:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("[redacted]"));
        let inline = settings(&[PEM_TYPE, PEM_KEY, PEM_CHAIN]).expect("valid");
        assert!(!format!("{inline:?}").contains("BEGIN PRIVATE KEY"));
    }
}
