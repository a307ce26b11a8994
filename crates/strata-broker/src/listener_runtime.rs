//! What the connections of one listener share: the listener, its TLS
//! acceptor (SSL, SASL_SSL) and its SASL setup (SASL_PLAINTEXT, SASL_SSL),
//! built once at start from Kafka's settings with the listener's
//! `listener.name.<l>.` overrides, and the per-address record of failed
//! authentications that slows repeated failures down.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata_security::sasl::{
    self, CredentialStore, JwksConfig, JwksValidator, Mechanism, OAuthBearerValidator,
    ScramCredential, ScramMechanism, UnsecuredValidatorConfig,
};
use strata_security::tls::{PrincipalMappingRules, SslSettings, TlsServer};
use tokio_rustls::TlsAcceptor;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::listeners::{listener_setting, Listener, SecurityProtocol};
use crate::security::store::SecurityStore;

/// A listener's runtime security setup.
pub(crate) struct ListenerRuntime {
    pub listener: Listener,
    /// SSL and SASL_SSL listeners: the acceptor and the reloadable server.
    pub tls: Option<ListenerTls>,
    /// SASL listeners: mechanisms and credentials.
    pub sasl: Option<ListenerSasl>,
    /// Failed authentications per client address (shared by all listeners).
    pub failures: Arc<AuthFailures>,
    /// `connection.failed.authentication.delay.ms`.
    pub failure_delay: Duration,
    /// `sasl.server.max.receive.size`.
    pub sasl_max_receive_size: usize,
}

/// A TLS listener's server and its settings (kept to reload the keystore).
pub(crate) struct ListenerTls {
    pub server: Arc<TlsServer>,
    pub acceptor: TlsAcceptor,
    pub settings: SslSettings,
    /// `ssl.principal.mapping.rules` for SSL listeners' client certificates.
    pub rules: PrincipalMappingRules,
}

/// A SASL listener's mechanisms and where they find users.
pub(crate) struct ListenerSasl {
    /// `sasl.enabled.mechanisms`, in order.
    pub mechanisms: Vec<Mechanism>,
    pub credentials: Arc<dyn CredentialStore>,
    pub oauth: OAuthBearerValidator,
    /// Signed-token validation: the key set, its URL and refresh interval.
    pub jwks: Option<(Arc<JwksValidator>, String, Duration)>,
    /// `connections.max.reauth.ms` (0: sessions never expire).
    pub max_reauth_ms: i64,
}

