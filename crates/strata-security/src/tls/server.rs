//! The rustls server configuration of a TLS listener, with a keystore that
//! can be swapped while the listener runs (Kafka's dynamic
//! `listener.name.<l>.ssl.keystore.*` update, `SslFactory.reconfigure`).
//!
//! The `ServerConfig` is built once; its certificate resolver holds the
//! current certificate and key behind a lock. A reload builds the new
//! certificate and key completely (reading files again, checking that the key
//! matches) before swapping, so a bad keystore leaves the old one serving.
//! Only new handshakes see the new certificate; established connections keep
//! theirs, as in Kafka.
//!
//! As in Kafka, unless `ssl.allow.dn.changes=true` a reload may not change the
//! certificate's subject, and unless `ssl.allow.san.changes=true` it may not
//! change the set of subject alternative names. Client authentication,
//! protocols, cipher suites and the truststore are fixed when the server is
//! built (the truststore is dynamic in Kafka; here it needs a new
//! [`TlsServer`]).
//!
//! # Locks
//! `ReloadableResolver::current` is the only lock: handshakes take it for
//! reading to clone an `Arc`, [`TlsServer::reload`] for writing to replace the
//! `Arc`. Nothing else is done while it is held.

use std::sync::{Arc, PoisonError, RwLock};

use rustls::crypto::{aws_lc_rs, CryptoProvider};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{InconsistentKeys, RootCertStore, ServerConfig};

use super::der;
use super::error::TlsConfigError;
use super::principal::subject_dn;
use super::settings::{prop, ClientAuth, SslSettings, TruststoreSource};
use super::store::{self, KeyMaterial};

/// OID of the subjectAltName extension.
const SUBJECT_ALT_NAME: &str = "2.5.29.17";

/// A listener's TLS server: an `Arc<rustls::ServerConfig>` whose certificate
/// can be replaced by [`TlsServer::reload`].
#[derive(Debug)]
pub struct TlsServer {
    config: Arc<ServerConfig>,
    resolver: Arc<ReloadableResolver>,
    provider: Arc<CryptoProvider>,
    client_auth: ClientAuth,
}

/// Hands every handshake the current certificate and key.
#[derive(Debug)]
struct ReloadableResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for ReloadableResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // A poisoned lock still holds a complete Arc: keep serving it.
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        Some(Arc::clone(&current))
    }
}

impl TlsServer {
    /// Reads the keystore (and truststore) of `settings` and builds the
    /// server configuration.
    ///
    /// # Errors
    /// [`TlsConfigError::NoKeystore`] without a keystore; the store errors
    /// (file not found, wrong password, no key, key not matching the
    /// certificate, JKS file, ...); [`TlsConfigError::ClientAuthWithoutTruststore`]
    /// when client certificates are requested or required without a
    /// truststore; [`TlsConfigError::Build`] when rustls refuses the result.
    pub fn new(settings: &SslSettings) -> Result<TlsServer, TlsConfigError> {
        let provider = Arc::new(CryptoProvider {
            cipher_suites: settings.cipher_suites().to_vec(),
            ..aws_lc_rs::default_provider()
        });
        let certified = certified_key(settings, &provider)?;
        let resolver = Arc::new(ReloadableResolver {
            current: RwLock::new(Arc::new(certified)),
        });

        let versions: Vec<&'static rustls::SupportedProtocolVersion> = settings
            .enabled_protocols()
            .iter()
            .map(|v| v.rustls())
            .collect();
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)
            .map_err(|e| TlsConfigError::Build {
                reason: e.to_string(),
            })?;

        // Kafka loads the truststore whatever ssl.client.auth says, so a
        // broken one is an error even when it is not used.
        let trusted = match &settings.truststore {
            Some(source) => Some(store::load_truststore(source)?),
            None => None,
        };
        let client_auth = settings.client_auth();
        let builder = match (client_auth, trusted) {
            (ClientAuth::None, _) => builder.with_no_client_auth(),
            (ClientAuth::Requested | ClientAuth::Required, None) => {
                return Err(TlsConfigError::ClientAuthWithoutTruststore {
                    client_auth: client_auth.as_str(),
                });
            }
            (ClientAuth::Requested | ClientAuth::Required, Some(certs)) => {
                let mut roots = RootCertStore::empty();
                let (property, origin) = settings
                    .truststore
                    .as_ref()
                    .map(truststore_origin)
                    .unwrap_or_default();
                for cert in certs {
                    roots
                        .add(cert)
                        .map_err(|e| TlsConfigError::BadCertificate {
                            property,
                            origin: origin.clone(),
                            reason: e.to_string(),
                        })?;
                }
                let mut verifier = WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    Arc::clone(&provider),
                );
                if client_auth == ClientAuth::Requested {
                    verifier = verifier.allow_unauthenticated();
                }
                let verifier = verifier.build().map_err(|e| TlsConfigError::Build {
                    reason: e.to_string(),
                })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config =
            builder.with_cert_resolver(Arc::clone(&resolver) as Arc<dyn ResolvesServerCert>);
        Ok(TlsServer {
            config: Arc::new(config),
            resolver,
            provider,
            client_auth,
        })
    }

