//! Listeners as Kafka names them: `listeners`, `advertised.listeners`,
//! `listener.security.protocol.map`, `inter.broker.listener.name` /
//! `security.inter.broker.protocol`, and the per-listener settings that
//! Kafka prefixes with `listener.name.<name>.` (lower-case listener name).
//!
//! A listener is `NAME://host:port`; its security protocol is looked up in
//! the map by name (Kafka's default map names each protocol after itself,
//! so `SSL://:9093` is an SSL listener). Names are upper-cased and unique,
//! ports unique (port 0 aside). Parsing is pure; [`BrokerConfig`] resolves
//! the listeners once after its table pass.
//!
//! [`BrokerConfig`]: crate::config::BrokerConfig

use std::collections::BTreeMap;
use std::fmt;

/// Kafka's `SecurityProtocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Parse Kafka's name (case-insensitive, as Kafka's `forName`).
    pub fn parse(s: &str) -> Option<SecurityProtocol> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    /// The connection is wrapped in TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Clients authenticate with SASL before any other request.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One listener endpoint: `NAME://host:port` and its security protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// Listener name, upper case (Kafka's `ListenerName.normalised`).
    pub name: String,
    /// Host to bind (empty = all interfaces) or to advertise.
    pub host: String,
    pub port: u16,
    /// From `listener.security.protocol.map`.
    pub protocol: SecurityProtocol,
}

impl Listener {
    /// `host:port` suitable for binding.
    pub fn bind_address(&self) -> String {
        let host = if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        };
        if host.contains(':') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// `NAME://host:port` as Kafka prints it.
    pub fn render(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{}://{host}:{}", self.name, self.port)
    }

    /// The prefix of this listener's own settings: `listener.name.<name>.`.
    pub fn config_prefix(&self) -> String {
        format!("listener.name.{}.", self.name.to_ascii_lowercase())
    }
}

/// An endpoint before its protocol is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
}

/// Kafka's default `listener.security.protocol.map`.
pub const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// Parse one `NAME://host:port` (IPv6 hosts in brackets).
fn parse_endpoint(value: &str) -> Result<Endpoint, String> {
    let (name, rest) = value
        .split_once("://")
        .ok_or_else(|| format!("{value}: expected LISTENER_NAME://host:port"))?;
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("{value}: expected LISTENER_NAME://host:port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{value}: port is not a number in 0..=65535"))?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "{value}: listener name must be letters, digits, '_' or '-'"
        ));
    }
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Ok(Endpoint {
        name: name.to_ascii_uppercase(),
        host,
        port,
    })
}

/// Parse a comma-separated endpoint list; names must differ, and so must
/// non-zero ports (Kafka's `listenerListToEndPoints` checks).
pub(crate) fn parse_endpoints(value: &str) -> Result<Vec<Endpoint>, String> {
    let mut out: Vec<Endpoint> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let e = parse_endpoint(part)?;
        if out.iter().any(|o| o.name == e.name) {
            return Err(format!(
                "each listener must have a different name ({} twice)",
                e.name
            ));
        }
        if e.port != 0 && out.iter().any(|o| o.port == e.port && o.host == e.host) {
            return Err(format!(
                "each listener must have a different port ({} twice)",
                e.port
            ));
        }
        out.push(e);
    }
    Ok(out)
}

/// Parse `listener.security.protocol.map`: `NAME:PROTOCOL` pairs.
pub(crate) fn parse_protocol_map(
    value: &str,
) -> Result<BTreeMap<String, SecurityProtocol>, String> {
    let mut map = BTreeMap::new();
    for pair in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, protocol) = pair
            .split_once(':')
            .ok_or_else(|| format!("{pair}: expected LISTENER_NAME:SECURITY_PROTOCOL"))?;
        let protocol = SecurityProtocol::parse(protocol).ok_or_else(|| {
            format!(
                "{pair}: unknown security protocol {protocol} \
                 (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"
            )
        })?;
        if map
            .insert(name.trim().to_ascii_uppercase(), protocol)
            .is_some()
        {
            return Err(format!("listener {} is mapped twice", name.trim()));
        }
    }
    Ok(map)
}

/// Give each endpoint its protocol from `map`.
pub(crate) fn with_protocols(
    endpoints: Vec<Endpoint>,
    map: &BTreeMap<String, SecurityProtocol>,
) -> Result<Vec<Listener>, String> {
    endpoints
        .into_iter()
        .map(|e| {
            let protocol = *map.get(&e.name).ok_or_else(|| {
                format!(
                    "no security protocol defined for listener {} in listener.security.protocol.map",
                    e.name
                )
            })?;
            Ok(Listener {
                name: e.name,
                host: e.host,
                port: e.port,
                protocol,
            })
        })
        .collect()
}

