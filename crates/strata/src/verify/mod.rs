//! `strata log verify`: a read-only consistency check of partition and log
//! directories.
//!
//! The checks are pure functions from file bytes to [`Finding`]s, so that
//! `strata log doctor` can reuse them:
//!
//! - [`segment`]: batch headers and CRCs (`--deep`: every record), offsets
//!   strictly increasing, the segment base, truncated or zero-filled tails;
//! - [`index`]: `.index` / `.timeindex` / `.txnindex` against the batches;
//! - [`partition`]: one partition directory (files, segment order, orphans,
//!   leftovers, snapshots, `leader-epoch-checkpoint`, `partition.metadata`);
//! - this module: target detection, the log-dir checkpoints (recovery
//!   point, log start, high watermark, cleaner offset ≤ LEO) and each
//!   partition's topic id against the broker's topic store
//!   (`strata-topics.json`).
//!
//! Nothing is ever written. Errors exit 1; warnings only with `--strict`.

pub mod findings;
pub mod index;
pub mod partition;
pub mod segment;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use strata_log::format as f;
use strata_log::TopicPartition;

use crate::progress::Progress;
use crate::read::checkpoint::read_offset_checkpoint;
use crate::read::topics::{read_topic_store, TopicStore};
use crate::{EXIT_FAILURES, EXIT_OK, EXIT_USAGE_OR_IO};
use findings::{Finding, Problem, Severity};
use partition::{verify_partition, PartitionSummary};

/// Options of `strata log verify`.
#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    /// Partition directories or log directories (auto-detected).
    #[arg(value_name = "DIR", required = true)]
    dirs: Vec<PathBuf>,
    /// Also decode every record of every batch (decompressing).
    #[arg(long)]
    deep: bool,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    strict: bool,
    /// Print one JSON report instead of text.
    #[arg(long)]
    json: bool,
    /// Do not report progress on stderr.
    #[arg(long)]
    no_progress: bool,
}

/// The result of verifying some directories.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub partitions: usize,
    pub segments: usize,
    pub batches: usize,
    pub errors: usize,
    pub warnings: usize,
    pub findings: Vec<Finding>,
    /// One entry per partition directory verified.
    pub partition_dirs: Vec<PartitionSummary>,
}

/// A directory holding `.log` files, or one named like a partition with no
/// partition directories inside, is a partition directory.
fn is_partition_dir(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut has_child_partition = false;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(f::LOG_SUFFIX) && e.path().is_file() {
            return true;
        }
        if e.path().is_dir() && f::parse_partition_dir_name(&name).is_ok() {
            has_child_partition = true;
        }
    }
    let own = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    !has_child_partition && f::parse_partition_dir_name(&own).is_ok()
}

/// The offset checkpoints of a log dir and how strictly each is held to the LEO.
const CHECKPOINTS: [(&str, &str, Severity); 4] = [
    (
        f::RECOVERY_POINT_CHECKPOINT,
        "recovery point",
        Severity::Error,
    ),
    (
        f::LOG_START_OFFSET_CHECKPOINT,
        "log start offset",
        Severity::Error,
    ),
    (
        f::REPLICATION_OFFSET_CHECKPOINT,
        "high watermark",
        Severity::Error,
    ),
    (
        f::CLEANER_OFFSET_CHECKPOINT,
        "cleaner offset",
        Severity::Warning,
    ),
];

/// Check the log-dir checkpoints in `log_dir` against the partitions verified.
/// With `only`, just that partition's entries are looked at (a partition dir
/// was given), and entries for absent partitions are not reported.
pub fn check_log_dir_checkpoints(
    log_dir: &Path,
    verified: &BTreeMap<TopicPartition, i64>,
    only: Option<&TopicPartition>,
    out: &mut Vec<Finding>,
) {
    for (file, what, severity) in CHECKPOINTS {
        let path = log_dir.join(file);
        if !path.is_file() {
            continue;
        }
        let entries = match read_offset_checkpoint(&path) {
            Ok(c) => c,
            Err(e) => {
                out.push(Finding::error(
                    &path,
                    None,
                    Problem::MalformedCheckpoint {
                        detail: e.to_string(),
                    },
                ));
                continue;
            }
        };
        for e in &entries {
            if only.is_some_and(|tp| *tp != e.tp) {
                continue;
            }
            match verified.get(&e.tp) {
                Some(&log_end) if e.offset.get() > log_end => out.push(Finding::new(
                    severity,
                    &path,
                    None,
                    Problem::CheckpointBeyondLogEnd {
                        checkpoint: what,
                        partition: e.tp.to_string(),
                        offset: e.offset.get(),
                        log_end,
                    },
                )),
                Some(_) => {}
                None if only.is_none() => out.push(Finding::warning(
                    &path,
                    None,
                    Problem::CheckpointUnknownPartition {
                        checkpoint: what,
                        partition: e.tp.to_string(),
                    },
                )),
                None => {}
            }
        }
    }
}

fn tp_of(dir: &Path) -> Option<TopicPartition> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    f::parse_partition_dir_name(&name).ok().map(|p| p.tp)
}

fn add_summary(report: &mut Report, s: &PartitionSummary) {
    report.partitions += 1;
    report.segments += s.segments;
    report.batches += s.batches;
}

/// The log dir of a target: the target itself, or a partition dir's parent.
fn log_dir_of(target: &Path) -> Option<&Path> {
    if is_partition_dir(target) {
        target.parent()
    } else {
        Some(target)
    }
}

