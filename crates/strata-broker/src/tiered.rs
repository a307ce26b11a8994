//! Glue between the broker and its remote tier (`strata-tiered`, KIP-405):
//! one function per broker hook, the logic itself lives in
//! [`strata_tiered::RemoteLogManager`].
//!
//! - [`start`] (broker start): builds the manager when
//!   `remote.log.storage.system.enable=true`. Cluster mode: the catalogue is
//!   a [`TailedRlmm`] fed by [`remote_metadata`] (the replicated
//!   `__remote_log_metadata`, created through the cluster). Single node:
//!   creates `__remote_log_metadata` in the topic store the first time (Kafka's topic config: unlimited
//!   retention, delete policy; later starts keep whatever config it has, so
//!   a user's change survives), points the manager at the topic store
//!   (every eligible partition is tiered; creation, deletion and config
//!   changes are picked up at the next task round) and starts its tasks.
//!   In cluster mode only the leader of a partition copies; followers learn
//!   the copied offset from the catalogue ([`on_leadership_change`] applies
//!   each new snapshot's leaderships at once).
//! - [`remote_read`] (Fetch): an offset below the local log start of a
//!   tiered partition is read from remote storage on the bounded reader pool.
//! - [`list_offset`] (ListOffsets): EARLIEST spans both tiers, LATEST_TIERED
//!   is the highest copied offset, timestamps are searched remotely first.
//! - [`validate_topic`] (CreateTopics / AlterConfigs): Kafka's rules.
//! - [`shutdown`]: stops the tasks before the logs close.

use std::sync::Arc;

use bytes::Bytes;
use strata_log::{Log, LogConfig, LogError, Offset, SharedClock, Timestamp};
use strata_tiered::rlmm::tailed::TailedRlmm;
use strata_tiered::{RemoteLogManager, ReplicaRole, TieredError};

use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::error::BrokerError;
use crate::remote_metadata;

/// How long a metadata write waits to read its own record back.
const READ_BACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

const EARLIEST: i64 = -2;
const LATEST_TIERED: i64 = -5;

/// Start the remote tier if the broker enables it.
///
/// # Errors
/// Invalid tiered-storage settings, or the metadata cannot be rebuilt.
pub(crate) async fn start(broker: &Arc<Broker>, clock: SharedClock) -> Result<(), BrokerError> {
    let config = broker.config.tiered.clone();
    if !config.enabled {
        return refuse_tiered_topics(broker);
    }
    let (logs, node_id) = (broker.logs.clone(), broker.config.node_id);
    let open = match &broker.cluster {
        None => {
            ensure_metadata_topic(broker, config.metadata_partitions)?;
            tokio::task::spawn_blocking(move || {
                RemoteLogManager::open(config, logs, node_id, clock)
            })
        }
        Some(cluster) => {
            let writer = Arc::new(remote_metadata::Writer::new(
                Arc::clone(cluster),
                config.metadata_partitions,
            ));
            let rlmm = Arc::new(TailedRlmm::new(writer, clock.clone(), READ_BACK_TIMEOUT));
            tokio::spawn(remote_metadata::run_reader(
                Arc::clone(broker),
                Arc::clone(cluster),
                Arc::clone(&rlmm),
                broker.shutdown.clone(),
            ));
            tokio::task::spawn_blocking(move || {
                RemoteLogManager::open_with_rlmm(config, logs, node_id, clock, rlmm)
            })
        }
    };
    let rlm = open.await.map_err(|source| BrokerError::Task {
        task: "starting tiered storage",
        source,
    })??;
    let weak = Arc::downgrade(broker);
    rlm.set_partition_source(Arc::new(move || match weak.upgrade() {
        Some(b) => tiered_partitions(&b),
        None => Vec::new(),
    }));
    // Register the tiered partitions before the first request is served: a
    // fetch below the local start of an unregistered partition would be
    // answered OFFSET_OUT_OF_RANGE instead of from the remote tier.
    let registering = Arc::clone(&rlm);
    tokio::task::spawn_blocking(move || registering.sync_partitions())
        .await
        .map_err(|source| BrokerError::Task {
            task: "registering tiered partitions",
            source,
        })?;
    rlm.start().map_err(|source| BrokerError::Io {
        op: "starting the tiered-storage scheduler",
        source,
    })?;
    tracing::info!(location = ?rlm.config().location, "tiered storage started");
    if let Some(replicas) = &broker.replicas {
        replicas.set_tiered(Arc::clone(&rlm));
    }
    let _ = broker.tiered.set(rlm);
    Ok(())
}

