//! `strata log doctor`: explain a partition (or every partition of a log
//! dir) in plain words with numbers — when the oldest data will be deleted
//! and why not yet, why a compacted topic is not shrinking, what a restart
//! will cost, why segments roll small, how full the indexes are, how much
//! headroom compaction needs and when the next roll comes. Every finding
//! names the setting to change (docs/operations.md has the symptom table).
//!
//! # Layout
//!
//! - [`scan`]: read-only facts from the directory (segments, indexes,
//!   checkpoints), through the shared readers in `crate::read`.
//! - `config` (this file) and [`remote`]: the effective topic config, from
//!   `--config`/`--override`, the topic's configs in the broker's topic
//!   store (`strata-topics.json`) and `--topic-config` offline, or
//!   DescribeConfigs with `--bootstrap-server`.
//! - [`diagnosis`]: the finding types and the pure entry point
//!   [`diagnosis::diagnose`]; [`retention`], [`compaction`] and
//!   [`segments`] hold the reasoning (retention reuses
//!   `strata_log::retention::decide`, the broker's own rule); [`damage`]
//!   reports what `strata log verify`'s checks find; [`transactions`]
//!   rebuilds the producer state read-only and reports hanging transactions
//!   with the `kafka-transactions.sh abort` command for each.
//! - [`live`]: with `--bootstrap-server`, the groups' committed positions
//!   and the live log start/end (read-only), for "consumers fall behind
//!   retention" and per-group "consumer cache keeps deleted keys".
//! - [`cleaner_cpu`]: "compaction uses a lot of CPU", from the cleaner's
//!   statistics in the log dir (`cleaner-statistics.json`).
//!
//! Nothing is written; exit 0 with findings, 2 on usage or I/O errors.

pub mod cleaner_cpu;
pub mod compaction;
pub mod damage;
pub mod diagnosis;
pub mod live;
pub mod remote;
pub mod retention;
pub mod scan;
pub mod segments;
pub mod transactions;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use strata_log::{ConfigError, LogConfig, TopicPartition};

use crate::read::topics::{read_topic_store, TopicStore, TopicStoreError};
use crate::{EXIT_OK, EXIT_USAGE_OR_IO};
use diagnosis::{diagnose, human_bytes, DoctorSettings, Finding, Severity};
use scan::{partition_dirs, scan_partition, PartitionFacts, ScanError};

/// Options of `strata log doctor`.
#[derive(Args, Debug, Clone)]
pub struct DoctorArgs {
    /// A partition directory or a log directory (auto-detected).
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    /// Print one JSON report instead of text.
    #[arg(long)]
    json: bool,
    /// The broker's server.properties (log.retention.hours, log.segment.bytes, ...),
    /// read exactly as `strata serve` reads it.
    #[command(flatten)]
    pub config: crate::ConfigArgs,
    /// One topic-level config (`retention.ms=3600000`); may be repeated.
    #[arg(long = "topic-config", value_name = "KEY=VALUE")]
    topic_configs: Vec<String>,
    /// Fetch the topic's effective configs from a running broker (DescribeConfigs).
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap_server: Option<String>,
    /// The topic whose configs `--bootstrap-server` describes (default:
    /// every topic found under PATH).
    #[arg(long, value_name = "TOPIC", requires = "bootstrap_server")]
    topic: Option<String>,
    /// Read rate assumed for recovery and catch-up estimates, KiB/s
    /// (default 200 MiB/s).
    #[arg(long, value_name = "KIB_PER_SEC", default_value_t = 204_800)]
    read_rate_kib: u64,
    /// An open transaction whose producer has been silent for longer than this
    /// is reported as hanging (default: `transaction.max.timeout.ms` of
    /// `--config`, else Kafka's 900000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(i64).range(1..))]
    max_transaction_timeout_ms: Option<i64>,
    /// Evaluate as of this time (ms since the epoch) instead of now.
    #[arg(long, value_name = "MS", hide = true)]
    now_ms: Option<i64>,
}

/// Why the doctor could not answer.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error("expected key=value, got {arg:?}")]
    BadKeyValue { arg: String },
    #[error("invalid config: {0}")]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error(transparent)]
    Remote(#[from] remote::RemoteError),
    #[error(transparent)]
    TopicStore(#[from] TopicStoreError),
    #[error("invalid config of topic {topic} in {path}: {source}")]
    TopicStoreConfig {
        topic: String,
        path: PathBuf,
        /// Boxed: with the topic and path the variant would be the largest.
        #[source]
        source: Box<ConfigError>,
    },
    #[error("{path}: neither a partition directory nor a log directory with partitions")]
    NothingToExamine { path: PathBuf },
}

/// Where the effective config came from.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigSource {
    /// Kafka defaults plus `--config`/`--override`, the topic's configs in
    /// the topic store (per partition), then `--topic-config`.
    Offline,
    /// DescribeConfigs from `--bootstrap-server`.
    Broker { bootstrap_server: String },
}

