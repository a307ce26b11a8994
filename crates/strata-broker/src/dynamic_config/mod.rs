//! Dynamic broker configs (Kafka KIP-226): configs changed with
//! AlterConfigs / IncrementalAlterConfigs on a BROKER resource, applied
//! without a restart and kept across restarts.
//!
//! Two levels, as in Kafka: resource name `"<broker.id>"` is this broker's
//! own dynamic config (`DYNAMIC_BROKER_CONFIG`), resource name `""` the
//! cluster-wide default (`DYNAMIC_DEFAULT_BROKER_CONFIG`). The effective
//! broker properties are the static ones (`server.properties` and
//! `--override`) overlaid by the cluster default, then by the per-broker
//! level; an overlaid name removes its unit synonyms first (a dynamic
//! `log.retention.ms` beats a static `log.retention.hours`), as Kafka's
//! `DynamicBrokerConfig.overrideProps` does.
//!
//! What is dynamic: the broker defaults of topic configs Kafka reconfigures
//! live (`DynamicLogConfig`: the first broker synonym of every topic config
//! except `log.message.format.version`; unit synonyms such as
//! `log.retention.hours` are not dynamic in Kafka either) and
//! `producer.id.expiration.ms`. Kafka also reconfigures the cleaner threads,
//! listeners and thread pools; Strata cannot apply those live yet, so they
//! are refused like every other static broker config. Names Kafka does not
//! know are accepted and kept as custom configs (Kafka allows custom
//! broker properties).
//!
//! Errors follow Kafka's broker-side preprocessing (`ConfigAdminManager`):
//! a config that cannot change dynamically, or an invalid value, is
//! INVALID_REQUEST (KAFKA-13609 keeps it so); APPEND/SUBTRACT on a non-list
//! config is INVALID_CONFIG.
//!
//! A change of the log defaults is pushed at once to every live log: each
//! log's config is recomputed from the new defaults and its topic's
//! overrides, so topics overriding a key keep their value. Logs created
//! later start from the new defaults.

mod describe;
mod names;
mod ops;
mod store;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use strata_log::LogConfig;
use thiserror::Error;

use crate::config::BrokerConfig;

pub(crate) use describe::{broker_entries, default_entries, log_synonyms};
pub(crate) use names::is_dynamic;
pub(crate) use ops::{apply_list_op, incremental, op, replace_all, ConfigOp};
pub use store::BROKER_CONFIGS_FILE;

/// Why a dynamic broker config change was refused, or the store failed.
/// Messages are Kafka's where Kafka has one; the code a client sees is
/// decided in `error_code`.
#[derive(Debug, Error)]
pub enum DynamicConfigError {
    #[error("Cannot update these configs dynamically: Set({})", names.join(", "))]
    NotDynamic { names: Vec<String> },
    #[error("Invalid value {value} for configuration {name}: {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: String,
    },
    #[error("Unexpected broker id, expected {expected}, but received {name}")]
    UnexpectedBrokerId { expected: i32, name: String },
    #[error("Node id must be an integer, but it is: {name}")]
    BadBrokerId { name: String },
    #[error("Null value not supported for : {}", names.join(", "))]
    NullValue { names: Vec<String> },
    #[error("Error due to duplicate config keys")]
    DuplicateKeys,
    #[error("Unknown operations type {op}")]
    UnknownOperation { op: i8 },
    #[error("Config value {op} is not allowed for config key: {name}")]
    NotAList { op: &'static str, name: String },
    #[error("I/O error on {path} while {op}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid dynamic broker config store")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} has unsupported format version {version}")]
    Version { path: PathBuf, version: u32 },
    /// Cluster mode: the change could not be written to etcd.
    #[error("cluster metadata: {reason}")]
    Cluster { reason: String },
}

/// An invalid value of broker property `name`, from the log-config parser.
fn invalid_value(name: &str, value: &str, e: &strata_log::ConfigError) -> DynamicConfigError {
    let reason = match e {
        strata_log::ConfigError::InvalidValue { rule, .. } => rule.clone(),
        strata_log::ConfigError::Unknown { name } => format!("unknown config {name}"),
    };
    DynamicConfigError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        reason,
    }
}

/// Which dynamic level a BROKER resource name addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// `""`: the cluster-wide default.
    ClusterDefault,
    /// `"<broker.id>"`: this broker.
    Broker,
}

/// The configs of each level and what they add up to.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub per_broker: BTreeMap<String, String>,
    pub cluster_default: BTreeMap<String, String>,
    /// Static properties overlaid by both levels.
    pub merged: BTreeMap<String, String>,
}