/// Kafka `TopicBasedRemoteLogMetadataManager.createTopic`: the metadata topic
/// is created once with `retention.ms` from
/// `rlmm.config.remote.log.metadata.topic.retention.ms` (default −1: the
/// catalogue is replayed from offset 0, so nothing may expire) and
/// `cleanup.policy=delete`. An existing topic is left as it is; its logs get
/// the topic's effective config like any other topic's.
///
/// # Errors
/// The topic store or a log cannot be written.
fn ensure_metadata_topic(broker: &Broker, partitions: i32) -> Result<(), BrokerError> {
    let name = strata_tiered::rlmm::REMOTE_LOG_METADATA_TOPIC;
    let info = match broker.topics.get(name) {
        Some(info) => info,
        None => {
            let retention = broker.config.tiered.metadata_topic_retention_ms.to_string();
            let configs = [
                ("retention.ms".to_string(), retention),
                ("cleanup.policy".to_string(), "delete".to_string()),
            ]
            .into_iter()
            .collect();
            tracing::info!(
                topic = name,
                partitions,
                "creating the remote log metadata topic"
            );
            broker.topics.create(name, partitions, configs, None)?
        }
    };
    let cfg = broker.topic_config(&info);
    for p in 0..info.partitions {
        let tp = strata_log::TopicPartition::new(name, p);
        match broker.logs.get_log(&tp) {
            Some(log) if log.config() != cfg => log.update_config(cfg.clone()),
            Some(_) => {}
            None => {
                broker
                    .logs
                    .get_or_create_log(&tp, cfg.clone(), Some(info.id))?;
            }
        }
    }
    Ok(())
}

/// Every partition of an eligible topic (this single broker leads all).
/// With the broker switch off, a topic that still has
/// `remote.storage.enable=true` would report a log start whose offsets no
/// tier serves; Kafka refuses to start then, and so does Strata.
fn refuse_tiered_topics(b: &Broker) -> Result<(), BrokerError> {
    let topics: Vec<String> = b
        .topics
        .list()
        .into_iter()
        .filter(|info| b.topic_config(info).remote_storage_enable)
        .map(|info| info.name)
        .collect();
    if topics.is_empty() {
        Ok(())
    } else {
        Err(BrokerError::TieredTopicsWithoutTieredStorage { topics })
    }
}

/// Every local replica of an eligible topic with this broker's role for it:
/// a single node leads all; in cluster mode the applied snapshot says
/// (replicas that are not assigned here, e.g. strays kept on a guess, are
/// left out).
fn tiered_partitions(b: &Broker) -> Vec<(Arc<Log>, uuid::Uuid, ReplicaRole)> {
    let mut out = Vec::new();
    for info in b.topics.list() {
        if !strata_tiered::topic_eligible(&info.name, &b.topic_config(&info)) {
            continue;
        }
        for p in 0..info.partitions {
            let Some(log) = b.log(&info.name, p) else {
                continue;
            };
            let role = match &b.cluster {
                None => ReplicaRole::Leader,
                Some(cluster) => match b.partition_state(&info, p) {
                    Some(s) if s.leader == cluster.node_id() => ReplicaRole::Leader,
                    Some(s) if s.replicas.contains(&cluster.node_id()) => ReplicaRole::Follower,
                    _ => continue,
                },
            };
            out.push((log, info.id, role));
        }
    }
    out
}

/// Cluster mode, after each applied metadata snapshot (blocking caller):
/// Kafka's `onLeadershipChange` — a partition this broker now leads starts
/// copying at the next task round, one it stopped leading stops, without
/// waiting for the task interval to notice.
pub(crate) fn on_leadership_change(b: &Broker) {
    if let Some(rlm) = b.tiered.get() {
        rlm.sync_partitions();
    }
}

/// Stop the remote tier's tasks (before the logs close).
pub(crate) async fn shutdown(broker: &Arc<Broker>) {
    if let Some(rlm) = broker.tiered.get().cloned() {
        let _ = tokio::task::spawn_blocking(move || rlm.shutdown()).await;
    }
}

/// Fetch below the local log start of a tiered partition (blocking caller):
/// `None` when the error is not for the remote tier, else the records (with
/// the aborted transactions when `read_committed`) or [`ApiError::Remote`]
/// (its Kafka code is decided in `error_code`).
/// Records read from the remote tier and, for READ_COMMITTED, the aborted
/// transactions as (producer id, first offset) entries' source.
pub(crate) type RemoteAnswer = (Bytes, Option<Vec<strata_log::AbortedTxn>>);