/// The doctor's answer about one partition.
#[derive(Debug, Serialize)]
pub struct PartitionReport {
    pub dir: PathBuf,
    pub topic: String,
    pub partition: i32,
    pub segments: usize,
    pub bytes: u64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// No `replication-offset-checkpoint` entry: the log end was assumed.
    pub high_watermark_assumed: bool,
    /// The topic's config overrides taken from the topic store (offline).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub topic_store_configs: BTreeMap<String, String>,
    /// The settings this partition's findings refer to.
    pub effective_config: BTreeMap<&'static str, String>,
    pub findings: Vec<Finding>,
}

/// The whole answer.
#[derive(Debug, Serialize)]
pub struct Report {
    pub now_ms: i64,
    pub config_source: ConfigSource,
    /// The settings the findings refer to, as Kafka prints them.
    pub effective_config: BTreeMap<&'static str, String>,
    pub settings: DoctorSettings,
    pub partitions: Vec<PartitionReport>,
}

/// `key=value` pairs into a map.
fn key_values(args: &[String]) -> Result<BTreeMap<String, String>, DoctorError> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => Err(DoctorError::BadKeyValue { arg: a.clone() }),
        })
        .collect()
}

/// The offline config layers: broker properties (file, then `--override`)
/// and `--topic-config`; the topic store's configs go between them, per
/// topic ([`OfflineConfig::for_topic`]).
struct OfflineConfig {
    broker: LogConfig,
    /// `--topic-config`: wins over the topic store.
    cli_topic: BTreeMap<String, String>,
    /// The first entry of `log.dirs` (or `log.dir`), where the broker keeps
    /// its topic store.
    first_log_dir: Option<PathBuf>,
}

impl OfflineConfig {
    /// Kafka `LogConfig` layering: broker defaults, then the topic's
    /// overrides (topic store, then the command line).
    fn for_topic(
        &self,
        topic: &str,
        store: Option<&TopicStore>,
    ) -> Result<(LogConfig, BTreeMap<String, String>), DoctorError> {
        let stored = store
            .and_then(|s| s.topics.get(topic))
            .map(|t| t.configs.clone())
            .unwrap_or_default();
        let mut overrides = stored.clone();
        overrides.extend(self.cli_topic.clone());
        let cfg =
            LogConfig::with_overrides(&self.broker, &overrides).map_err(|source| {
                match store.filter(|_| !stored.is_empty()) {
                    Some(s) => DoctorError::TopicStoreConfig {
                        topic: topic.to_owned(),
                        path: s.path.clone(),
                        source: Box::new(source),
                    },
                    None => DoctorError::Config(source),
                }
            })?;
        Ok((cfg, stored))
    }
}

/// The broker's configuration (loaded once by the binary, as `strata serve`
/// loads it), then topic overrides.
fn offline_config(
    args: &DoctorArgs,
    broker: &strata_broker::BrokerConfig,
) -> Result<(OfflineConfig, DoctorSettings), DoctorError> {
    let base = broker.log_config.clone();
    let cli_topic = key_values(&args.topic_configs)?;
    // Validate the command-line layer on its own, as before.
    LogConfig::with_overrides(&base, &cli_topic)?;
    let cfg = OfflineConfig {
        broker: base,
        cli_topic,
        first_log_dir: broker.log_dirs.first().cloned(),
    };
    let settings = DoctorSettings {
        retention_check_interval_ms: broker.log_retention_check_interval_ms,
        recovery_threads: broker.num_recovery_threads_per_data_dir,
        cleaner_threads: broker.cleaner.threads,
        max_transaction_timeout_ms: i64::from(broker.txn.max_timeout_ms),
        ..DoctorSettings::default()
    };
    Ok((cfg, settings))
}

/// The configs findings mention, for the report header.
const SHOWN: &[&str] = &[
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "segment.bytes",
    "segment.ms",
    "segment.jitter.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "file.delete.delay.ms",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "message.timestamp.type",
];

/// The topic store for `path` (a partition or log dir): in its log dir, else
/// in the first log dir named by the broker properties.
fn topic_store_for(
    path: &Path,
    offline: &OfflineConfig,
    cache: &mut BTreeMap<PathBuf, Option<TopicStore>>,
) -> Result<Option<TopicStore>, DoctorError> {
    let log_dir = if scan::is_partition_dir(path) {
        path.parent().map(Path::to_path_buf)
    } else {
        Some(path.to_path_buf())
    };
    for dir in log_dir.iter().chain(offline.first_log_dir.iter()) {
        if !cache.contains_key(dir) {
            let store = read_topic_store(dir)?;
            cache.insert(dir.clone(), store);
        }
        if let Some(Some(store)) = cache.get(dir) {
            return Ok(Some(store.clone()));
        }
    }
    Ok(None)
}

