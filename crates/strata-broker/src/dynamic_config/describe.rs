//! DescribeConfigs of BROKER resources, as Kafka's `ConfigHelper` builds
//! them: for `"<broker.id>"` every config with its effective value, and for
//! `""` only the cluster-default dynamic configs.
//!
//! Synonyms are listed in Kafka's precedence — per-broker dynamic, cluster
//! default dynamic, static, Kafka default — over the name and its unit
//! synonyms (`log.retention.ms`, `.minutes`, `.hours`), then everything
//! before the first entry for the described name is dropped, so
//! `log.retention.hours` never reports a `log.retention.ms` value as its own.
//! The entry's source is its first synonym's (DEFAULT_CONFIG when none).

use std::collections::BTreeMap;

use strata_log::{ConfigDef, LogConfig};

use super::names::{broker_synonyms, default_of, doc_of, is_dynamic, type_of};
use super::DynamicBrokerConfig;
use super::Snapshot;
use crate::config::{BrokerConfig, Listener};
use crate::config_entry::{source, ConfigEntry};

type Synonym = (String, Option<String>, i8);

/// Broker properties described besides the topic-config synonyms.
const EXTRA: &[&str] = &[
    "producer.id.expiration.ms",
    "log.retention.check.interval.ms",
    "log.cleaner.enable",
    "log.cleaner.threads",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.max.bytes.per.second",
];

fn synonyms(name: &str, snap: &Snapshot, static_props: &BTreeMap<String, String>) -> Vec<Synonym> {
    let names = broker_synonyms(name);
    let mut out = Vec::new();
    for (map, src) in [
        (&snap.per_broker, source::DYNAMIC_BROKER_CONFIG),
        (&snap.cluster_default, source::DYNAMIC_DEFAULT_BROKER_CONFIG),
        (static_props, source::STATIC_BROKER_CONFIG),
    ] {
        for n in &names {
            if let Some(v) = map.get(n) {
                out.push((n.clone(), Some(v.clone()), src));
            }
        }
    }
    for n in &names {
        if let Some(d) = default_of(n) {
            out.push((n.clone(), Some(d), source::DEFAULT_CONFIG));
        }
    }
    let first = out.iter().position(|s| s.0 == name).unwrap_or(out.len());
    out.split_off(first)
}

fn entry(name: &str, value: Option<String>, syns: Vec<Synonym>) -> ConfigEntry {
    ConfigEntry {
        name: name.to_string(),
        value,
        source: syns.first().map_or(source::DEFAULT_CONFIG, |s| s.2),
        read_only: !is_dynamic(name),
        synonyms: syns,
        config_type: type_of(name),
        doc: doc_of(name),
    }
}

/// The broker's own properties with their effective values.
fn own_values(c: &BrokerConfig, advertised: &[Listener]) -> Vec<(&'static str, String)> {
    let render = |ls: &[Listener]| {
        ls.iter()
            .map(Listener::render)
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut v = vec![
        ("listeners", render(&c.listeners)),
        ("advertised.listeners", render(advertised)),
        (
            "inter.broker.listener.name",
            c.inter_broker_listener.clone(),
        ),
        ("node.id", c.node_id.to_string()),
        ("broker.id", c.node_id.to_string()),
        (
            "log.dirs",
            c.log_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("num.partitions", c.num_partitions.to_string()),
        (
            "default.replication.factor",
            c.default_replication_factor.to_string(),
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics_enable.to_string(),
        ),
        (
            "socket.request.max.bytes",
            c.socket_request_max_bytes.to_string(),
        ),
        ("max.connections", c.max_connections.to_string()),
        ("queued.max.requests", c.queued_max_requests.to_string()),
        (
            "queued.max.request.bytes",
            c.queued_max_request_bytes
                .map_or("-1".to_string(), |b| b.to_string()),
        ),
        (
            "max.incremental.fetch.session.cache.slots",
            c.fetch_session_cache_slots.to_string(),
        ),
        (
            "num.recovery.threads.per.data.dir",
            c.num_recovery_threads_per_data_dir.to_string(),
        ),
        (
            "offsets.topic.num.partitions",
            c.group.offsets_topic_num_partitions.to_string(),
        ),
    ];
    if let Some(rack) = &c.rack {
        v.push(("broker.rack", rack.clone()));
    }
    v
}

/// DescribeConfigs of BROKER `"<broker.id>"`: every config this broker
/// knows (`config`: the static settings, `advertised`: the listener
/// Metadata advertises), effective values, Kafka's sources and synonyms.
pub(crate) fn broker_entries(
    dynamic: &DynamicBrokerConfig,
    config: &BrokerConfig,
    advertised: &[Listener],
) -> Vec<ConfigEntry> {
    let snap = dynamic.snapshot();
    let statics = dynamic.static_props();
    let mut out: Vec<ConfigEntry> = Vec::new();
    let mut listed = std::collections::BTreeSet::new();
    let mut push = |out: &mut Vec<ConfigEntry>, name: &str, value: Option<String>| {
        if listed.insert(name.to_string()) {
            out.push(entry(name, value, synonyms(name, &snap, statics)));
        }
    };
    let effective = |name: &str| {
        snap.merged
            .get(name)
            .map(|v| v.trim().to_string())
            .or_else(|| default_of(name))
    };
    for (name, value) in own_values(config, advertised) {
        push(&mut out, name, Some(value));
    }
    for name in EXTRA {
        push(&mut out, name, effective(name));
    }
    for def in LogConfig::definitions() {
        for (name, _) in def.synonyms {
            push(&mut out, name, effective(name));
        }
    }
    for name in snap.merged.keys() {
        push(&mut out, name, effective(name));
    }
    out
}

/// DescribeConfigs of BROKER `""`: the cluster-default dynamic configs only,
/// synonyms limited to that level (Kafka `createBrokerConfigEntry` with
/// `perBrokerConfig = false`).
pub(crate) fn default_entries(dynamic: &DynamicBrokerConfig) -> Vec<ConfigEntry> {
    let snap = dynamic.snapshot();
    let statics = dynamic.static_props();
    snap.cluster_default
        .iter()
        .map(|(name, value)| {
            let syns = synonyms(name, &snap, statics)
                .into_iter()
                .filter(|s| s.2 == source::DYNAMIC_DEFAULT_BROKER_CONFIG)
                .collect();
            entry(name, Some(value.clone()), syns)
        })
        .collect()
}

/// Broker-level synonyms of topic config `def`, for a topic's entry:
/// dynamic per-broker, dynamic default, static (every unit synonym), then
/// the default under the first synonym's name.
pub(crate) fn log_synonyms(dynamic: &DynamicBrokerConfig, def: &ConfigDef) -> Vec<Synonym> {
    let snap = dynamic.snapshot();
    let statics = dynamic.static_props();
    let mut out = Vec::new();
    for (map, src) in [
        (&snap.per_broker, source::DYNAMIC_BROKER_CONFIG),
        (&snap.cluster_default, source::DYNAMIC_DEFAULT_BROKER_CONFIG),
        (statics, source::STATIC_BROKER_CONFIG),
    ] {
        for (syn, _) in def.synonyms {
            if let Some(v) = map.get(*syn) {
                out.push((syn.to_string(), Some(v.clone()), src));
            }
        }
    }
    if let Some((first, _)) = def.synonyms.first() {
        out.push((
            first.to_string(),
            Some(def.default.to_string()),
            source::DEFAULT_CONFIG,
        ));
    }
    out
}