pub(crate) fn remote_read(
    b: &Broker,
    log: &Log,
    error: &LogError,
    fetch_offset: i64,
    max_bytes: usize,
    min_one_message: bool,
    read_committed: bool,
) -> Option<Result<RemoteAnswer, ApiError>> {
    let rlm = b.tiered.get()?;
    let tp = log.topic_partition();
    match error {
        LogError::OffsetOutOfRange {
            requested,
            log_start,
            ..
        } if requested < log_start => {}
        _ => return None,
    }
    if !rlm.is_tiered(tp) {
        return None;
    }
    let answer = match rlm.submit_read(tp.clone(), Offset(fetch_offset), max_bytes, min_one_message)
    {
        Ok(rx) => rx.blocking_recv().unwrap_or(Err(TieredError::Cancelled)),
        Err(e) => Err(e),
    };
    // READ_COMMITTED: the aborted transactions over the remote indexes
    // (then the local ones), as a local read would answer them.
    let answer = answer.and_then(|r| {
        let aborted = match read_committed {
            false => None,
            true if r.records.is_empty() => Some(Vec::new()),
            true => Some(rlm.collect_aborted_transactions(
                log,
                Offset(fetch_offset),
                r.aborted_upper_bound,
            )?),
        };
        Ok((r.records, aborted))
    });
    Some(answer.map_err(|error| {
        if !matches!(error, TieredError::OffsetOutOfRange { .. }) {
            tracing::warn!(%tp, error = %strata_log::ErrorChain(&error), "remote read failed");
        }
        ApiError::Remote(error)
    }))
}

/// A replica Fetch below the local log start of a tiered partition but
/// within the remote tier: answered OFFSET_MOVED_TO_TIERED_STORAGE (Kafka
/// `ReplicaManager.readFromLog`), the follower then rebuilds its state from
/// the remote segment's metadata (`replication::tier_state`).
pub(crate) fn moved_to_tiered(b: &Broker, log: &Log, error: &LogError) -> bool {
    let Some(rlm) = b.tiered.get() else {
        return false;
    };
    let tp = log.topic_partition();
    match error {
        LogError::OffsetOutOfRange {
            requested,
            log_start,
            ..
        } if requested < log_start => {
            rlm.is_tiered(tp) && rlm.log_start_offset(tp).is_some_and(|s| *requested >= s)
        }
        _ => false,
    }
}

/// The log start offset a tiered partition reports (earliest in either tier).
pub(crate) fn log_start_offset(b: &Broker, log: &Log) -> i64 {
    b.tiered
        .get()
        .and_then(|rlm| rlm.log_start_offset(log.topic_partition()))
        .unwrap_or_else(|| log.log_start_offset())
        .0
}

/// ListOffsets answers that involve the remote tier (blocking caller);
/// `None` means "ask the local log".
pub(crate) fn list_offset(
    b: &Broker,
    log: &Log,
    timestamp: i64,
) -> Option<Result<(i64, i64, i32), ApiError>> {
    let rlm = b.tiered.get()?;
    let tp = log.topic_partition();
    if !rlm.is_tiered(tp) {
        return None;
    }
    let epoch = log.latest_epoch().map_or(-1, |e| e.0);
    match timestamp {
        EARLIEST => Some(Ok((-1, log_start_offset(b, log), epoch))),
        LATEST_TIERED => Some(Ok(match rlm.highest_offset_in_remote_storage(tp) {
            Some(o) => (-1, o.0, epoch),
            None => (-1, -1, -1),
        })),
        ts if ts >= 0 => match rlm.offset_for_timestamp(tp, Timestamp(ts)) {
            Ok(Some(t)) => Some(Ok((
                t.timestamp.0,
                t.offset.0,
                t.leader_epoch.map_or(-1, |e| e.0),
            ))),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%tp, %error, "remote timestamp lookup failed; answering from the local log");
                None
            }
        },
        _ => None,
    }
}

/// Kafka's tiered-storage topic-config rules (INVALID_CONFIG with Kafka's message).
///
/// # Errors
/// [`ApiError::InvalidConfigOther`].
pub(crate) fn validate_topic(
    b: &Broker,
    new: &LogConfig,
    old: Option<&LogConfig>,
) -> Result<(), ApiError> {
    let enabled = b.config.tiered.enabled;
    strata_tiered::validate_topic_config(enabled, new, old).map_err(|e| {
        ApiError::InvalidConfigOther {
            reason: e.to_string(),
        }
    })
}