fn shown_config(cfg: &LogConfig) -> BTreeMap<&'static str, String> {
    SHOWN
        .iter()
        .filter_map(|k| cfg.get_as_string(k).map(|v| (*k, v)))
        .collect()
}

fn report_for(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    topic_store_configs: BTreeMap<String, String>,
    s: &DoctorSettings,
    bootstrap: Option<&str>,
    now: i64,
) -> PartitionReport {
    let mut findings = diagnose(facts, cfg, s, now);
    damage::diagnose(&damage::verify_findings(&facts.dir), &mut findings);
    let txn_settings = transactions::TxnSettings {
        max_transaction_timeout_ms: s.max_transaction_timeout_ms,
        bootstrap: bootstrap.unwrap_or("HOST:PORT").to_owned(),
    };
    transactions::diagnose(
        facts,
        &transactions::read_open_transactions(facts),
        &txn_settings,
        now,
        &mut findings,
    );
    PartitionReport {
        dir: facts.dir.clone(),
        topic: facts.tp.topic.clone(),
        partition: facts.tp.partition,
        segments: facts.segments.len(),
        bytes: facts.size(),
        log_start_offset: facts.log_start_offset.0,
        log_end_offset: facts.log_end_offset.0,
        high_watermark: facts.high_watermark.unwrap_or(facts.log_end_offset).0,
        high_watermark_assumed: facts.high_watermark.is_none(),
        topic_store_configs,
        effective_config: shown_config(cfg),
        findings,
    }
}

/// Examine `args.paths`.
///
/// # Errors
/// Bad arguments, unreadable directories, a broker that does not answer.
pub fn examine(
    args: &DoctorArgs,
    broker: &strata_broker::BrokerConfig,
) -> Result<Report, DoctorError> {
    let now = args.now_ms.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    });
    let (offline, mut settings) = offline_config(args, broker)?;
    let mut cfg = LogConfig::with_overrides(&offline.broker, &offline.cli_topic)?;
    let mut source = ConfigSource::Offline;
    // Live: each topic's configs from DescribeConfigs, fetched once.
    let mut remote_cfgs: BTreeMap<String, LogConfig> = BTreeMap::new();
    if let Some(server) = &args.bootstrap_server {
        if let Some(topic) = &args.topic {
            cfg = remote_config(server, topic, &mut settings)?;
            remote_cfgs.insert(topic.clone(), cfg.clone());
        }
        source = ConfigSource::Broker {
            bootstrap_server: server.clone(),
        };
    }
    settings.read_bytes_per_sec = args.read_rate_kib.max(1) << 10;
    if let Some(ms) = args.max_transaction_timeout_ms {
        settings.max_transaction_timeout_ms = ms;
    }
    let offline_mode = matches!(source, ConfigSource::Offline);
    let mut stores = BTreeMap::new();
    let mut histories: BTreeMap<PathBuf, Vec<strata_log::cleaner::CleaningRecord>> =
        BTreeMap::new();
    // Live group positions are a bonus: a broker that does not answer them
    // (connection, older API) leaves the rest of the answer intact.
    let mut live: Option<Result<live::Live, ()>> = None;
    let mut partitions = Vec::new();
    for path in &args.paths {
        let store = if offline_mode {
            topic_store_for(path, &offline, &mut stores)?
        } else {
            None
        };
        let dirs = if scan::is_partition_dir(path) {
            vec![path.clone()]
        } else {
            let d = partition_dirs(path).map_err(ScanError::from)?;
            if d.is_empty() {
                return Err(DoctorError::NothingToExamine { path: path.clone() });
            }
            d
        };
        for dir in dirs {
            let topic = dir_topic(&dir);
            if args
                .topic
                .as_ref()
                .is_some_and(|t| topic.as_ref() != Some(t))
            {
                continue;
            }
            let (topic_cfg, stored) = match (&args.bootstrap_server, &store, &topic) {
                (Some(server), _, Some(topic)) => {
                    let c = match remote_cfgs.get(topic) {
                        Some(c) => c.clone(),
                        None => {
                            let c = remote_config(server, topic, &mut settings)?;
                            remote_cfgs.insert(topic.clone(), c.clone());
                            c
                        }
                    };
                    (c, BTreeMap::new())
                }
                (None, Some(store), Some(topic)) => offline.for_topic(topic, Some(store))?,
                _ => (cfg.clone(), BTreeMap::new()),
            };
            let facts = scan_partition(&dir, topic_cfg.cleanup_policy.compact)?;
            let tp = TopicPartition::new(facts.tp.topic.clone(), facts.tp.partition);
            let mut report = report_for(
                &facts,
                &topic_cfg,
                stored,
                &settings,
                args.bootstrap_server.as_deref(),
                now,
            );
            if let Some(server) = &args.bootstrap_server {
                let conn = live.get_or_insert_with(|| {
                    live::Live::connect(server).map_err(|e| live_unavailable(&e))
                });
                if let Ok(l) = conn {
                    match l.positions(&tp).and_then(|g| Ok((g, l.offsets(&tp)?))) {
                        Ok((groups, offsets)) => live::diagnose(
                            &facts,
                            &topic_cfg,
                            &settings,
                            &groups,
                            &offsets,
                            now,
                            &mut report.findings,
                        ),
                        Err(e) => {
                            live_unavailable(&e);
                            *conn = Err(());
                        }
                    }
                }
            }
            if let Some(log_dir) = dir.parent() {
                let history = histories
                    .entry(log_dir.to_path_buf())
                    .or_insert_with(|| cleaner_history(log_dir));
                cleaner_cpu::diagnose(history, &tp, &mut report.findings);
            }
            partitions.push(report);
        }
    }
    Ok(Report {
        now_ms: now,
        config_source: source,
        effective_config: shown_config(&cfg),
        settings,
        partitions,
    })
}

