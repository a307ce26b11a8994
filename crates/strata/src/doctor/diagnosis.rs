//! The doctor's answers: a [`Finding`] names the operator's symptom, the
//! cause in plain words with numbers, and the settings to change.
//!
//! [`diagnose`] is pure: facts (read by `scan`), the effective config and
//! `now` in, findings out; tests build facts by writing partitions.

use std::collections::BTreeMap;

use serde::Serialize;
use strata_log::LogConfig;

use super::scan::PartitionFacts;

/// The operations table's symptoms (docs/operations.md), plus the
/// informational answers (`next_roll`, `index_fill`, `retention`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Symptom {
    RetentionDoesNotFire,
    CompactTopicNotShrinking,
    BrokerRestartVerySlow,
    SegmentsRollTooSmall,
    DiskDoublesDuringCompaction,
    TombstonesLinger,
    ConsumerCacheKeepsDeletedKeys,
    NextRoll,
    IndexFill,
    /// Files that `strata log verify` reports as damaged.
    DataDamaged,
    /// read_committed consumers make no progress: an open transaction holds
    /// the last stable offset back.
    LastStableOffsetStuck,
    /// The table's 9th row: the cleaner's statistics show compaction costing
    /// a lot of CPU.
    CompactionUsesMuchCpu,
    /// Live (`--bootstrap-server`): a consumer group's committed position is
    /// below, or about to fall below, the log start.
    ConsumersFallBehindRetention,
}

/// The cause a finding explains (stable identifiers for `--json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Segments are deletable now; the next pass removes them.
    RetentionDueNow,
    /// `retention.ms` and `retention.bytes` are both unlimited.
    RetentionUnlimited,
    /// `cleanup.policy` has no `delete`: only compaction and the log start.
    CompactOnlyPolicy,
    /// All data is in the active segment, which expires only as a whole.
    ActiveSegmentHoldsAllData,
    /// A segment's largest timestamp is in the future.
    FutureTimestamp,
    /// Records outlive `retention.ms` by up to the segment's time span.
    RetentionPlusSegmentOvershoot,
    /// Expired segments sit at or above the high watermark.
    HighWatermarkBelow,
    /// When the oldest segment will be deleted.
    OldestSegmentExpiry,
    /// The log is below `retention.bytes` (+ the oldest segment).
    BelowRetentionBytes,
    /// Every dirty byte is in the active segment, which is never cleaned.
    DirtyDataOnlyInActiveSegment,
    /// Dirty ratio not above `min.cleanable.dirty.ratio`.
    DirtyRatioBelowMinimum,
    /// `min.compaction.lag.ms` holds segments back.
    MinCompactionLagHoldsSegments,
    /// The cleaner would pick this log now.
    CompactionDueNow,
    /// Cleaned tombstones wait for their delete horizon.
    TombstonesAwaitDeleteHorizon,
    /// Tombstones not yet cleaned: they get a horizon at the first cleaning.
    TombstonesNotYetCleaned,
    /// Consumers slower than `delete.retention.ms` miss tombstones.
    ConsumersMustCatchUpWithinDeleteRetention,
    /// Unflushed bytes after the recovery point are re-read at restart.
    RecoveryAfterUncleanShutdown,
    /// Many segments: each is opened at startup.
    ManySegments,
    /// Segments rolled because the time index filled.
    TimeIndexFilledFirst,
    /// Segments rolled because the offset index filled.
    OffsetIndexFilledFirst,
    /// Segments rolled by `segment.ms` long before `segment.bytes`.
    RolledBySegmentMs,
    /// Extra space the cleaner needs, against the free space.
    CompactionHeadroom,
    /// When the active segment rolls.
    NextRoll,
    /// Fill level of the active segment's indexes.
    IndexFill,
    /// `strata log verify` found an error (corrupt batch, torn tail, bad index).
    VerifyFoundDamage,
    /// A transaction open longer than `transaction.max.timeout.ms`: nothing
    /// will end it but an abort from an administrator.
    HangingTransaction,
    /// A transaction open for less than `transaction.max.timeout.ms`.
    OpenTransaction,
    /// The producer state could not be rebuilt (unreadable snapshot, a log
    /// breaking transaction rules).
    ProducerStateIncomplete,
    /// The cleaner's CPU over the recorded cleanings (the figures).
    CleanerCpuShare,
    /// Cleanings start at a small dirty fraction, so most of each recopies
    /// clean data (`min.cleanable.dirty.ratio` low).
    DirtyRatioSetTooLow,
    /// Many small segments per cleaning (`segment.bytes`).
    SegmentsTooSmall,
    /// The offset map fills: several passes or a map near its load factor
    /// (`log.cleaner.dedupe.buffer.size`).
    HugeKeySpace,
    /// `log.cleaner.threads` against the cores and the time spent cleaning.
    CleanerThreads,
    /// `log.cleaner.io.max.bytes.per.second` unlimited (or never reached)
    /// while cleaning costs a lot of CPU.
    IoThrottleUnsetOrHigh,
    /// Live: a group's committed offset is behind tombstones whose delete
    /// horizon passes soon; it will miss the deletes.
    GroupBehindExpiringTombstones,
    /// Live: a group's committed offset is below the log start offset.
    GroupPositionBelowLogStart,
    /// Live: the next retention pass deletes the segment a group has not
    /// read yet.
    GroupPositionInNextDeletedSegment,
}