#[derive(Debug)]
struct State {
    doc: store::Document,
    snapshot: Arc<Snapshot>,
    log_defaults: Arc<LogConfig>,
}

/// This broker's dynamic configs: in memory, persisted, and the log
/// defaults they produce.
///
/// Locking: `writer` serialises changes (held across validation, the file
/// write and the swap); `state` is a leaf lock held only to copy or swap
/// the current values.
#[derive(Debug)]
pub(crate) struct DynamicBrokerConfig {
    node_id: i32,
    static_props: BTreeMap<String, String>,
    /// The file the levels persist to; `None` in cluster mode, where they
    /// live in etcd and the caller of [`Self::alter_with`] writes them.
    path: Option<PathBuf>,
    state: RwLock<State>,
    writer: Mutex<()>,
}

impl DynamicBrokerConfig {
    /// Load the store from `dir` (the first log dir). Stored entries that
    /// are no longer dynamic or no longer valid are dropped with an error
    /// log, as Kafka does when it reads them back.
    ///
    /// # Errors
    /// The file cannot be read or is corrupt.
    pub(crate) fn open(
        dir: &Path,
        config: &BrokerConfig,
    ) -> Result<DynamicBrokerConfig, DynamicConfigError> {
        let path = dir.join(BROKER_CONFIGS_FILE);
        let doc = store::load(&path)?;
        Ok(Self::from_document(Some(path), doc, config))
    }

    /// Cluster mode: the levels come from etcd (`cluster_default` and this
    /// broker's `per_broker`), nothing is read from or written to a file.
    pub(crate) fn clustered(
        config: &BrokerConfig,
        cluster_default: BTreeMap<String, String>,
        per_broker: BTreeMap<String, String>,
    ) -> DynamicBrokerConfig {
        let mut doc = store::Document {
            cluster_default,
            ..store::Document::default()
        };
        if !per_broker.is_empty() {
            doc.brokers.insert(config.node_id.to_string(), per_broker);
        }
        Self::from_document(None, doc, config)
    }

    fn from_document(
        path: Option<PathBuf>,
        mut doc: store::Document,
        config: &BrokerConfig,
    ) -> DynamicBrokerConfig {
        sanitize(&mut doc.cluster_default, "cluster default");
        for (id, level) in doc.brokers.iter_mut() {
            sanitize(level, id);
        }
        let state = match state_for(&config.properties, config.node_id, doc.clone()) {
            Ok(state) => state,
            Err(error) => {
                tracing::error!(%error, "dynamic broker configs do not combine; using static log defaults");
                // Keep the document (a later change may repair it); serve
                // the static configuration meanwhile.
                let mut state = State::from_static(config);
                state.doc = doc;
                state
            }
        };
        let snapshot = &state.snapshot;
        if !snapshot.cluster_default.is_empty() || !snapshot.per_broker.is_empty() {
            tracing::info!(cluster_default = ?snapshot.cluster_default, per_broker = ?snapshot.per_broker,
                "applying dynamic broker configs");
        }
        DynamicBrokerConfig {
            node_id: config.node_id,
            static_props: config.properties.0.clone(),
            path,
            state: RwLock::new(state),
            writer: Mutex::new(()),
        }
    }

    /// Cluster mode: take the levels another broker wrote to etcd. Returns
    /// the new log defaults when they changed (the caller pushes them to
    /// the live logs), `None` when nothing this broker uses changed.
    pub(crate) fn replace_levels(
        &self,
        mut cluster_default: BTreeMap<String, String>,
        mut per_broker: BTreeMap<String, String>,
    ) -> Option<Arc<LogConfig>> {
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        sanitize(&mut cluster_default, "cluster default");
        sanitize(&mut per_broker, "this broker");
        let (old_snapshot, old_defaults) = {
            let s = self.read();
            (s.snapshot.clone(), s.log_defaults.clone())
        };
        if old_snapshot.cluster_default == cluster_default && old_snapshot.per_broker == per_broker
        {
            return None;
        }
        let mut doc = store::Document {
            cluster_default,
            ..store::Document::default()
        };
        if !per_broker.is_empty() {
            doc.brokers.insert(self.node_id.to_string(), per_broker);
        }
        let state = match state_for(&self.static_props, self.node_id, doc) {
            Ok(state) => state,
            Err(error) => {
                tracing::error!(%error, "dynamic broker configs from the cluster do not combine; keeping the current ones");
                return None;
            }
        };
        let changed = *old_defaults != *state.log_defaults;
        let defaults = state.log_defaults.clone();
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = state;
        changed.then_some(defaults)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Topic-config defaults: static properties with the dynamic levels applied.
    pub(crate) fn log_defaults(&self) -> Arc<LogConfig> {
        self.read().log_defaults.clone()
    }

    /// The current configs of both levels.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.read().snapshot.clone()
    }

