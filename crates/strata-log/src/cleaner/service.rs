//! The cleaner service (Kafka `LogCleaner` + `LogCleanerManager`): the
//! `log.cleaner.threads` named threads, which log each cleans next, and the
//! per-partition state operators see.
//!
//! Beyond Kafka: a failed cleaning does not mark the partition uncleanable
//! until restart; it is retried after `strata.log.cleaner.retry.backoff.ms`,
//! doubling per consecutive failure up to
//! `strata.log.cleaner.retry.backoff.max.ms`, and the failure is visible in
//! [`PartitionCleanerState`].
//!
//! # Locks
//! `in_progress` then `states` are held together only while choosing a log
//! (which reads segment facts, taking segment state locks after them);
//! `threads`, `config` and `hooks` are leaf locks. None is held across a
//! cleaning or a log's append lock.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use super::clean::{CleanOutcome, Cleaner};
use super::policy::{choose_filthiest, cleanable, Cleanable, CompactionSettings};
use super::snapshot::cleaner_snapshot;
use super::{AbortReason, CleanerConfig, CleanerError};
use crate::checkpoint::CleanerCheckpoints;
use crate::clock::SharedClock;
use crate::log::Log;
use crate::types::TopicPartition;

/// The last failed cleaning of a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CleanerFailure {
    pub at_ms: i64,
    /// The error, rendered for operators (never matched on).
    pub error: String,
    /// The log dir was offline after it (restart required).
    pub storage_failure: bool,
    /// Failures in a row (reset by a successful cleaning).
    pub consecutive: u32,
    /// Not retried before this time.
    pub retry_at_ms: i64,
}

/// What the cleaner remembers about one partition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionCleanerState {
    pub last_clean_ms: Option<i64>,
    pub last_outcome: Option<CleanOutcome>,
    pub cleanings: u64,
    pub bytes_reclaimed_total: u64,
    pub failure: Option<CleanerFailure>,
}

/// One partition's compaction health, for the doctor and metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionStatus {
    pub tp: TopicPartition,
    /// `cleanup.policy` contains `compact`.
    pub compacted: bool,
    pub cleanable: Cleanable,
    /// Would the cleaner pick this log now (ratio or max lag)?
    pub eligible: bool,
    pub time_since_last_clean_ms: Option<i64>,
    /// Age of the oldest record not yet cleaned (first batch timestamp of
    /// the dirty section).
    pub oldest_uncleaned_record_age_ms: Option<i64>,
    pub bytes_reclaimed_total: u64,
    pub in_progress: bool,
    pub failure: Option<CleanerFailure>,
}

/// Compaction status of `log` at `now_ms`, from its files and (when the
/// cleaner has seen it) the cleaner's state.
///
/// # Errors
/// Reading the checkpoint or segment facts.
pub fn compaction_status(
    log: &Log,
    state: Option<&PartitionCleanerState>,
    in_progress: bool,
    now_ms: i64,
) -> Result<CompactionStatus, CleanerError> {
    let tp = log.topic_partition().clone();
    let cfg = log.config();
    let checkpoint = CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir()).get(&tp)?;
    let snap = cleaner_snapshot(log, checkpoint).map_err(|e| CleanerError::log(&tp, e))?;
    let settings = CompactionSettings::of(&cfg);
    let c = cleanable(&snap, &settings, now_ms);
    let from = snap
        .segments
        .iter()
        .rposition(|s| s.base_offset <= c.first_dirty_offset)
        .unwrap_or(0);
    let oldest = snap.segments[from..]
        .iter()
        .filter(|s| s.size > 0)
        .map(|s| s.first_batch_timestamp.0)
        .filter(|t| *t > 0)
        .min();
    Ok(CompactionStatus {
        tp,
        compacted: cfg.cleanup_policy.compact,
        eligible: cfg.cleanup_policy.compact && c.is_eligible(&settings),
        cleanable: c,
        time_since_last_clean_ms: state.and_then(|s| s.last_clean_ms).map(|t| now_ms - t),
        oldest_uncleaned_record_age_ms: oldest.map(|t| (now_ms - t).max(0)),
        bytes_reclaimed_total: state.map_or(0, |s| s.bytes_reclaimed_total),
        in_progress,
        failure: state.and_then(|s| s.failure.clone()),
    })
}

struct Shared {
    states: Mutex<HashMap<TopicPartition, PartitionCleanerState>>,
    in_progress: Mutex<HashSet<TopicPartition>>,
    stop: Arc<AtomicBool>,
    wake: (Mutex<bool>, Condvar),
}

/// What the cleaner threads need from the owner of a [`LogCleaner`] (the
/// [`crate::LogManager`]): the cleaner itself and the logs to choose from.
/// The threads hold the owner weakly and stop once it is dropped.
pub trait CleanerOwner: Send + Sync + 'static {
    /// The owner's cleaner.
    fn log_cleaner(&self) -> &LogCleaner;
    /// Every log the cleaner may choose from, online or not.
    fn logs_to_clean(&self) -> Vec<Arc<Log>>;
}