impl ListenerRuntime {
    /// Build `listener`'s setup from the broker's settings.
    ///
    /// # Errors
    /// The TLS stores or SASL settings of the listener are unusable; the
    /// message names the property.
    pub(crate) fn new(
        config: &BrokerConfig,
        listener: &Listener,
        store: &Arc<SecurityStore>,
        failures: Arc<AuthFailures>,
    ) -> Result<ListenerRuntime, BrokerError> {
        let fail = |reason: String| BrokerError::Security {
            listener: listener.name.clone(),
            reason,
        };
        let props = &config.properties;
        let tls = if listener.protocol.uses_tls() {
            let lookup = |name: &str| -> Option<String> {
                // Kafka: on SASL_SSL only a listener-prefixed ssl.client.auth counts.
                if name == "ssl.client.auth" && listener.protocol == SecurityProtocol::SaslSsl {
                    return props
                        .get(&format!("{}{name}", listener.config_prefix()))
                        .cloned();
                }
                listener_setting(props, &listener.name, name).cloned()
            };
            let settings = SslSettings::from_lookup(&lookup).map_err(|e| fail(e.to_string()))?;
            let server = TlsServer::new(&settings).map_err(|e| fail(e.to_string()))?;
            let rules = settings.principal_mapping_rules().clone();
            Some(ListenerTls {
                acceptor: TlsAcceptor::from(server.server_config()),
                server: Arc::new(server),
                settings,
                rules,
            })
        } else {
            None
        };
        let sasl = match config.security.sasl.get(&listener.name) {
            Some(s) if listener.protocol.uses_sasl() => {
                let mechanisms = s
                    .mechanisms
                    .iter()
                    .map(|m| m.parse::<Mechanism>().map_err(|e| fail(e.to_string())))
                    .collect::<Result<Vec<_>, _>>()?;
                let jaas = |m: Mechanism| -> Result<Option<sasl::JaasConfig>, BrokerError> {
                    s.jaas
                        .get(m.name())
                        .map(|text| {
                            sasl::parse_jaas(text).map_err(|e| {
                                fail(format!(
                                    "{}{}.sasl.jaas.config: {e}",
                                    listener.config_prefix(),
                                    m.name().to_ascii_lowercase()
                                ))
                            })
                        })
                        .transpose()
                };
                let plain_users = match jaas(Mechanism::Plain)? {
                    Some(j) => sasl::plain_users(&j),
                    None => BTreeMap::new(),
                };
                if mechanisms.contains(&Mechanism::Plain) && plain_users.is_empty() {
                    return Err(fail(format!(
                        "PLAIN is enabled but {}plain.sasl.jaas.config names no user_<name>=\"<password>\"",
                        listener.config_prefix()
                    )));
                }
                let oauth_config = match jaas(Mechanism::OAuthBearer)? {
                    Some(j) => UnsecuredValidatorConfig::from_jaas(&j)
                        .map_err(|e| fail(format!("OAUTHBEARER JAAS options: {e}")))?,
                    None => UnsecuredValidatorConfig::default(),
                };
                let jwks = if mechanisms.contains(&Mechanism::OAuthBearer) {
                    jwks_validator(props, listener).map_err(fail)?
                } else {
                    None
                };
                let oauth = match &jwks {
                    Some((v, _, _)) => OAuthBearerValidator::jwks(v.clone()),
                    None => {
                        OAuthBearerValidator::unsecured(oauth_config, Arc::new(sasl::SystemClock))
                    }
                };
                Some(ListenerSasl {
                    mechanisms,
                    credentials: Arc::new(BrokerCredentials {
                        plain: plain_users,
                        store: store.clone(),
                    }),
                    oauth,
                    jwks,
                    max_reauth_ms: s.max_reauth_ms,
                })
            }
            _ => None,
        };
        Ok(ListenerRuntime {
            listener: listener.clone(),
            tls,
            sasl,
            failures,
            failure_delay: Duration::from_millis(config.security.failed_authentication_delay_ms),
            sasl_max_receive_size: config.security.sasl_max_receive_size,
        })
    }
}