    /// Properties from `server.properties` and `--override`.
    pub(crate) fn static_props(&self) -> &BTreeMap<String, String> {
        &self.static_props
    }

    /// The level a BROKER resource name addresses (Kafka
    /// `validateResourceNameIsCurrentNodeId`).
    pub(crate) fn level_of(&self, resource_name: &str) -> Result<Level, DynamicConfigError> {
        if resource_name.is_empty() {
            return Ok(Level::ClusterDefault);
        }
        let id: i32 = resource_name
            .parse()
            .map_err(|_| DynamicConfigError::BadBrokerId {
                name: resource_name.to_string(),
            })?;
        if id != self.node_id {
            return Err(DynamicConfigError::UnexpectedBrokerId {
                expected: self.node_id,
                name: resource_name.to_string(),
            });
        }
        Ok(Level::Broker)
    }

    /// Replace the configs of `level` with `change(current)`, validated and
    /// (unless `validate_only`) persisted and made current. Returns the new
    /// log defaults when they changed.
    ///
    /// # Errors
    /// A non-dynamic or invalid config, or the store write failed (nothing
    /// changes then).
    pub(crate) fn alter(
        &self,
        level: Level,
        validate_only: bool,
        change: impl FnOnce(
            &BTreeMap<String, String>,
        ) -> Result<BTreeMap<String, String>, DynamicConfigError>,
    ) -> Result<Option<Arc<LogConfig>>, DynamicConfigError> {
        self.alter_with(level, validate_only, change, |_, _| Ok(()))
    }

    /// [`Self::alter`], with `write(current, new)` storing the changed
    /// level first when the configs have no file (cluster mode: etcd).
    pub(crate) fn alter_with(
        &self,
        level: Level,
        validate_only: bool,
        change: impl FnOnce(
            &BTreeMap<String, String>,
        ) -> Result<BTreeMap<String, String>, DynamicConfigError>,
        write: impl FnOnce(
            &BTreeMap<String, String>,
            &BTreeMap<String, String>,
        ) -> Result<(), DynamicConfigError>,
    ) -> Result<Option<Arc<LogConfig>>, DynamicConfigError> {
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (mut doc, old_defaults) = {
            let s = self.read();
            (s.doc.clone(), s.log_defaults.clone())
        };
        let me = self.node_id.to_string();
        let current = match level {
            Level::ClusterDefault => doc.cluster_default.clone(),
            Level::Broker => doc.brokers.get(&me).cloned().unwrap_or_default(),
        };
        let new = change(&current)?;
        validate_level(&new)?;
        let written = new.clone();
        match level {
            Level::ClusterDefault => doc.cluster_default = new,
            Level::Broker if new.is_empty() => {
                doc.brokers.remove(&me);
            }
            Level::Broker => {
                doc.brokers.insert(me.clone(), new);
            }
        }
        let per_broker = doc.brokers.get(&me).cloned().unwrap_or_default();
        let merged = merge(&self.static_props, &doc.cluster_default, &per_broker);
        let defaults = LogConfig::from_broker_properties(&merged).map_err(|e| {
            let name = first_bad_property(&merged, &e);
            let value = merged.get(&name).cloned().unwrap_or_default();
            invalid_value(&name, &value, &e)
        })?;
        check_local_retention(&defaults)?;
        if validate_only {
            return Ok(None);
        }
        match &self.path {
            Some(path) => store::persist(path, &doc)?,
            None => write(&current, &written)?,
        }
        let changed = *old_defaults != defaults;
        let defaults = Arc::new(defaults);
        let snapshot = Snapshot {
            per_broker,
            cluster_default: doc.cluster_default.clone(),
            merged,
        };
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = State {
            doc,
            snapshot: Arc::new(snapshot),
            log_defaults: defaults.clone(),
        };
        Ok(changed.then_some(defaults))
    }
}

/// Static properties overlaid by the cluster default, then by the
/// per-broker level; each overlaid name first removes its unit synonyms.
/// What `doc` makes of this broker's configs: its two levels, merged over
/// the static properties, and the log defaults they give.
fn state_for(
    static_props: &BTreeMap<String, String>,
    node_id: i32,
    doc: store::Document,
) -> Result<State, strata_log::ConfigError> {
    let per_broker = doc
        .brokers
        .get(&node_id.to_string())
        .cloned()
        .unwrap_or_default();
    let merged = merge(static_props, &doc.cluster_default, &per_broker);
    let log_defaults = LogConfig::from_broker_properties(&merged)?;
    Ok(State {
        snapshot: Arc::new(Snapshot {
            per_broker,
            cluster_default: doc.cluster_default.clone(),
            merged,
        }),
        log_defaults: Arc::new(log_defaults),
        doc,
    })
}