/// The cleaner of one log manager. Share as part of the manager.
pub struct LogCleaner {
    config: RwLock<CleanerConfig>,
    clock: SharedClock,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for LogCleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCleaner")
            .field(
                "config",
                &*self.config.read().unwrap_or_else(|e| e.into_inner()),
            )
            .finish()
    }
}

/// Retry delay after `consecutive` failures.
fn backoff_ms(cfg: &CleanerConfig, consecutive: u32) -> i64 {
    let shift = consecutive.saturating_sub(1).min(30);
    cfg.retry_backoff_ms
        .saturating_mul(1i64 << shift)
        .min(cfg.retry_backoff_max_ms.max(cfg.retry_backoff_ms))
}

impl LogCleaner {
    pub fn new(config: CleanerConfig, clock: SharedClock) -> LogCleaner {
        LogCleaner {
            config: RwLock::new(config),
            clock,
            shared: Arc::new(Shared {
                states: Mutex::new(HashMap::new()),
                in_progress: Mutex::new(HashSet::new()),
                stop: Arc::new(AtomicBool::new(false)),
                wake: (Mutex::new(false), Condvar::new()),
            }),
            threads: Mutex::new(Vec::new()),
        }
    }

    pub fn config(&self) -> CleanerConfig {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replace the broker-level settings (before [`Self::start`]).
    pub fn configure(&self, config: CleanerConfig) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
    }

    /// A worker with this cleaner's settings and stop flag.
    ///
    /// # Errors
    /// [`CleanerError::MapTooSmall`].
    pub fn worker(&self) -> Result<Cleaner, CleanerError> {
        let cfg = self.config();
        Ok(Cleaner::new(&cfg, self.clock.clone())?.with_stop_flag(self.shared.stop.clone()))
    }

