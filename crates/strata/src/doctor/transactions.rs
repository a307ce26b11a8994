//! Hanging transactions: an open transaction whose producer has been silent
//! for longer than `transaction.max.timeout.ms` — its coordinator should
//! have aborted it long ago, so nothing will, and it holds the partition's
//! last stable offset (LSO) back for good: read_committed consumers stop at
//! it, compaction and tiering never pass it. This is what Kafka's
//! `kafka-transactions.sh find-hanging` looks for with DescribeProducers
//! (`docs/producer-state.md`; the reference's §9.4); the doctor answers it
//! offline, from the files.
//!
//! [`read_open_transactions`] rebuilds the partition's producer state the way
//! the broker does at load, without writing anything: the newest usable
//! `.snapshot` (offset above the log start, at or below the log end; an
//! unreadable one falls back to the next older), then every batch after it
//! applied with REPLICATION origin, all through `strata_log`'s own
//! [`ProducerStateManager`]. [`diagnose`] is pure.

use std::ops::ControlFlow;

use strata_log::format::log_file;
use strata_log::fs::StdFs;
use strata_log::{read_snapshot, Offset, ProducerStateManager, Timestamp};

use super::diagnosis::{human_bytes, human_ms, Cause, Finding, Severity, Symptom};
use super::scan::{walk_batches, PartitionFacts};
use crate::read::records::Scanned;

/// Kafka's default `transaction.max.timeout.ms` (15 minutes).
pub const DEFAULT_MAX_TRANSACTION_TIMEOUT_MS: i64 = 900_000;

/// Kafka's `producer.id.expiration.ms` default; only passed through: the
/// doctor never expires producers (an open transaction pins its producer).
const PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// One producer with an open transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenTxn {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The coordinator epoch of the producer's last marker (-1: none yet).
    pub coordinator_epoch: i32,
    /// The first offset of the open transaction.
    pub first_offset: Offset,
    /// The producer's last batch or marker timestamp.
    pub last_timestamp: Timestamp,
    /// Bytes from the batch holding `first_offset` to the log end.
    pub bytes_behind: u64,
}

/// The transactions of one partition.
#[derive(Clone, Debug, Default)]
pub struct TxnFacts {
    /// Open transactions, by first offset.
    pub open: Vec<OpenTxn>,
    /// The snapshot the state started from (`None`: the log start).
    pub snapshot: Option<Offset>,
    /// Why the state could not be rebuilt completely (a snapshot that does
    /// not read, a log that breaks the transaction rules, an I/O error).
    pub problems: Vec<String>,
}

