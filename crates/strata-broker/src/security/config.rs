//! Security settings other than the `ssl.*` store settings (which the TLS
//! acceptor reads per listener when it starts): SASL mechanisms and JAAS
//! per listener, re-authentication, the authorizer, super users, and the
//! delay before a failed authentication is answered. Kafka's names and
//! defaults; per-listener values with Kafka's `listener.name.<l>.` and
//! `listener.name.<l>.<mechanism>.` prefixes.

use std::collections::BTreeMap;

use crate::listeners::{listener_setting, Listener};

/// Kafka's `sasl.enabled.mechanisms` default. GSSAPI (Kerberos) is not
/// served by Strata, so a SASL listener must name its mechanisms.
const DEFAULT_MECHANISMS: &str = "GSSAPI";
/// The mechanisms Strata serves.
pub(crate) const SUPPORTED_MECHANISMS: &[&str] =
    &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];
/// Kafka's authorizer classes; either enables ACL authorization.
pub(crate) const AUTHORIZER_CLASSES: &[&str] = &[
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
];

/// Why the security settings are unusable.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {rule}")]
pub struct SecurityConfigError {
    pub name: String,
    pub rule: String,
}

/// The parsed security settings (not the `ssl.*` stores).
#[derive(Clone, Debug, Default)]
pub struct SecurityConfig {
    /// `authorizer.class.name` names Kafka's standard authorizer.
    pub authorizer_enabled: bool,
    /// `super.users`: `User:a;User:b`.
    pub super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found` (default false).
    pub allow_everyone_if_no_acl_found: bool,
    /// `connection.failed.authentication.delay.ms` (default 100).
    pub failed_authentication_delay_ms: u64,
    /// `sasl.server.max.receive.size` (default 524288): the largest frame an
    /// unauthenticated connection may send.
    pub sasl_max_receive_size: usize,
    /// SASL settings per SASL listener name.
    pub sasl: BTreeMap<String, ListenerSasl>,
    /// `quota.window.num` (default 11): samples of a client quota's rate.
    pub quota_window_num: u32,
    /// `quota.window.size.seconds` (default 1): each sample's span.
    pub quota_window_size_seconds: i64,
}

/// One SASL listener's settings. `Debug` leaves the JAAS texts out (they
/// hold passwords).
#[derive(Clone, Default)]
pub struct ListenerSasl {
    /// `sasl.enabled.mechanisms`, in the order given.
    pub mechanisms: Vec<String>,
    /// `[listener.name.<l>.<mech>.]sasl.jaas.config` per mechanism (upper-case name).
    pub jaas: BTreeMap<String, String>,
    /// `connections.max.reauth.ms` (0: sessions do not expire).
    pub max_reauth_ms: i64,
}

impl std::fmt::Debug for ListenerSasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerSasl")
            .field("mechanisms", &self.mechanisms)
            .field("jaas", &self.jaas.keys().collect::<Vec<_>>())
            .field("max_reauth_ms", &self.max_reauth_ms)
            .finish()
    }
}

impl SecurityConfig {
    /// Parse from the broker's properties for `listeners`.
    ///
    /// # Errors
    /// A SASL listener enables no mechanism Strata serves, a mechanism is
    /// unknown, a number does not parse, or the authorizer class is unknown.
    pub fn from_properties(
        props: &BTreeMap<String, String>,
        listeners: &[Listener],
    ) -> Result<SecurityConfig, SecurityConfigError> {
        let err = |name: &str, rule: String| SecurityConfigError {
            name: name.to_string(),
            rule,
        };
        let number = |name: &str, default: i64| -> Result<i64, SecurityConfigError> {
            match props.get(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| err(name, format!("{v:?} is not a number >= 0"))),
            }
        };
        let authorizer = props
            .get("authorizer.class.name")
            .map(|s| s.trim())
            .unwrap_or("");
        let authorizer_enabled = if authorizer.is_empty() {
            false
        } else if AUTHORIZER_CLASSES.contains(&authorizer) {
            true
        } else {
            return Err(err(
                "authorizer.class.name",
                format!(
                    "{authorizer} is not served; use {} (Kafka's standard ACL authorizer)",
                    AUTHORIZER_CLASSES[0]
                ),
            ));
        };
        let super_users = props
            .get("super.users")
            .map(|s| {
                s.split(';')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        for p in &super_users {
            if !p.contains(':') {
                return Err(err(
                    "super.users",
                    format!("{p:?} is not a principal of the form User:name"),
                ));
            }
        }
        let allow_everyone_if_no_acl_found = match props
            .get("allow.everyone.if.no.acl.found")
            .map(|s| s.trim().to_ascii_lowercase())
        {
            None => false,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => {
                return Err(err(
                    "allow.everyone.if.no.acl.found",
                    format!("{v:?} is not true or false"),
                ))
            }
        };
        let mut sasl = BTreeMap::new();
        for l in listeners.iter().filter(|l| l.protocol.uses_sasl()) {
            let value = listener_setting(props, &l.name, "sasl.enabled.mechanisms")
                .map_or(DEFAULT_MECHANISMS, String::as_str);
            let mut mechanisms = Vec::new();
            for m in value.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                let m = m.to_ascii_uppercase();
                if SUPPORTED_MECHANISMS.contains(&m.as_str()) {
                    mechanisms.push(m);
                } else if m != "GSSAPI" {
                    return Err(err(
                        &format!("{}sasl.enabled.mechanisms", l.config_prefix()),
                        format!("unknown SASL mechanism {m}"),
                    ));
                }
            }
            if mechanisms.is_empty() {
                return Err(err(
                    &format!("{}sasl.enabled.mechanisms", l.config_prefix()),
                    format!(
                        "listener {} uses {} but enables no mechanism Strata serves ({}; \
                         GSSAPI/Kerberos is not served)",
                        l.name,
                        l.protocol,
                        SUPPORTED_MECHANISMS.join(", ")
                    ),
                ));
            }
            let mut jaas = BTreeMap::new();
            for m in &mechanisms {
                let key = format!(
                    "{}{}.sasl.jaas.config",
                    l.config_prefix(),
                    m.to_ascii_lowercase()
                );
                if let Some(v) = props.get(&key).or_else(|| props.get("sasl.jaas.config")) {
                    jaas.insert(m.clone(), v.clone());
                }
            }
            let reauth_name = format!("{}connections.max.reauth.ms", l.config_prefix());
            let max_reauth_ms = if props.contains_key(&reauth_name) {
                number(&reauth_name, 0)?
            } else {
                number("connections.max.reauth.ms", 0)?
            };
            sasl.insert(
                l.name.clone(),
                ListenerSasl {
                    mechanisms,
                    jaas,
                    max_reauth_ms,
                },
            );
        }
        Ok(SecurityConfig {
            authorizer_enabled,
            super_users,
            allow_everyone_if_no_acl_found,
            failed_authentication_delay_ms: number(
                "connection.failed.authentication.delay.ms",
                100,
            )? as u64,
            sasl_max_receive_size: number("sasl.server.max.receive.size", 524_288)? as usize,
            sasl,
            quota_window_num: number("quota.window.num", 11)?.clamp(1, 1_000) as u32,
            quota_window_size_seconds: number("quota.window.size.seconds", 1)?.clamp(1, 3_600),
        })
    }

    /// Security property names the broker knows (not warned about as unknown).
    pub fn is_known(name: &str) -> bool {
        name.starts_with("ssl.")
            || name.starts_with("sasl.")
            || name.starts_with("listener.name.")
            || matches!(
                name,
                "authorizer.class.name"
                    | "super.users"
                    | "allow.everyone.if.no.acl.found"
                    | "connections.max.reauth.ms"
                    | "connection.failed.authentication.delay.ms"
                    | "principal.builder.class"
                    | "listener.security.protocol.map"
                    | "inter.broker.listener.name"
                    | "security.inter.broker.protocol"
                    | "quota.window.num"
                    | "quota.window.size.seconds"
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listeners::SecurityProtocol;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sasl_listener(name: &str) -> Listener {
        Listener {
            name: name.into(),
            host: String::new(),
            port: 0,
            protocol: SecurityProtocol::SaslSsl,
        }
    }

    #[test]
    fn sasl_listener_needs_a_served_mechanism() {
        let l = [sasl_listener("EXTERNAL")];
        let e = SecurityConfig::from_properties(&props(&[]), &l).unwrap_err();
        assert!(e.rule.contains("GSSAPI"), "{e}");
        let e = SecurityConfig::from_properties(
            &props(&[("sasl.enabled.mechanisms", "PLAIN,KERBEROS5")]),
            &l,
        )
        .unwrap_err();
        assert!(e.rule.contains("KERBEROS5"), "{e}");
        let c = SecurityConfig::from_properties(
            &props(&[
                ("sasl.enabled.mechanisms", "GSSAPI"),
                (
                    "listener.name.external.sasl.enabled.mechanisms",
                    "scram-sha-512,PLAIN",
                ),
                (
                    "listener.name.external.plain.sasl.jaas.config",
                    "X required;",
                ),
                ("sasl.jaas.config", "Y required;"),
                ("connections.max.reauth.ms", "60000"),
            ]),
            &l,
        )
        .unwrap();
        let s = &c.sasl["EXTERNAL"];
        assert_eq!(s.mechanisms, ["SCRAM-SHA-512", "PLAIN"]);
        assert_eq!(s.jaas["PLAIN"], "X required;");
        assert_eq!(s.jaas["SCRAM-SHA-512"], "Y required;");
        assert_eq!(s.max_reauth_ms, 60_000);
        assert!(
            !format!("{c:?}").contains("X required"),
            "Debug shows a JAAS text"
        );
    }

    #[test]
    fn authorizer_and_super_users() {
        let c = SecurityConfig::from_properties(
            &props(&[
                ("authorizer.class.name", AUTHORIZER_CLASSES[0]),
                ("super.users", "User:admin; User:CN=broker,O=x"),
                ("allow.everyone.if.no.acl.found", "TRUE"),
            ]),
            &[],
        )
        .unwrap();
        assert!(c.authorizer_enabled && c.allow_everyone_if_no_acl_found);
        assert_eq!(c.super_users, ["User:admin", "User:CN=broker,O=x"]);
        assert!(SecurityConfig::from_properties(
            &props(&[("authorizer.class.name", "com.example.Mine")]),
            &[]
        )
        .is_err());
        assert!(SecurityConfig::from_properties(&props(&[("super.users", "admin")]), &[]).is_err());
        let d = SecurityConfig::from_properties(&props(&[]), &[]).unwrap();
        assert!(!d.authorizer_enabled);
        assert_eq!(d.failed_authentication_delay_ms, 100);
        assert_eq!(d.sasl_max_receive_size, 524_288);
    }
}
