//! The retention schedule of a [`LogManager`] (Kafka's `kafka-log-retention`
//! task, `LogManager.cleanupLogs`): every `log.retention.check.interval.ms`
//! one [`Log::delete_old_segments`] pass over every online log.
//!
//! The manager's background round calls [`RetentionSchedule::run_if_due`];
//! the schedule keeps its own state (interval, next due time, renamed
//! producer snapshots awaiting removal) so the manager only holds one field.
//!
//! Kafka skips compacted logs here because its cleaner thread runs their
//! retention after each cleaning. Strata's cleaner threads do that too
//! (`cleaner::LogCleaner`), but this schedule still visits every log, so
//! compacted logs keep their retention when `log.cleaner.enable=false`; a
//! `compact`-only log gets only the log-start-offset pass
//! ([`crate::retention::decide`]), exactly what Kafka's cleaner would run for it.
//!
//! # Locks
//! `pending` is a leaf lock; no log lock is held while taking it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use super::LogManager;
use crate::log::Log;

/// Kafka's `log.retention.check.interval.ms` default.
pub const DEFAULT_RETENTION_CHECK_INTERVAL_MS: i64 = 300_000;

/// Kafka's `InitialTaskDelayMs`: the first pass runs 30 s after start.
const INITIAL_DELAY_MS: i64 = 30_000;

/// A file renamed `.deleted`, removed once `due_ms` has passed.
#[derive(Debug)]
struct PendingFile {
    path: PathBuf,
    due_ms: i64,
}

/// What one retention round over a manager's logs did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionRound {
    /// Logs visited.
    pub logs: usize,
    /// Segments deleted (renamed `.deleted`).
    pub segments_deleted: usize,
    /// Bytes those segments held.
    pub bytes_deleted: u64,
    /// Logs whose pass failed (their dir goes offline).
    pub failures: usize,
}

/// Retention timing and leftovers of one log manager.
#[derive(Debug)]
pub struct RetentionSchedule {
    interval_ms: AtomicI64,
    next_due_ms: AtomicI64,
    pending: Mutex<Vec<PendingFile>>,
}

impl RetentionSchedule {
    /// A schedule whose first pass is due 30 s after `now_ms`, then every
    /// [`DEFAULT_RETENTION_CHECK_INTERVAL_MS`].
    pub fn new(now_ms: i64) -> RetentionSchedule {
        RetentionSchedule {
            interval_ms: AtomicI64::new(DEFAULT_RETENTION_CHECK_INTERVAL_MS),
            next_due_ms: AtomicI64::new(now_ms.saturating_add(INITIAL_DELAY_MS)),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// `log.retention.check.interval.ms`.
    pub fn interval_ms(&self) -> i64 {
        self.interval_ms.load(Ordering::Acquire)
    }

    /// When the next pass is due (ms since the epoch).
    pub fn next_due_ms(&self) -> i64 {
        self.next_due_ms.load(Ordering::Acquire)
    }

    fn set_interval_ms(&self, interval_ms: i64, now_ms: i64) {
        let interval_ms = interval_ms.max(1);
        self.interval_ms.store(interval_ms, Ordering::Release);
        self.next_due_ms
            .fetch_min(now_ms.saturating_add(interval_ms), Ordering::AcqRel);
    }

    /// Called from every background round: run a retention pass when one
    /// is due, and remove renamed snapshot files whose delay has passed.
    pub(crate) fn run_if_due(&self, manager: &LogManager, now_ms: i64) {
        self.remove_due_files(manager.fs().as_ref(), now_ms);
        let due = self.next_due_ms();
        if now_ms < due {
            return;
        }
        let next = now_ms.saturating_add(self.interval_ms());
        if self
            .next_due_ms
            .compare_exchange(due, next, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let round = self.run_round(&manager.all_logs());
            if round.segments_deleted > 0 || round.failures > 0 {
                tracing::info!(?round, "retention round");
            }
        }
    }

    /// One pass over `logs` (online ones only).
    fn run_round(&self, logs: &[std::sync::Arc<Log>]) -> RetentionRound {
        let mut round = RetentionRound::default();
        for log in logs.iter().filter(|l| l.dir_health().is_online()) {
            round.logs += 1;
            match log.delete_old_segments() {
                Ok(outcome) => {
                    round.segments_deleted += outcome.decision.deletions.len();
                    round.bytes_deleted += outcome.decision.bytes();
                    let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                    pending.extend(
                        outcome
                            .renamed_snapshots
                            .into_iter()
                            .map(|path| PendingFile {
                                path,
                                due_ms: outcome.delete_due_ms,
                            }),
                    );
                }
                Err(e) => {
                    round.failures += 1;
                    tracing::error!(tp = %log.topic_partition(), error = %crate::ErrorChain(&e), "retention pass failed");
                }
            }
        }
        round
    }

    fn remove_due_files(&self, fs: &dyn crate::fs::FileSystem, now_ms: i64) {
        let due: Vec<PendingFile> = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if pending.is_empty() {
                return;
            }
            let (due, keep) = pending.drain(..).partition(|p| p.due_ms <= now_ms);
            *pending = keep;
            due
        };
        for p in due {
            match fs.remove_file(&p.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(path = %p.path.display(), error = %crate::ErrorChain(&e), "removing a deleted snapshot failed")
                }
            }
        }
    }
}

impl LogManager {
    /// Set `log.retention.check.interval.ms` (default 300 000); the next
    /// pass is due no later than one new interval from now.
    pub fn set_retention_check_interval_ms(&self, interval_ms: i64) {
        self.retention
            .set_interval_ms(interval_ms, self.clock().now_ms());
    }

    /// The retention schedule (interval, next due time).
    pub fn retention_schedule(&self) -> &RetentionSchedule {
        &self.retention
    }

    /// Run one retention pass over every online log now, whatever the
    /// schedule says (tests, admin tools). Renamed snapshots are queued for
    /// removal by later background rounds.
    pub fn run_retention_once(&self) -> RetentionRound {
        self.retention.run_round(&self.all_logs())
    }
}