/// A listener's value of `name`: `listener.name.<listener>.<name>` first,
/// then the plain `name` (Kafka's per-listener override rule).
pub fn listener_setting<'a>(
    props: &'a BTreeMap<String, String>,
    listener: &str,
    name: &str,
) -> Option<&'a String> {
    let prefixed = format!("listener.name.{}.{name}", listener.to_ascii_lowercase());
    props.get(&prefixed).or_else(|| props.get(name))
}

/// The listener brokers use for each other: `inter.broker.listener.name`,
/// else the listener named after `security.inter.broker.protocol` (Kafka's
/// rule; setting both is an error).
pub(crate) fn inter_broker_listener(
    listener_name: Option<&str>,
    protocol: Option<&str>,
) -> Result<String, String> {
    match (listener_name, protocol) {
        (Some(_), Some(_)) => Err(
            "only one of inter.broker.listener.name and security.inter.broker.protocol may be set"
                .into(),
        ),
        (Some(name), None) => Ok(name.trim().to_ascii_uppercase()),
        (None, Some(p)) => SecurityProtocol::parse(p)
            .map(|p| p.name().to_string())
            .ok_or_else(|| format!("security.inter.broker.protocol: unknown protocol {p}")),
        (None, None) => Ok("PLAINTEXT".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_several_listeners_with_kafka_rules() {
        let e = parse_endpoints("PLAINTEXT://:9092, ssl://127.0.0.1:9093,SASL_SSL://[::1]:9094")
            .unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[1].name, "SSL");
        assert_eq!(e[2].host, "::1");
        let map = parse_protocol_map(DEFAULT_PROTOCOL_MAP).unwrap();
        let l = with_protocols(e, &map).unwrap();
        assert_eq!(l[1].protocol, SecurityProtocol::Ssl);
        assert!(l[2].protocol.uses_tls() && l[2].protocol.uses_sasl());
        assert_eq!(l[2].render(), "SASL_SSL://[::1]:9094");
        assert_eq!(l[0].bind_address(), "0.0.0.0:9092");
    }

    #[test]
    fn refuses_duplicates_and_unmapped_names() {
        assert!(parse_endpoints("A://h:1,a://h:2")
            .unwrap_err()
            .contains("different name"));
        assert!(parse_endpoints("A://h:1,B://h:1")
            .unwrap_err()
            .contains("different port"));
        assert!(parse_endpoints("A://h:0,B://h:0").is_ok());
        let map = parse_protocol_map(DEFAULT_PROTOCOL_MAP).unwrap();
        let err = with_protocols(parse_endpoints("CLIENT://h:1").unwrap(), &map).unwrap_err();
        assert!(err.contains("CLIENT"), "{err}");
        let map = parse_protocol_map("CLIENT:SASL_SSL,INTERNAL:PLAINTEXT").unwrap();
        let l = with_protocols(parse_endpoints("CLIENT://h:1").unwrap(), &map).unwrap();
        assert_eq!(l[0].protocol, SecurityProtocol::SaslSsl);
        assert!(parse_protocol_map("X:TLS")
            .unwrap_err()
            .contains("unknown security protocol"));
        assert!(parse_endpoint("X//h:1").is_err());
        assert!(parse_endpoint("X://h:99999").is_err());
    }

    #[test]
    fn per_listener_settings_override_plain_ones() {
        let props: BTreeMap<String, String> = [
            ("ssl.keystore.location", "/a"),
            ("listener.name.external.ssl.keystore.location", "/b"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            listener_setting(&props, "EXTERNAL", "ssl.keystore.location").unwrap(),
            "/b"
        );
        assert_eq!(
            listener_setting(&props, "INTERNAL", "ssl.keystore.location").unwrap(),
            "/a"
        );
        assert!(listener_setting(&props, "INTERNAL", "ssl.key.password").is_none());
    }

    #[test]
    fn inter_broker_listener_follows_kafka() {
        assert_eq!(inter_broker_listener(None, None).unwrap(), "PLAINTEXT");
        assert_eq!(
            inter_broker_listener(Some("internal"), None).unwrap(),
            "INTERNAL"
        );
        assert_eq!(
            inter_broker_listener(None, Some("sasl_ssl")).unwrap(),
            "SASL_SSL"
        );
        assert!(inter_broker_listener(Some("A"), Some("SSL")).is_err());
    }
}
