//! [`ConfigEntry`]: one config as DescribeConfigs and CreateTopics (v5+)
//! report it — name, value, source, synonyms, type and documentation — with
//! the protocol's source, resource and type numbers. Topic entries are built
//! in `apis::configs`, broker entries in `dynamic_config`; both use these.

use strata_log::ConfigType;

/// DescribeConfigs `config_source` values.
pub(crate) mod source {
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
}

/// DescribeConfigs resource types.
pub(crate) mod resource {
    pub const TOPIC: i8 = 2;
    pub const BROKER: i8 = 4;
}

/// One described config.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
    pub read_only: bool,
    /// (name, value, source), highest precedence first.
    pub synonyms: Vec<(String, Option<String>, i8)>,
    /// DescribeConfigs `config_type`: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7.
    pub config_type: i8,
    pub doc: &'static str,
}

/// DescribeConfigs `config_type` of Kafka's PASSWORD configs.
pub(crate) const PASSWORD_TYPE: i8 = 9;

/// A config whose value is secret: Kafka's PASSWORD-typed configs (key and
/// store passwords, inline PEM keys and trust stores, JAAS configurations),
/// with or without a `listener.name.<l>.` prefix. DescribeConfigs answers
/// them with no value and `is_sensitive`, as Kafka does.
pub(crate) fn is_sensitive(name: &str) -> bool {
    name.ends_with("password")
        || name.ends_with("sasl.jaas.config")
        || name.ends_with("ssl.keystore.key")
        || name.ends_with("ssl.truststore.certificates")
        || name.ends_with("ssl.keystore.certificate.chain")
}

pub(crate) fn config_type(kind: ConfigType) -> i8 {
    match kind {
        ConfigType::Boolean => 1,
        ConfigType::String => 2,
        ConfigType::Int => 3,
        ConfigType::Long => 5,
        ConfigType::Double => 6,
        ConfigType::List => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::is_sensitive;

    #[test]
    fn secrets_are_sensitive_with_or_without_a_listener_prefix() {
        for name in [
            "ssl.keystore.password",
            "ssl.key.password",
            "ssl.truststore.password",
            "ssl.keystore.key",
            "listener.name.external.ssl.keystore.key",
            "listener.name.sasl_ssl.plain.sasl.jaas.config",
            "sasl.jaas.config",
        ] {
            assert!(is_sensitive(name), "{name}");
        }
        for name in [
            "ssl.keystore.location",
            "log.retention.ms",
            "listeners",
            "super.users",
        ] {
            assert!(!is_sensitive(name), "{name}");
        }
    }
}