/// Info: an answer. Warning: the symptom is present and this explains it.
/// Error: data on disk is damaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// One answer about one partition.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub symptom: Symptom,
    pub cause: Cause,
    pub severity: Severity,
    /// Plain words with numbers.
    pub message: String,
    /// Kafka topic (or broker) settings to change.
    pub settings: Vec<&'static str>,
    /// The numbers behind the message.
    pub numbers: BTreeMap<&'static str, serde_json::Value>,
}

impl Finding {
    pub fn new(symptom: Symptom, cause: Cause, severity: Severity, message: String) -> Finding {
        Finding {
            symptom,
            cause,
            severity,
            message,
            settings: Vec::new(),
            numbers: BTreeMap::new(),
        }
    }

    pub fn settings(mut self, s: &[&'static str]) -> Finding {
        self.settings.extend_from_slice(s);
        self
    }

    pub fn num(mut self, name: &'static str, v: impl Into<serde_json::Value>) -> Finding {
        self.numbers.insert(name, v.into());
        self
    }
}

/// Broker-level inputs and assumptions of a diagnosis.
#[derive(Clone, Debug, Serialize)]
pub struct DoctorSettings {
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval_ms: i64,
    /// `num.recovery.threads.per.data.dir`.
    pub recovery_threads: usize,
    /// Read rate assumed for recovery estimates, bytes per second.
    pub read_bytes_per_sec: u64,
    /// `log.cleaner.threads`.
    pub cleaner_threads: usize,
    /// `transaction.max.timeout.ms`: an open transaction whose producer is
    /// silent for longer is reported as hanging.
    pub max_transaction_timeout_ms: i64,
}

impl Default for DoctorSettings {
    fn default() -> Self {
        DoctorSettings {
            retention_check_interval_ms: 300_000,
            recovery_threads: 1,
            read_bytes_per_sec: 200 << 20,
            cleaner_threads: 1,
            max_transaction_timeout_ms: super::transactions::DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
        }
    }
}

/// Human durations: "3d 4h", "12m 5s", "850 ms".
pub fn human_ms(ms: i64) -> String {
    let neg = ms < 0;
    let a = ms.unsigned_abs();
    let s = if a < 1_000 {
        format!("{a} ms")
    } else if a < 60_000 {
        format!("{:.1} s", a as f64 / 1000.0)
    } else if a < 3_600_000 {
        format!("{}m {}s", a / 60_000, (a % 60_000) / 1000)
    } else if a < 86_400_000 {
        format!("{}h {}m", a / 3_600_000, (a % 3_600_000) / 60_000)
    } else {
        format!("{}d {}h", a / 86_400_000, (a % 86_400_000) / 3_600_000)
    };
    if neg {
        format!("-{s}")
    } else {
        s
    }
}

/// Human sizes: "1.5 GiB".
pub fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// Everything the doctor says about one partition.
pub fn diagnose(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    now_ms: i64,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if facts.segments.is_empty() {
        return out;
    }
    super::retention::diagnose(facts, cfg, settings, now_ms, &mut out);
    if cfg.cleanup_policy.compact {
        super::compaction::diagnose(facts, cfg, settings, now_ms, &mut out);
    }
    super::segments::diagnose(facts, cfg, settings, now_ms, &mut out);
    out
}