/// DescribeConfigs of `topic`: its effective config (the broker's retention
/// check interval goes to `settings`).
fn remote_config(
    server: &str,
    topic: &str,
    settings: &mut DoctorSettings,
) -> Result<LogConfig, DoctorError> {
    let remote = remote::describe_topic_configs(server, topic)?;
    if let Some(v) = remote.retention_check_interval_ms {
        settings.retention_check_interval_ms = v;
    }
    Ok(LogConfig::with_overrides(
        &LogConfig::default(),
        &remote.topic,
    )?)
}

/// Say on stderr why live group positions are missing from the answer.
fn live_unavailable(e: &remote::RemoteError) {
    eprintln!("strata log doctor: no live group positions: {e}");
}

/// The cleaner's statistics of `log_dir`; an unreadable file is reported on
/// stderr and read as no history (the doctor still answers the rest).
fn cleaner_history(log_dir: &Path) -> Vec<strata_log::cleaner::CleaningRecord> {
    let fs = strata_log::fs::StdFs::shared();
    strata_log::cleaner::read_history(fs.as_ref(), log_dir).unwrap_or_else(|e| {
        eprintln!("strata log doctor: ignoring the cleaner statistics: {e}");
        Vec::new()
    })
}

/// The topic of a partition directory, from its name.
fn dir_topic(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    strata_log::format::parse_partition_dir_name(&name)
        .ok()
        .map(|p| p.tp.topic)
}

fn print_text(r: &Report) {
    println!("as of {} ms; config: {:?}", r.now_ms, r.config_source);
    for p in &r.partitions {
        println!(
            "\n{}-{} ({}): {} segment(s), {}, offsets {}..{} (log start {}, high watermark {}{})",
            p.topic,
            p.partition,
            p.dir.display(),
            p.segments,
            human_bytes(p.bytes),
            p.log_start_offset,
            p.log_end_offset,
            p.log_start_offset,
            p.high_watermark,
            if p.high_watermark_assumed {
                ", assumed = log end"
            } else {
                ""
            }
        );
        if !p.topic_store_configs.is_empty() {
            let layered: Vec<String> = p
                .topic_store_configs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            println!(
                "  topic configs from the topic store: {}",
                layered.join(", ")
            );
        }
        for f in &p.findings {
            let sev = match f.severity {
                Severity::Info => "info",
                Severity::Warning => "WARN",
                Severity::Error => "ERROR",
            };
            let name = |v: &dyn erased::Named| v.name();
            println!(
                "  [{sev}] {} / {}: {}",
                name(&f.symptom),
                name(&f.cause),
                f.message
            );
            if !f.settings.is_empty() {
                println!("      change: {}", f.settings.join(", "));
            }
        }
    }
}

/// snake_case names of the serde enums, for text output.
mod erased {
    pub trait Named {
        fn name(&self) -> String;
    }
    impl<T: serde::Serialize> Named for T {
        fn name(&self) -> String {
            serde_json::to_value(self)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        }
    }
}

/// Run `strata log doctor`; returns the exit code.
pub fn run(args: &DoctorArgs, broker: &strata_broker::BrokerConfig) -> u8 {
    match examine(args, broker) {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("strata log doctor: {e}");
                        return EXIT_USAGE_OR_IO;
                    }
                }
            } else {
                print_text(&report);
            }
            EXIT_OK
        }
        Err(e) => {
            eprintln!("strata log doctor: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            EXIT_USAGE_OR_IO
        }
    }
}