impl State {
    /// The static configuration alone (no dynamic level).
    fn from_static(config: &BrokerConfig) -> State {
        State {
            doc: store::Document::default(),
            snapshot: Arc::new(Snapshot {
                per_broker: BTreeMap::new(),
                cluster_default: BTreeMap::new(),
                merged: config.properties.0.clone(),
            }),
            log_defaults: Arc::new(config.log_config.clone()),
        }
    }
}

pub(crate) fn merge(
    static_props: &BTreeMap<String, String>,
    cluster_default: &BTreeMap<String, String>,
    per_broker: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = static_props.clone();
    for level in [cluster_default, per_broker] {
        for (k, v) in level {
            for s in names::broker_synonyms(k) {
                out.remove(s.as_str());
            }
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// Kafka `DynamicBrokerConfig.validateConfigs` for one level: no static
/// config, and every dynamic value of the right type and range.
fn validate_level(props: &BTreeMap<String, String>) -> Result<(), DynamicConfigError> {
    let fixed: Vec<String> = props
        .keys()
        .filter(|k| names::is_broker_config(k) && !is_dynamic(k))
        .cloned()
        .collect();
    if !fixed.is_empty() {
        return Err(DynamicConfigError::NotDynamic { names: fixed });
    }
    for (k, v) in props.iter().filter(|(k, _)| is_dynamic(k)) {
        let one: BTreeMap<String, String> = [(k.clone(), v.clone())].into();
        LogConfig::from_broker_properties(&one).map_err(|e| invalid_value(k, v, &e))?;
    }
    Ok(())
}

/// Drop stored entries that would be refused now (read back from disk).
fn sanitize(level: &mut BTreeMap<String, String>, which: &str) {
    let bad: Vec<String> = level
        .iter()
        .filter(|(k, v)| {
            let one: BTreeMap<String, String> = [((*k).clone(), (*v).clone())].into();
            validate_level(&one).is_err()
        })
        .map(|(k, _)| k.clone())
        .collect();
    for k in bad {
        tracing::error!(level = which, config = %k, "ignoring a stored dynamic broker config that is not dynamic or not valid");
        level.remove(&k);
    }
}

/// The broker property behind a log-config error on the merged properties.
fn first_bad_property(merged: &BTreeMap<String, String>, e: &strata_log::ConfigError) -> String {
    let topic_name = match e {
        strata_log::ConfigError::InvalidValue { name, .. } => *name,
        strata_log::ConfigError::Unknown { name } => return name.clone(),
    };
    LogConfig::definition(topic_name)
        .and_then(|d| {
            d.synonyms
                .iter()
                .find(|(s, _)| merged.contains_key(*s))
                .map(|(s, _)| s.to_string())
        })
        .unwrap_or_else(|| topic_name.to_string())
}

/// Kafka `DynamicLogConfig.validateReconfiguration`: local retention must
/// fit inside total retention.
fn check_local_retention(c: &LogConfig) -> Result<(), DynamicConfigError> {
    local_fits_total(
        ("log.local.retention.ms", c.local_retention_ms),
        ("log.retention.ms", c.retention_ms),
        c.retention_ms != -1,
    )?;
    local_fits_total(
        ("log.local.retention.bytes", c.local_retention_bytes),
        ("log.retention.bytes", c.retention_bytes),
        c.retention_bytes > -1,
    )
}

/// Kafka's broker-level rule for one (local, total) retention pair: with a
/// bounded total, a local value other than -2 (follow the total) must be
/// neither -1 (unlimited) nor above the total.
fn local_fits_total(
    (local_name, local): (&str, i64),
    (total_name, total): (&str, i64),
    total_bounded: bool,
) -> Result<(), DynamicConfigError> {
    if !total_bounded || local == -2 {
        return Ok(());
    }
    let reason = if local == -1 {
        format!("Value must not be -1 as {total_name} value is set as {total}.")
    } else if local > total {
        format!("Value must not be more than {total_name} property value: {total}")
    } else {
        return Ok(());
    };
    Err(DynamicConfigError::InvalidValue {
        name: local_name.to_string(),
        value: local.to_string(),
        reason,
    })
}