    /// The cleaner's state of `tp`.
    pub fn state(&self, tp: &TopicPartition) -> Option<PartitionCleanerState> {
        self.shared
            .states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tp)
            .cloned()
    }

    /// [`compaction_status`] with this cleaner's state of the log.
    ///
    /// # Errors
    /// As [`compaction_status`].
    pub fn status(&self, log: &Log) -> Result<CompactionStatus, CleanerError> {
        let tp = log.topic_partition();
        let in_progress = self
            .shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(tp);
        compaction_status(
            log,
            self.state(tp).as_ref(),
            in_progress,
            self.clock.now_ms(),
        )
    }

    /// One round of a cleaner thread (Kafka `cleanFilthiestLog`): pick the
    /// filthiest eligible log among `logs`, clean it, record the result,
    /// then run retention on the compacted logs. `None` when nothing was
    /// eligible.
    pub fn clean_filthiest(
        &self,
        worker: &mut Cleaner,
        logs: &[Arc<Log>],
    ) -> Option<Result<CleanOutcome, CleanerError>> {
        let now = self.clock.now_ms();
        let (log, range) = self.grab_filthiest(logs, now)?;
        let tp = log.topic_partition().clone();
        let r = (|| {
            if range.checkpoint_reset {
                CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir())
                    .update(&tp, Some(range.first_dirty_offset))?;
            }
            worker.clean_range(
                &log,
                range.first_dirty_offset,
                range.first_uncleanable_offset,
            )
        })();
        self.record(&tp, &r, !log.dir_health().is_online());
        self.shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&tp);
        // Kafka: retention for every compacted log not being cleaned.
        let busy = self
            .shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for l in logs.iter().filter(|l| l.config().cleanup_policy.compact) {
            if l.dir_health().is_online() && !busy.contains(l.topic_partition()) {
                if let Err(e) = l.delete_old_segments() {
                    tracing::warn!(tp = %l.topic_partition(), error = %crate::ErrorChain(&e), "retention after cleaning failed");
                }
            }
        }
        Some(r)
    }

    fn grab_filthiest(&self, logs: &[Arc<Log>], now: i64) -> Option<(Arc<Log>, Cleanable)> {
        let mut in_progress = self
            .shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let states = self.shared.states.lock().unwrap_or_else(|e| e.into_inner());
        let mut picked = Vec::new();
        let mut candidates = Vec::new();
        for log in logs {
            let tp = log.topic_partition();
            let cfg = log.config();
            if !cfg.cleanup_policy.compact
                || !log.dir_health().is_online()
                || in_progress.contains(tp)
                || states
                    .get(tp)
                    .and_then(|s| s.failure.as_ref())
                    .is_some_and(|f| f.retry_at_ms > now)
            {
                continue;
            }
            let checkpoint = CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir())
                .get(tp)
                .unwrap_or_else(|e| {
                    tracing::warn!(%tp, error = %crate::ErrorChain(&e), "unreadable cleaner checkpoint; cleaning from the log start");
                    None
                });
            let snap = match cleaner_snapshot(log, checkpoint) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%tp, error = %crate::ErrorChain(&e), "cannot inspect log for cleaning");
                    continue;
                }
            };
            let settings = CompactionSettings::of(&cfg);
            picked.push(log.clone());
            candidates.push((cleanable(&snap, &settings, now), settings));
        }
        let i = choose_filthiest(&candidates)?;
        let log = picked.swap_remove(i);
        in_progress.insert(log.topic_partition().clone());
        Some((log, candidates.swap_remove(i).0))
    }

    fn record(
        &self,
        tp: &TopicPartition,
        r: &Result<CleanOutcome, CleanerError>,
        dir_offline: bool,
    ) {
        let now = self.clock.now_ms();
        let cfg = self.config();
        let mut states = self.shared.states.lock().unwrap_or_else(|e| e.into_inner());
        let st = states.entry(tp.clone()).or_default();
        match r {
            Ok(o) => {
                st.last_clean_ms = Some(now);
                st.cleanings += 1;
                st.bytes_reclaimed_total += o.bytes_reclaimed();
                st.last_outcome = Some(o.clone());
                st.failure = None;
                tracing::info!(%tp, reclaimed = o.bytes_reclaimed(), passes = o.stats.passes,
                    end = %o.end_offset, "log cleaned");
            }
            Err(CleanerError::Aborted { reason, .. }) => {
                // Not a failure: retried at the next round without backoff.
                if *reason != AbortReason::Shutdown {
                    tracing::info!(%tp, ?reason, "cleaning aborted; will retry");
                }
            }
            Err(e) => {
                let consecutive = st.failure.as_ref().map_or(0, |f| f.consecutive) + 1;
                let retry_at_ms = now.saturating_add(backoff_ms(&cfg, consecutive));
                tracing::error!(%tp, error = %crate::ErrorChain(&e), consecutive, retry_at_ms, "cleaning failed");
                st.failure = Some(CleanerFailure {
                    at_ms: now,
                    error: e.to_string(),
                    storage_failure: dir_offline,
                    consecutive,
                    retry_at_ms,
                });
            }
        }
    }

    /// Start `log.cleaner.threads` threads named `strata-log-cleaner-<i>`
    /// cleaning `owner`'s logs until [`Self::shutdown`]. A no-op when
    /// disabled, already started, or a worker cannot be built.
    pub fn start<O: CleanerOwner>(&self, owner: &Arc<O>) {
        let cfg = self.config();
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if !cfg.enable || !threads.is_empty() {
            return;
        }
        for i in 0..cfg.threads {
            let mut worker = match self.worker() {
                Ok(w) => w,
                Err(e) => {
                    tracing::error!(error = %crate::ErrorChain(&e), "log cleaner not started");
                    return;
                }
            };
            let owner: Weak<O> = Arc::downgrade(owner);
            let shared = self.shared.clone();
            let backoff = Duration::from_millis(cfg.backoff_ms.max(0) as u64);
            let handle = std::thread::Builder::new()
                .name(format!("strata-log-cleaner-{i}"))
                .spawn(move || loop {
                    if shared.stop.load(Ordering::Acquire) {
                        return;
                    }
                    let Some(m) = owner.upgrade() else { return };
                    let logs = m.logs_to_clean();
                    let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        m.log_cleaner().clean_filthiest(&mut worker, &logs)
                    }));
                    drop(m);
                    let idle = match round {
                        Ok(r) => r.is_none(),
                        Err(_) => {
                            tracing::error!("panic in a log cleaner thread (contained)");
                            true
                        }
                    };
                    if idle {
                        let (lock, cv) = &shared.wake;
                        let g = lock.lock().unwrap_or_else(|e| e.into_inner());
                        let _ = cv
                            .wait_timeout_while(g, backoff, |woken| {
                                !*woken && !shared.stop.load(Ordering::Acquire)
                            })
                            .map(|(mut g, _)| *g = false);
                    }
                })
                .expect("spawn log cleaner thread");
            threads.push(handle);
        }
    }

    /// Wake idle threads (e.g. after a config change).
    pub fn wake(&self) {
        let (lock, cv) = &self.shared.wake;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }

    /// Stop the threads: cleanings in progress abort (their `.cleaned`
    /// files are removed), then the threads are joined.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.wake();
        let handles: Vec<JoinHandle<()>> = self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for h in handles {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_backoff_doubles_up_to_the_cap() {
        let cfg = CleanerConfig {
            retry_backoff_ms: 1_000,
            retry_backoff_max_ms: 5_000,
            ..CleanerConfig::default()
        };
        let got: Vec<i64> = (1..=5).map(|n| backoff_ms(&cfg, n)).collect();
        assert_eq!(got, vec![1_000, 2_000, 4_000, 5_000, 5_000]);
    }
}