/// Kafka's secured OAUTHBEARER validation, when the listener names
/// `OAuthBearerValidatorCallbackHandler` as its server callback handler:
/// a JWK set from `sasl.oauthbearer.jwks.endpoint.url` and the expected
/// audience, issuer and claim names.
fn jwks_validator(
    props: &BTreeMap<String, String>,
    listener: &Listener,
) -> Result<Option<(Arc<JwksValidator>, String, Duration)>, String> {
    let handler_key = format!(
        "{}oauthbearer.sasl.server.callback.handler.class",
        listener.config_prefix()
    );
    let Some(handler) = props.get(&handler_key) else {
        return Ok(None);
    };
    if !crate::jwks::VALIDATOR_CLASSES.contains(&handler.trim()) {
        return Err(format!(
            "{handler_key}: {handler} is not served; use {}",
            crate::jwks::VALIDATOR_CLASSES[0]
        ));
    }
    let get =
        |name: &str| listener_setting(props, &listener.name, name).map(|v| v.trim().to_string());
    let url = get("sasl.oauthbearer.jwks.endpoint.url").ok_or_else(|| {
        "sasl.oauthbearer.jwks.endpoint.url must be set for signed OAUTHBEARER tokens".to_string()
    })?;
    let number = |name: &str, default: i64| -> Result<i64, String> {
        match get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("{name}: {v:?} is not a number")),
        }
    };
    let config = JwksConfig {
        expected_audience: get("sasl.oauthbearer.expected.audience")
            .map(|v| {
                v.split(',')
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        expected_issuer: get("sasl.oauthbearer.expected.issuer"),
        sub_claim_name: get("sasl.oauthbearer.sub.claim.name").unwrap_or_else(|| "sub".into()),
        scope_claim_name: get("sasl.oauthbearer.scope.claim.name")
            .unwrap_or_else(|| "scope".into()),
        clock_skew_seconds: number("sasl.oauthbearer.clock.skew.seconds", 30)?,
    };
    let refresh = Duration::from_millis(
        number("sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000)?.max(1_000) as u64,
    );
    let document = crate::jwks::fetch(&url)?;
    let validator = JwksValidator::new(&document, config, Arc::new(sasl::SystemClock))
        .map_err(|e| format!("JWK set at {url}: {e}"))?;
    Ok(Some((Arc::new(validator), url, refresh)))
}

/// Users of PLAIN (from the listener's JAAS) and SCRAM (from the security store).
struct BrokerCredentials {
    plain: BTreeMap<String, String>,
    store: Arc<SecurityStore>,
}

impl CredentialStore for BrokerCredentials {
    fn plain_password_matches(&self, user: &str, password: &[u8]) -> Option<bool> {
        let expected = self.plain.get(user)?;
        Some(constant_time_eq(expected.as_bytes(), password))
    }

    fn scram_credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.store
            .snapshot()
            .scram
            .get(user)
            .and_then(|m| m.get(&mechanism))
            .cloned()
    }
}

/// Compare secrets without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Recent failed authentications per client address: each failure within
/// [`FAILURE_MEMORY`] of the previous one doubles the delay before the
/// failure is answered (from `connection.failed.authentication.delay.ms`,
/// up to [`MAX_FAILURE_DELAY`]), so guessing passwords gets slow while one
/// typo costs the base delay only.
#[derive(Debug, Default)]
pub(crate) struct AuthFailures {
    recent: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

/// How long a failure is remembered.
const FAILURE_MEMORY: Duration = Duration::from_secs(60);
/// The longest delay before a failure is answered.
const MAX_FAILURE_DELAY: Duration = Duration::from_secs(5);

impl AuthFailures {
    /// Record a failure from `ip`; the delay before answering it.
    pub(crate) fn record(&self, ip: Option<IpAddr>, base: Duration) -> Duration {
        let Some(ip) = ip else { return base };
        let now = Instant::now();
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.len() > 10_000 {
            recent.retain(|_, (_, at)| now.duration_since(*at) < FAILURE_MEMORY);
        }
        let entry = recent.entry(ip).or_insert((0, now));
        if now.duration_since(entry.1) >= FAILURE_MEMORY {
            entry.0 = 0;
        }
        entry.0 = entry.0.saturating_add(1);
        entry.1 = now;
        let doublings = entry.0.saturating_sub(1).min(6);
        (base * 2u32.pow(doublings)).min(MAX_FAILURE_DELAY.max(base))
    }

    /// A success from `ip` forgets its failures.
    pub(crate) fn clear(&self, ip: Option<IpAddr>) {
        if let Some(ip) = ip {
            self.recent
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_failures_from_one_address_slow_down() {
        let f = AuthFailures::default();
        let ip = Some("10.0.0.1".parse().unwrap());
        let base = Duration::from_millis(100);
        assert_eq!(f.record(ip, base), base);
        assert_eq!(f.record(ip, base), base * 2);
        assert_eq!(f.record(ip, base), base * 4);
        for _ in 0..10 {
            f.record(ip, base);
        }
        assert_eq!(f.record(ip, base), MAX_FAILURE_DELAY);
        // Another address is not slowed by the first one's failures.
        assert_eq!(f.record(Some("10.0.0.2".parse().unwrap()), base), base);
        f.clear(ip);
        assert_eq!(f.record(ip, base), base);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }
}