    /// The configuration to accept connections with (shared; cheap to clone).
    pub fn server_config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.config)
    }

    /// Re-reads the keystore of `settings` (files again, or new inline PEM);
    /// `Ok(true)` when the certificate chain changed, `Ok(false)` when it is
    /// the same. New handshakes use the new certificate; open connections
    /// keep theirs.
    ///
    /// Only the keystore is taken from `settings`; client authentication,
    /// protocols, cipher suites and the truststore stay as built.
    ///
    /// # Errors
    /// Any keystore error of [`TlsServer::new`], and
    /// [`TlsConfigError::DnChanged`] / [`TlsConfigError::SanChanged`] when the
    /// new certificate's subject or alternative names differ and
    /// `ssl.allow.dn.changes` / `ssl.allow.san.changes` do not allow it. On
    /// error the current certificate stays.
    pub fn reload(&self, settings: &SslSettings) -> Result<bool, TlsConfigError> {
        let new = certified_key(settings, &self.provider)?;
        let old = Arc::clone(
            &self
                .resolver
                .current
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if old.cert == new.cert {
            return Ok(false);
        }
        let (Some(old_leaf), Some(new_leaf)) = (old.cert.first(), new.cert.first()) else {
            return Err(TlsConfigError::NoKeystore);
        };
        if !settings.allow_dn_changes() {
            check_same_subject(old_leaf, new_leaf)?;
        }
        if !settings.allow_san_changes()
            && subject_alt_names(old_leaf) != subject_alt_names(new_leaf)
        {
            return Err(TlsConfigError::SanChanged);
        }
        *self
            .resolver
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(new);
        Ok(true)
    }

    /// `ssl.client.auth` as built into the configuration.
    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
    }
}

/// Loads the keystore and pairs the key with its chain, checking they match.
fn certified_key(
    settings: &SslSettings,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsConfigError> {
    let source = settings
        .keystore
        .as_ref()
        .ok_or(TlsConfigError::NoKeystore)?;
    let KeyMaterial {
        chain,
        key,
        origin,
        property,
    } = store::load_keystore(source)?;
    if let Some(leaf) = chain.first() {
        // Fail on an unparsable leaf here, with the store named, not at handshake time.
        x509_parser::parse_x509_certificate(leaf).map_err(|e| TlsConfigError::BadCertificate {
            property,
            origin: origin.clone(),
            reason: e.to_string(),
        })?;
    }
    CertifiedKey::from_der(chain, key, provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => {
            TlsConfigError::KeyMismatch { property, origin }
        }
        source => TlsConfigError::UnusableKey {
            property,
            origin,
            source,
        },
    })
}

/// The property and the path or property name a truststore comes from.
fn truststore_origin(source: &TruststoreSource) -> (&'static str, String) {
    match source {
        TruststoreSource::File { path, .. } => {
            (prop::TRUSTSTORE_LOCATION, path.display().to_string())
        }
        TruststoreSource::InlinePem { .. } => (
            prop::TRUSTSTORE_CERTIFICATES,
            prop::TRUSTSTORE_CERTIFICATES.to_owned(),
        ),
    }
}

/// Kafka compares subjects as X500 principals or case-insensitively by name.
fn check_same_subject(old: &[u8], new: &[u8]) -> Result<(), TlsConfigError> {
    let dn = |der: &[u8]| subject_dn(der).unwrap_or_default();
    let (old, new) = (dn(old), dn(new));
    if old.eq_ignore_ascii_case(&new) {
        Ok(())
    } else {
        Err(TlsConfigError::DnChanged { old, new })
    }
}

/// The subject alternative names as a sorted set of encoded `GeneralName`s.
fn subject_alt_names(cert: &[u8]) -> Vec<Vec<u8>> {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert) else {
        return Vec::new();
    };
    let mut names: Vec<Vec<u8>> = parsed
        .extensions()
        .iter()
        .filter(|ext| ext.oid.to_id_string() == SUBJECT_ALT_NAME)
        .filter_map(|ext| der::read_tagged(ext.value, der::SEQUENCE).ok())
        .filter_map(|(seq, _)| der::children(seq.contents).ok())
        .flatten()
        .map(|name| name.raw.to_vec())
        .collect();
    names.sort();
    names.dedup();
    names
}