/// Rebuild the producer state of `facts.dir` read-only and list its open
/// transactions. Problems are recorded in [`TxnFacts::problems`], never
/// fatal: the rest of the doctor's answer does not depend on them.
pub fn read_open_transactions(facts: &PartitionFacts) -> TxnFacts {
    let mut out = TxnFacts::default();
    // `new` only lists the directory's snapshot files; nothing below calls
    // a method that writes, renames or deletes.
    let mut psm = match ProducerStateManager::new(
        &StdFs::shared(),
        &facts.dir,
        facts.tp.clone(),
        PRODUCER_ID_EXPIRATION_MS,
    ) {
        Ok(psm) => psm,
        Err(e) => {
            out.problems.push(e.to_string());
            return out;
        }
    };
    let log_start = facts.log_start_offset;
    let log_end = facts.log_end_offset;
    let mut candidates: Vec<Offset> = psm
        .snapshot_offsets()
        .filter(|&o| o > log_start && o <= log_end)
        .collect();
    candidates.reverse();
    let mut start = log_start;
    for offset in candidates {
        let Some(path) = psm.fetch_snapshot(offset).map(|p| p.to_path_buf()) else {
            continue;
        };
        match read_snapshot(&path) {
            Ok(entries) => {
                for e in &entries {
                    psm.load_producer_entry(e.to_entry());
                }
                out.snapshot = Some(offset);
                start = offset;
                break;
            }
            // The broker deletes such a snapshot and tries the next older one.
            Err(e) => out.problems.push(format!("{}: {e}", path.display())),
        }
    }
    psm.update_map_end_offset(start);
    'segments: for (i, seg) in facts.segments.iter().enumerate() {
        let next_base = facts.segments.get(i + 1).map(|s| s.base_offset);
        if next_base.is_some_and(|n| n <= start) || seg.next_offset <= start {
            continue;
        }
        let path = log_file(&facts.dir, seg.base_offset, "");
        let mut failed = None;
        let walked = walk_batches(&path, |_, item| {
            if let Scanned::V2 { batch, .. } = item {
                if batch.last_offset() >= start {
                    if let Err(e) = psm.apply_replicated_batch(batch) {
                        failed = Some(format!(
                            "{}: batch at offset {}: {e}",
                            path.display(),
                            batch.base_offset()
                        ));
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        });
        if let Err(e) = walked {
            out.problems.push(e.to_string());
            break 'segments;
        }
        if let Some(msg) = failed {
            out.problems.push(msg);
            break 'segments;
        }
    }
    let mut open: Vec<OpenTxn> = psm
        .active_producers()
        .filter_map(|(id, e)| {
            e.current_txn_first_offset().map(|first| OpenTxn {
                producer_id: id.0,
                producer_epoch: e.producer_epoch().0,
                coordinator_epoch: e.coordinator_epoch(),
                first_offset: first,
                last_timestamp: e.last_timestamp(),
                bytes_behind: 0,
            })
        })
        .collect();
    open.sort_by_key(|t| (t.first_offset, t.producer_id));
    for t in &mut open {
        match bytes_behind(facts, t.first_offset) {
            Ok(b) => t.bytes_behind = b,
            Err(e) => out.problems.push(e.to_string()),
        }
    }
    out.open = open;
    out
}

/// Bytes from the batch holding `offset` to the log end.
fn bytes_behind(facts: &PartitionFacts, offset: Offset) -> Result<u64, crate::read::ReadError> {
    let Some(i) = facts.segments.iter().rposition(|s| s.base_offset <= offset) else {
        return Ok(facts.size());
    };
    let seg = &facts.segments[i];
    let later: u64 = facts.segments[i + 1..].iter().map(|s| s.size).sum();
    let mut position = seg.size;
    walk_batches(&log_file(&facts.dir, seg.base_offset, ""), |at, item| {
        let last = crate::read::records::last_offset(item);
        if last.is_some_and(|l| l >= offset) {
            position = at;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    Ok(seg.size.saturating_sub(position) + later)
}

/// The `kafka-transactions.sh` command that aborts the transaction of
/// `topic`-`partition` starting at `first_offset` (it finds the producer,
/// epoch and coordinator epoch with DescribeProducers, then sends
/// WriteTxnMarkers).
pub fn abort_command(bootstrap: &str, topic: &str, partition: i32, first_offset: Offset) -> String {
    format!(
        "kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic {topic} \
         --partition {partition} --start-offset {}",
        first_offset.0
    )
}

/// Inputs of [`diagnose`] beyond the facts.
#[derive(Clone, Debug)]
pub struct TxnSettings {
    /// `transaction.max.timeout.ms`: silent longer than this = hanging.
    pub max_transaction_timeout_ms: i64,
    /// `HOST:PORT` for the abort command.
    pub bootstrap: String,
}

/// Findings about the open transactions of a partition (pure).
pub fn diagnose(
    facts: &PartitionFacts,
    txns: &TxnFacts,
    s: &TxnSettings,
    now_ms: i64,
    out: &mut Vec<Finding>,
) {
    for p in &txns.problems {
        out.push(Finding::new(
            Symptom::LastStableOffsetStuck,
            Cause::ProducerStateIncomplete,
            Severity::Warning,
            format!(
                "the producer state could not be rebuilt completely ({p}); open transactions \
                 after that point are not reported"
            ),
        ));
    }
    let Some(earliest) = txns.open.first() else {
        return;
    };
    let high_watermark = facts.high_watermark.unwrap_or(facts.log_end_offset);
    let lso = earliest
        .first_offset
        .max(facts.log_start_offset)
        .min(high_watermark);
    let newest = facts
        .segments
        .iter()
        .map(|s| s.max_timestamp)
        .max()
        .unwrap_or(Timestamp::NONE);
    let tp = format!("{}-{}", facts.tp.topic, facts.tp.partition);
    for t in &txns.open {
        let age = now_ms - t.last_timestamp.0;
        let behind = (facts.log_end_offset.0 - t.first_offset.0).max(0);
        let who = format!(
            "producer {} (epoch {}, coordinator epoch {}) has a transaction open since offset {}",
            t.producer_id, t.producer_epoch, t.coordinator_epoch, t.first_offset.0
        );
        let holds = if t.first_offset == earliest.first_offset {
            format!(
                "it holds the last stable offset at {} ({behind} offsets, {} behind the log \
                 end {}): read_committed consumers stop there, compaction and tiering do not \
                 pass it",
                lso.0,
                human_bytes(t.bytes_behind),
                facts.log_end_offset.0
            )
        } else {
            format!(
                "behind an older open transaction, it would hold the last stable offset \
                 {behind} offsets ({}) behind the log end",
                human_bytes(t.bytes_behind)
            )
        };
        let command = abort_command(
            &s.bootstrap,
            &facts.tp.topic,
            facts.tp.partition,
            t.first_offset,
        );
        let finding = if age > s.max_transaction_timeout_ms {
            Finding::new(
                Symptom::LastStableOffsetStuck,
                Cause::HangingTransaction,
                Severity::Warning,
                format!(
                    "{tp}: hanging transaction: {who} and last wrote {} ago (timestamp {}), longer \
                     than transaction.max.timeout.ms ({}), so its coordinator will not abort it; \
                     {holds}. Abort it with: {command}",
                    human_ms(age),
                    t.last_timestamp.0,
                    human_ms(s.max_transaction_timeout_ms)
                ),
            )
            .settings(&["transaction.max.timeout.ms"])
            .num("abort_command", command)
        } else {
            Finding::new(
                Symptom::LastStableOffsetStuck,
                Cause::OpenTransaction,
                Severity::Info,
                format!(
                    "{tp}: {who}, last write {} ago (timestamp {}); it becomes hanging after \
                     transaction.max.timeout.ms ({}); {holds}",
                    human_ms(age),
                    t.last_timestamp.0,
                    human_ms(s.max_transaction_timeout_ms)
                ),
            )
            .settings(&["transaction.max.timeout.ms"])
        };
        out.push(
            finding
                .num("producer_id", t.producer_id)
                .num("producer_epoch", t.producer_epoch)
                .num("coordinator_epoch", t.coordinator_epoch)
                .num("first_offset", t.first_offset.0)
                .num("last_timestamp", t.last_timestamp.0)
                .num("age_ms", age)
                .num("behind_newest_record_ms", newest.0 - t.last_timestamp.0)
                .num("max_transaction_timeout_ms", s.max_transaction_timeout_ms)
                .num("last_stable_offset", lso.0)
                .num("offsets_behind_log_end", behind)
                .num("bytes_behind_log_end", t.bytes_behind),
        );
    }
}
