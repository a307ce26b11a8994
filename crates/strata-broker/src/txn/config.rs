//! Transaction coordinator settings (Kafka `TransactionStateManagerConfigs`,
//! `TransactionLogConfigs`): one definition table with Kafka's names and
//! defaults, parsed once at start with the rest of the broker's config.

use std::collections::BTreeMap;

use strata_log::config::{
    apply, defaults, resolved, ConfigDef, ConfigError, ConfigType, Validator,
};

/// Typed transaction coordinator configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms` (900000).
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms` (604800000).
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10000).
    pub abort_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms` (3600000).
    pub remove_expired_interval_ms: i64,
    /// `transaction.state.log.num.partitions` (50).
    pub num_partitions: i32,
    /// `transaction.state.log.replication.factor` (3; cluster mode only).
    pub replication_factor: i16,
    /// `transaction.state.log.min.isr` (2; cluster mode only).
    pub min_isr: i32,
    /// `transaction.state.log.segment.bytes` (104857600).
    pub segment_bytes: i32,
    /// `transaction.state.log.load.buffer.size` (5242880).
    pub load_buffer_size: i32,
    /// `transaction.partition.verification.enable` (true).
    pub verification_enable: bool,
}

type Def = ConfigDef<TxnConfig>;

static TABLE: &[Def] = &[
    Def::new(
        "transaction.max.timeout.ms",
        ConfigType::Int,
        "900000",
        Validator::AtLeast(1),
        "The maximum transaction timeout a producer may ask for.",
        |c, v| c.max_timeout_ms = v.int(),
        |c| c.max_timeout_ms.to_string(),
    ),
    Def::new(
        "transactional.id.expiration.ms",
        ConfigType::Int,
        "604800000",
        Validator::AtLeast(1),
        "A transactional id with no transaction for this long is removed.",
        |c, v| c.id_expiration_ms = v.long(),
        |c| c.id_expiration_ms.to_string(),
    ),
    Def::new(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        ConfigType::Int,
        "10000",
        Validator::AtLeast(1),
        "How often to abort transactions that outlived their timeout.",
        |c, v| c.abort_interval_ms = v.long(),
        |c| c.abort_interval_ms.to_string(),
    ),
    Def::new(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        ConfigType::Int,
        "3600000",
        Validator::AtLeast(1),
        "How often to remove expired transactional ids.",
        |c, v| c.remove_expired_interval_ms = v.long(),
        |c| c.remove_expired_interval_ms.to_string(),
    ),
    Def::new(
        "transaction.state.log.num.partitions",
        ConfigType::Int,
        "50",
        Validator::AtLeast(1),
        "The number of partitions of __transaction_state.",
        |c, v| c.num_partitions = v.int(),
        |c| c.num_partitions.to_string(),
    ),
    Def::new(
        "transaction.state.log.replication.factor",
        ConfigType::Int,
        "3",
        Validator::AtLeast(1),
        "The replication factor of __transaction_state (cluster mode; a single node keeps one replica).",
        |c, v| c.replication_factor = i16::try_from(v.long()).unwrap_or(i16::MAX),
        |c| c.replication_factor.to_string(),
    ),
    Def::new(
        "transaction.state.log.min.isr",
        ConfigType::Int,
        "2",
        Validator::AtLeast(1),
        "min.insync.replicas of __transaction_state (cluster mode).",
        |c, v| c.min_isr = v.int(),
        |c| c.min_isr.to_string(),
    ),
    Def::new(
        "transaction.state.log.segment.bytes",
        ConfigType::Int,
        "104857600",
        Validator::AtLeast(1),
        "The segment size of __transaction_state.",
        |c, v| c.segment_bytes = v.int(),
        |c| c.segment_bytes.to_string(),
    ),
    Def::new(
        "transaction.state.log.load.buffer.size",
        ConfigType::Int,
        "5242880",
        Validator::AtLeast(1),
        "Bytes read per step while loading __transaction_state.",
        |c, v| c.load_buffer_size = v.int(),
        |c| c.load_buffer_size.to_string(),
    ),
    Def::new(
        "transaction.partition.verification.enable",
        ConfigType::Boolean,
        "true",
        Validator::Any,
        "Partition leaders verify with the coordinator that a transactional batch belongs to an ongoing transaction (KIP-890).",
        |c, v| c.verification_enable = v.boolean(),
        |c| c.verification_enable.to_string(),
    ),
];

impl Default for TxnConfig {
    fn default() -> Self {
        let blank = TxnConfig {
            max_timeout_ms: 0,
            id_expiration_ms: 0,
            abort_interval_ms: 0,
            remove_expired_interval_ms: 0,
            num_partitions: 0,
            replication_factor: 0,
            min_isr: 0,
            segment_bytes: 0,
            load_buffer_size: 0,
            verification_enable: false,
        };
        defaults(TABLE, blank)
    }
}

impl TxnConfig {
    /// Whether the table defines property `name`.
    pub(crate) fn is_known(name: &str) -> bool {
        TABLE.iter().any(|d| d.name == name)
    }

    /// The definition table.
    pub fn definitions() -> &'static [ConfigDef<TxnConfig>] {
        TABLE
    }

    /// Every row's resolved value (for `--print-config`).
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        resolved(TABLE, self)
    }

    /// Build from broker properties; absent names take Kafka's defaults.
    ///
    /// # Errors
    /// [`ConfigError::InvalidValue`] naming the first bad property.
    pub(crate) fn from_properties(
        props: &BTreeMap<String, String>,
    ) -> Result<TxnConfig, ConfigError> {
        let mut c = TxnConfig::default();
        apply(TABLE, &mut c, props)?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas_and_overrides_apply() {
        let c = TxnConfig::from_properties(&BTreeMap::new()).unwrap();
        assert_eq!(c, TxnConfig::default());
        assert_eq!((c.max_timeout_ms, c.num_partitions), (900_000, 50));
        assert!(c.verification_enable);
        let mut p = BTreeMap::new();
        p.insert("transaction.max.timeout.ms".to_string(), "0".to_string());
        assert_eq!(
            TxnConfig::from_properties(&p).unwrap_err().to_string(),
            r#"invalid value "0" for transaction.max.timeout.ms: must be at least 1"#
        );
    }
}