/// The broker's topic store for these targets: the first of their log dirs
/// that holds `strata-topics.json` (the broker keeps it in its first log
/// dir only). An unreadable store is an error finding.
pub fn find_topic_store(targets: &[PathBuf], out: &mut Vec<Finding>) -> Option<TopicStore> {
    for dir in targets.iter().filter_map(|t| log_dir_of(t)) {
        match read_topic_store(dir) {
            Ok(Some(store)) => return Some(store),
            Ok(None) => {}
            Err(e) => {
                out.push(Finding::error(
                    dir.join(crate::read::topics::TOPICS_FILE),
                    None,
                    Problem::MalformedTopicStore {
                        detail: e.to_string(),
                    },
                ));
                return None;
            }
        }
    }
    None
}

/// A partition whose `partition.metadata` names another topic id than the
/// topic store belongs to a deleted and re-created topic (or another
/// cluster): the broker must not serve it as this topic.
pub fn check_topic_id(store: &TopicStore, summary: &PartitionSummary, out: &mut Vec<Finding>) {
    let (Some(id), Some(tp)) = (summary.topic_id, tp_of(&summary.dir)) else {
        return;
    };
    let Some(topic) = store.topics.get(&tp.topic) else {
        return;
    };
    if topic.id != id {
        out.push(Finding::error(
            summary.dir.join(f::PARTITION_METADATA),
            None,
            Problem::TopicIdMismatch {
                topic: tp.topic.clone(),
                partition_metadata_id: strata_log::uuid_to_kafka_string(&id),
                topic_store_id: strata_log::uuid_to_kafka_string(&topic.id),
                topic_store: store.path.display().to_string(),
            },
        ));
    }
}

/// The partition directories a log-dir target holds, sorted (`-delete`
/// ones left out), with their parsed names.
fn partition_children(target: &Path) -> Vec<(PathBuf, f::ParsedDir)> {
    let mut children: Vec<PathBuf> = std::fs::read_dir(target)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    children.sort();
    children
        .into_iter()
        .filter_map(|child| {
            let name = child.file_name()?.to_string_lossy().into_owned();
            let parsed = f::parse_partition_dir_name(&name).ok()?;
            (parsed.kind != f::DirKind::Delete).then_some((child, parsed))
        })
        .collect()
}

/// The partition directories `verify_target` will read for `target`: the
/// units of the progress report.
fn planned_partitions(target: &Path) -> Vec<PathBuf> {
    if !target.is_dir() {
        Vec::new()
    } else if is_partition_dir(target) {
        vec![target.to_path_buf()]
    } else {
        partition_children(target)
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }
}

/// Verify one target (partition dir or log dir), appending to `report`;
/// with `store`, each partition's topic id is checked against it. Each
/// partition directory read advances `progress`.
pub fn verify_target(
    target: &Path,
    deep: bool,
    store: Option<&TopicStore>,
    report: &mut Report,
    progress: &mut Progress,
) {
    let out = &mut report.findings;
    if !target.is_dir() {
        out.push(Finding::error(
            target,
            None,
            Problem::Unreadable {
                detail: "not a directory".to_owned(),
            },
        ));
        return;
    }
    let mut summaries = Vec::new();
    let mut verified = BTreeMap::new();
    if is_partition_dir(target) {
        let s = verify_partition(target, deep, out);
        progress.advance(crate::progress::dir_bytes(target));
        if let (Some(tp), Some(parent)) = (tp_of(target), target.parent()) {
            verified.insert(tp.clone(), s.log_end);
            check_log_dir_checkpoints(parent, &verified, Some(&tp), out);
        }
        summaries.push(s);
    } else {
        for (child, parsed) in partition_children(target) {
            let s = verify_partition(&child, deep, out);
            progress.advance(crate::progress::dir_bytes(&child));
            if parsed.kind == f::DirKind::Live {
                verified.insert(parsed.tp, s.log_end);
            }
            summaries.push(s);
        }
        // An empty Kafka log dir (just meta.properties) is fine; anything
        // else without partitions is probably the wrong path.
        if summaries.is_empty() && !target.join(f::META_PROPERTIES).is_file() {
            out.push(Finding::error(target, None, Problem::NothingToVerify));
        }
        check_log_dir_checkpoints(target, &verified, None, out);
    }
    for s in summaries {
        if let Some(store) = store {
            check_topic_id(store, &s, &mut report.findings);
        }
        add_summary(report, &s);
        report.partition_dirs.push(s);
    }
}

/// Run `strata log verify`; returns the exit code.
pub fn run(args: &VerifyArgs) -> u8 {
    let mut report = Report::default();
    let store = find_topic_store(&args.dirs, &mut report.findings);
    let planned: Vec<PathBuf> = args
        .dirs
        .iter()
        .flat_map(|d| planned_partitions(d))
        .collect();
    let bytes = planned.iter().map(|d| crate::progress::dir_bytes(d)).sum();
    let mut progress = Progress::new(
        "verify",
        "partitions",
        planned.len() as u64,
        bytes,
        args.no_progress,
    );
    for dir in &args.dirs {
        verify_target(dir, args.deep, store.as_ref(), &mut report, &mut progress);
    }
    progress.finish();
    report.errors = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    report.warnings = report.findings.len() - report.errors;
    if args.json {
        match serde_json::to_string(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("cannot encode the report: {e}");
                return EXIT_USAGE_OR_IO;
            }
        }
    } else {
        for finding in &report.findings {
            println!("{finding}");
        }
        println!(
            "verified {} partitions, {} segments, {} batches: {} errors, {} warnings",
            report.partitions, report.segments, report.batches, report.errors, report.warnings
        );
    }
    // Something could not be read at all: an I/O problem, not a verdict.
    let unreadable = report
        .findings
        .iter()
        .any(|f| matches!(f.problem, Problem::Unreadable { .. }));
    if unreadable {
        EXIT_USAGE_OR_IO
    } else if report.errors > 0 || (args.strict && report.warnings > 0) {
        EXIT_FAILURES
    } else {
        EXIT_OK
    }
}
