//! Which broker property names exist, which are dynamic, their synonyms,
//! defaults and types — derived from the one topic-config table
//! (`LogConfig::definitions`) and the tables of the broker's own
//! properties (broker, group coordinator, cleaner, remote tier).

use strata_log::cleaner::CleanerConfig;
use strata_log::{ConfigDef, ConfigType, LogConfig};
use strata_tiered::TieredConfig;

use crate::config::BrokerConfig;
use crate::group::config::GroupConfig;

use crate::config_entry::config_type;

/// Broker-level configs Kafka reconfigures live that are not topic-config
/// synonyms, and that Strata also applies live.
const EXTRA_DYNAMIC: &[&str] = &["producer.id.expiration.ms"];

/// Kafka broker configs the broker reads outside `config.rs` or that
/// Kafka defines and Strata ignores; all static here. (`log.*`, the
/// topic-config synonyms, the group configs and `strata.*` are recognised
/// by rule.)
const OTHER_KAFKA_CONFIGS: &[&str] = &[
    "num.network.threads",
    "num.io.threads",
    "background.threads",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "socket.listen.backlog.size",
    "max.connections.per.ip",
    "max.connection.creation.rate",
    "connections.max.idle.ms",
    "delete.topic.enable",
    "num.replica.fetchers",
    "replica.lag.time.max.ms",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "transaction.state.log.num.partitions",
    "zookeeper.connect",
    "metadata.log.dir",
    "controller.quorum.bootstrap.servers",
    "remote.log.storage.system.enable",
];

/// Is `name` a broker config Kafka (or Strata) defines? Such names are
/// refused when not dynamic; any other name is a custom config.
pub(crate) fn is_broker_config(name: &str) -> bool {
    crate::config::is_broker_property(name)
        || OTHER_KAFKA_CONFIGS.contains(&name)
        || EXTRA_DYNAMIC.contains(&name)
        || name.starts_with("log.")
        || name.starts_with("strata.")
        || name.starts_with("remote.log.")
        || name.starts_with("listener.name.")
        || crate::group::config::GroupConfig::is_known(name)
        || synonym_def(name).is_some()
}

/// Can `name` change without a restart? (Kafka `AllDynamicConfigs`,
/// narrowed to what Strata applies live.)
pub(crate) fn is_dynamic(name: &str) -> bool {
    if EXTRA_DYNAMIC.contains(&name) {
        return true;
    }
    if name == "log.message.format.version" || name.starts_with("strata.") {
        return false;
    }
    LogConfig::definitions()
        .iter()
        .any(|d| d.synonyms.first().is_some_and(|(s, _)| *s == name))
}

/// The topic config whose broker synonym `name` is, with the unit factor.
pub(crate) fn synonym_def(name: &str) -> Option<(&'static strata_log::ConfigDef, i64)> {
    LogConfig::definitions().iter().find_map(|d| {
        d.synonyms
            .iter()
            .find(|(s, _)| *s == name)
            .map(|(_, f)| (d, *f))
    })
}

/// Kafka `DynamicBrokerConfig.brokerConfigSynonyms`: the names that set the
/// same value (`log.roll.ms`/`log.roll.hours`, ...), highest precedence
/// first; just `name` for most.
pub(crate) fn broker_synonyms(name: &str) -> Vec<String> {
    match synonym_def(name) {
        Some((d, _)) if d.synonyms.len() > 1 => {
            d.synonyms.iter().map(|(s, _)| s.to_string()).collect()
        }
        _ => vec![name.to_string()],
    }
}

/// Is `name` a LIST config (APPEND/SUBTRACT allowed)? In Kafka
/// `log.dirs` and `listeners` are STRING configs, so only list-typed
/// topic-config synonyms (`log.cleanup.policy`) qualify.
pub(crate) fn is_list(name: &str) -> bool {
    synonym_def(name).is_some_and(|(d, _)| d.kind == ConfigType::List)
}

/// The default of a broker property as DescribeConfigs shows it: the
/// default of the table row that reads it (`None` where there is none, e.g.
/// `log.retention.ms`, whose default comes from `log.retention.hours`, or
/// `node.id`). Never a second copy of a default.
pub(crate) fn default_of(name: &str) -> Option<String> {
    if let Some((d, factor)) = synonym_def(name) {
        let last = d.synonyms.last().map(|(s, _)| *s);
        if d.synonyms.len() > 1 && last != Some(name) {
            return None;
        }
        if factor == 1 {
            return Some(d.default.to_string());
        }
        return d
            .default
            .parse::<i64>()
            .ok()
            .map(|v| (v / factor).to_string());
    }
    broker_row(name)
        .map(|row| row.default)
        .filter(|d| !d.is_empty())
        .map(str::to_string)
}

/// The doc line of a broker property: its table row's.
pub(crate) fn doc_of(name: &str) -> &'static str {
    match synonym_def(name) {
        Some((d, _)) => d.doc,
        None => broker_row(name).map_or("", |row| row.doc),
    }
}

/// What DescribeConfigs shows of a broker property's table row.
struct Row {
    kind: ConfigType,
    default: &'static str,
    doc: &'static str,
}

/// The row of a broker property that is not a topic-config synonym, from
/// the tables that read it: the broker's, the group coordinator's, the
/// cleaner's, the remote tier's and the log layer's broker-only rows (an
/// empty default where the property has none).
fn broker_row(name: &str) -> Option<Row> {
    fn find<T>(table: &'static [ConfigDef<T>], name: &str) -> Option<Row> {
        table.iter().find(|d| d.name == name).map(|d| Row {
            kind: d.kind,
            default: d.default,
            doc: d.doc,
        })
    }
    find(BrokerConfig::definitions(), name)
        .or_else(|| find(GroupConfig::definitions(), name))
        .or_else(|| find(crate::txn::config::TxnConfig::definitions(), name))
        .or_else(|| find(CleanerConfig::definitions(), name))
        .or_else(|| find(TieredConfig::definitions(), name))
        .or_else(|| find(LogConfig::broker_only_definitions(), name))
}

/// DescribeConfigs `config_type` of a broker property (0 = UNKNOWN for
/// custom names). Unit synonyms (`log.retention.hours`, ...) are INT.
pub(crate) fn type_of(name: &str) -> i8 {
    if let Some((d, factor)) = synonym_def(name) {
        return if factor == 1 { config_type(d.kind) } else { 3 };
    }
    match broker_row(name) {
        Some(row) => config_type(row.kind),
        None if crate::config::is_broker_property(name) || name.starts_with("log.cleaner.") => 3,
        None => 0,
    }
}
