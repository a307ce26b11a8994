//! Every file and directory name the log writes, built and parsed in one place.
//!
//! This mirrors Kafka's `LogFileUtils` and the naming helpers of `LocalLog`:
//!
//! - segment files are `<20-digit base offset><suffix>`, e.g.
//!   `00000000000000368769.index`; temporary states append a second suffix
//!   (`.cleaned`, `.swap`, `.deleted`) after the normal one;
//! - a partition directory is `<topic>-<partition>`; a directory being deleted,
//!   moved between log dirs or set aside as a stray replica is
//!   `<topic>-<partition>.<uuid32><-delete|-future|-stray>`.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::codec::java_text::{is_java_whitespace, parse_java_int};
use crate::types::{Offset, TopicPartition};

/// Record batches of a segment.
pub const LOG_SUFFIX: &str = ".log";
/// Offset index of a segment.
pub const INDEX_SUFFIX: &str = ".index";
/// Time index of a segment.
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
/// Aborted-transaction index of a segment.
pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
/// Producer-state snapshot.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Appended to a file renamed for asynchronous deletion.
pub const DELETED_SUFFIX: &str = ".deleted";
/// Appended to cleaner or split output under construction.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// Appended to cleaner or split output ready to replace old segments.
pub const SWAP_SUFFIX: &str = ".swap";
/// Appended to a metadata file while it is being replaced.
pub const TMP_SUFFIX: &str = ".tmp";
/// KRaft snapshot files end with this; log loading never touches them.
pub const KRAFT_CHECKPOINT_DELETED_SUFFIX: &str = ".checkpoint.deleted";

/// Partition directory scheduled for asynchronous deletion.
pub const DELETE_DIR_SUFFIX: &str = "-delete";
/// Target of an intra-broker log-directory move.
pub const FUTURE_DIR_SUFFIX: &str = "-future";
/// KRaft stray replica moved aside.
pub const STRAY_DIR_SUFFIX: &str = "-stray";

/// Log-dir checkpoint of per-partition recovery points.
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
/// Log-dir checkpoint of per-partition log start offsets.
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// Log-dir checkpoint of per-partition high watermarks.
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
/// Log-dir checkpoint of per-partition first dirty offsets (cleaner).
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
/// Log-dir JSON history of the cleaner's last cleanings (Strata only; the
/// figures of Kafka's `log-cleaner.log` summaries).
pub const CLEANER_STATISTICS: &str = "cleaner-statistics.json";
/// Partition-dir checkpoint of the leader-epoch cache.
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
/// Partition-dir file holding the topic id.
pub const PARTITION_METADATA: &str = "partition.metadata";
/// Log-dir identity file.
pub const META_PROPERTIES: &str = "meta.properties";
/// Log-dir marker written after a clean shutdown.
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";
/// Log-dir lock file.
pub const LOCK_FILE: &str = ".lock";

/// Longest partition directory name Kafka produces for `-delete` and
/// `-stray` renames (a common file-system name limit).
pub const MAX_DIR_NAME_LEN: usize = 255;

/// The 20-digit, zero-padded decimal file-name prefix for `offset`.
///
/// Like Java's `NumberFormat` with 20 minimum integer digits, a negative
/// offset (never produced by a healthy log) gets a `-` before 20 digits.
pub fn filename_prefix(offset: Offset) -> String {
    let v = offset.get();
    if v < 0 {
        format!("-{:020}", v.unsigned_abs())
    } else {
        format!("{v:020}")
    }
}

fn segment_file(dir: &Path, base: Offset, kind: &str, suffix: &str) -> PathBuf {
    dir.join(format!("{}{kind}{suffix}", filename_prefix(base)))
}

/// `<dir>/<base>.log<suffix>`; `suffix` is `""` or a temporary suffix such as
/// [`CLEANED_SUFFIX`].
pub fn log_file(dir: &Path, base: Offset, suffix: &str) -> PathBuf {
    segment_file(dir, base, LOG_SUFFIX, suffix)
}

/// `<dir>/<base>.index<suffix>`.
pub fn index_file(dir: &Path, base: Offset, suffix: &str) -> PathBuf {
    segment_file(dir, base, INDEX_SUFFIX, suffix)
}

/// `<dir>/<base>.timeindex<suffix>`.
pub fn time_index_file(dir: &Path, base: Offset, suffix: &str) -> PathBuf {
    segment_file(dir, base, TIME_INDEX_SUFFIX, suffix)
}

/// `<dir>/<base>.txnindex<suffix>`.
pub fn txn_index_file(dir: &Path, base: Offset, suffix: &str) -> PathBuf {
    segment_file(dir, base, TXN_INDEX_SUFFIX, suffix)
}

/// `<dir>/<offset>.snapshot<suffix>`.
pub fn snapshot_file(dir: &Path, offset: Offset, suffix: &str) -> PathBuf {
    segment_file(dir, offset, SNAPSHOT_SUFFIX, suffix)
}

/// The offset encoded in a segment or snapshot file name: the decimal number
/// before the first `.` (Kafka `offsetFromFileName`). `None` if there is no
/// `.` or the prefix is not a decimal `i64`.
pub fn offset_from_file_name(name: &str) -> Option<Offset> {
    let dot = name.find('.')?;
    parse_java_int::<i64>(&name[..dot]).map(Offset)
}

/// True for `<base>.log` (Kafka `isLogFile`: the path ends with `.log`).
pub fn is_log_file(name: &str) -> bool {
    name.ends_with(LOG_SUFFIX)
}

/// True for `.index`, `.timeindex` and `.txnindex` files (Kafka `isIndexFile`).
pub fn is_index_file(name: &str) -> bool {
    name.ends_with(INDEX_SUFFIX)
        || name.ends_with(TIME_INDEX_SUFFIX)
        || name.ends_with(TXN_INDEX_SUFFIX)
}

/// What a partition directory is for, from its name's suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DirKind {
    /// `<topic>-<partition>`: a live partition.
    Live,
    /// `…-delete`: scheduled for asynchronous deletion.
    Delete,
    /// `…-future`: target of an intra-broker move.
    Future,
    /// `…-stray`: KRaft stray replica.
    Stray,
}

impl DirKind {
    /// The directory-name suffix, `""` for a live partition.
    pub fn suffix(self) -> &'static str {
        match self {
            DirKind::Live => "",
            DirKind::Delete => DELETE_DIR_SUFFIX,
            DirKind::Future => FUTURE_DIR_SUFFIX,
            DirKind::Stray => STRAY_DIR_SUFFIX,
        }
    }
}

/// A partition directory name, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedDir {
    pub tp: TopicPartition,
    pub kind: DirKind,
}

/// Why a directory name is not a partition directory name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirNameProblem {
    /// Empty, or no `-` at all.
    NoDash,
    /// Ends with `-delete`/`-future`/`-stray` but is not `<t>-<p>.<id><suffix>`.
    SuffixPattern,
    /// Nothing before the last `-`.
    EmptyTopic,
    /// Nothing after the last `-`.
    EmptyPartition,
    /// The partition is not a decimal `i32`.
    BadPartition,
}

/// Errors from parsing names.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FormatError {
    #[error("'{name}' is not in the form of topic-partition or topic-partition.uniqueId-delete ({problem:?})")]
    InvalidPartitionDir {
        name: String,
        problem: DirNameProblem,
    },
}

/// Whole-string match of `^(\S+)-(\S+)\.(\S+)$` on `stem` (the name with the
/// special suffix removed).
fn matches_special_pattern(stem: &str) -> bool {
    if stem.chars().any(is_java_whitespace) {
        return false;
    }
    // Pick the last '.' that leaves a non-empty id after it; then any '-'
    // leaving non-empty text on both sides before that '.' completes a match.
    let bytes = stem.as_bytes();
    let Some(dot) = (0..bytes.len().saturating_sub(1))
        .rev()
        .find(|&i| bytes[i] == b'.')
    else {
        return false;
    };
    (1..dot.saturating_sub(1)).any(|i| bytes[i] == b'-')
}

/// Parse a partition directory name (Kafka `LocalLog.parseTopicPartitionName`).
///
/// For the special kinds the text from the last `.` on is dropped; the rest
/// is split at the last `-` into topic and partition.
///
/// # Errors
///
/// [`FormatError::InvalidPartitionDir`] naming the [`DirNameProblem`].
pub fn parse_partition_dir_name(name: &str) -> Result<ParsedDir, FormatError> {
    let err = |problem| FormatError::InvalidPartitionDir {
        name: name.to_owned(),
        problem,
    };
    if !name.contains('-') {
        return Err(err(DirNameProblem::NoDash));
    }
    let kind = [DirKind::Delete, DirKind::Future, DirKind::Stray]
        .into_iter()
        .find(|k| name.ends_with(k.suffix()))
        .unwrap_or(DirKind::Live);
    let base = if kind == DirKind::Live {
        name
    } else {
        let stem = &name[..name.len() - kind.suffix().len()];
        if !matches_special_pattern(stem) {
            return Err(err(DirNameProblem::SuffixPattern));
        }
        // The pattern guarantees a '.'.
        &name[..name.rfind('.').unwrap_or(name.len())]
    };
    let dash = base.rfind('-').ok_or_else(|| err(DirNameProblem::NoDash))?;
    let (topic, partition) = (&base[..dash], &base[dash + 1..]);
    if topic.is_empty() {
        return Err(err(DirNameProblem::EmptyTopic));
    }
    if partition.is_empty() {
        return Err(err(DirNameProblem::EmptyPartition));
    }
    let partition =
        parse_java_int::<i32>(partition).ok_or_else(|| err(DirNameProblem::BadPartition))?;
    Ok(ParsedDir {
        tp: TopicPartition::new(topic, partition),
        kind,
    })
}

/// `<topic>-<partition>`.
pub fn partition_dir_name(tp: &TopicPartition) -> String {
    format!("{}-{}", tp.topic, tp.partition)
}

/// A fresh `<topic>-<partition>.<uuid32>-delete` name, the topic truncated so
/// the whole name is at most 255 characters.
pub fn delete_dir_name(tp: &TopicPartition) -> String {
    capped_dir_name(tp, &new_unique_id(), DELETE_DIR_SUFFIX)
}

/// A fresh `<topic>-<partition>.<uuid32>-stray` name, capped like
/// [`delete_dir_name`].
pub fn stray_dir_name(tp: &TopicPartition) -> String {
    capped_dir_name(tp, &new_unique_id(), STRAY_DIR_SUFFIX)
}

/// A fresh `<topic>-<partition>.<uuid32>-future` name (never truncated).
pub fn future_dir_name(tp: &TopicPartition) -> String {
    format!(
        "{}.{}{}",
        partition_dir_name(tp),
        new_unique_id(),
        FUTURE_DIR_SUFFIX
    )
}

/// A random UUID as 32 lowercase hex digits, dashes removed.
fn new_unique_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Kafka `logDirNameWithSuffixCappedLength` with a given unique id.
pub fn capped_dir_name(tp: &TopicPartition, unique_id: &str, suffix: &str) -> String {
    let full_suffix = format!("-{}.{unique_id}{suffix}", tp.partition);
    let budget = MAX_DIR_NAME_LEN.saturating_sub(full_suffix.chars().count());
    let prefix: String = tp.topic.chars().take(budget).collect();
    format!("{prefix}{full_suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_twenty_digits() {
        assert_eq!(filename_prefix(Offset(0)), "00000000000000000000");
        assert_eq!(filename_prefix(Offset(368769)), "00000000000000368769");
        assert_eq!(filename_prefix(Offset(i64::MAX)), "09223372036854775807");
        assert_eq!(filename_prefix(Offset(-1)), "-00000000000000000001");
    }

    #[test]
    fn segment_paths() {
        let d = Path::new("/logs/t-0");
        assert_eq!(
            log_file(d, Offset(5), ""),
            PathBuf::from("/logs/t-0/00000000000000000005.log")
        );
        assert_eq!(
            index_file(d, Offset(5), CLEANED_SUFFIX),
            PathBuf::from("/logs/t-0/00000000000000000005.index.cleaned")
        );
        assert_eq!(
            time_index_file(d, Offset(5), SWAP_SUFFIX),
            PathBuf::from("/logs/t-0/00000000000000000005.timeindex.swap")
        );
        assert_eq!(
            txn_index_file(d, Offset(5), DELETED_SUFFIX),
            PathBuf::from("/logs/t-0/00000000000000000005.txnindex.deleted")
        );
        assert_eq!(
            snapshot_file(d, Offset(12), ""),
            PathBuf::from("/logs/t-0/00000000000000000012.snapshot")
        );
    }

    #[test]
    fn offset_from_names() {
        assert_eq!(
            offset_from_file_name("00000000000000000012.log.swap"),
            Some(Offset(12))
        );
        assert_eq!(
            offset_from_file_name("00000000000000368769.index"),
            Some(Offset(368769))
        );
        assert_eq!(offset_from_file_name("leader-epoch-checkpoint"), None);
        assert_eq!(offset_from_file_name("partition.metadata"), None);
        assert_eq!(offset_from_file_name(".log"), None);
        assert_eq!(offset_from_file_name("1 2.log"), None);
        assert_eq!(offset_from_file_name("99999999999999999999.log"), None);
    }

    #[test]
    fn file_kind_predicates() {
        assert!(is_log_file("00000000000000000000.log"));
        assert!(!is_log_file("00000000000000000000.log.deleted"));
        assert!(is_index_file("00000000000000000000.index"));
        assert!(is_index_file("00000000000000000000.timeindex"));
        assert!(is_index_file("00000000000000000000.txnindex"));
        assert!(!is_index_file("00000000000000000000.index.swap"));
    }

    fn parsed(name: &str) -> (String, i32, DirKind) {
        let p = parse_partition_dir_name(name).unwrap();
        (p.tp.topic, p.tp.partition, p.kind)
    }

    fn problem(name: &str) -> DirNameProblem {
        match parse_partition_dir_name(name) {
            Err(FormatError::InvalidPartitionDir { problem, .. }) => problem,
            Ok(p) => panic!("{name} parsed as {p:?}"),
        }
    }

    #[test]
    fn parses_live_and_special_dirs() {
        assert_eq!(parsed("orders-3"), ("orders".into(), 3, DirKind::Live));
        assert_eq!(
            parsed("my-top.ic_x-12"),
            ("my-top.ic_x".into(), 12, DirKind::Live)
        );
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            parsed(&format!("a.b-c-7.{id}-delete")),
            ("a.b-c".into(), 7, DirKind::Delete)
        );
        assert_eq!(
            parsed(&format!("t-0.{id}-future")),
            ("t".into(), 0, DirKind::Future)
        );
        assert_eq!(
            parsed(&format!("t-1.{id}-stray")),
            ("t".into(), 1, DirKind::Stray)
        );
    }

    #[test]
    fn rejects_bad_dir_names() {
        assert_eq!(problem(""), DirNameProblem::NoDash);
        assert_eq!(problem("topic"), DirNameProblem::NoDash);
        assert_eq!(problem("-1"), DirNameProblem::EmptyTopic);
        assert_eq!(problem("topic-"), DirNameProblem::EmptyPartition);
        assert_eq!(problem("topic-x"), DirNameProblem::BadPartition);
        assert_eq!(problem("topic-1 "), DirNameProblem::BadPartition);
        // Suffix present but not <t>-<p>.<id><suffix>.
        assert_eq!(problem("topic-delete"), DirNameProblem::SuffixPattern);
        assert_eq!(problem("topic-1-delete"), DirNameProblem::SuffixPattern);
        assert_eq!(problem("topic-1.-delete"), DirNameProblem::SuffixPattern);
        assert_eq!(problem("t p-1.abc-delete"), DirNameProblem::SuffixPattern);
        // Matches the pattern, but the partition part is not a number.
        assert_eq!(problem("topic-x.abc-future"), DirNameProblem::BadPartition);
    }

    #[test]
    fn generated_names_round_trip() {
        let tp = TopicPartition::new("orders.eu-west", 4);
        assert_eq!(partition_dir_name(&tp), "orders.eu-west-4");
        for (name, kind) in [
            (delete_dir_name(&tp), DirKind::Delete),
            (future_dir_name(&tp), DirKind::Future),
            (stray_dir_name(&tp), DirKind::Stray),
        ] {
            let p = parse_partition_dir_name(&name).unwrap();
            assert_eq!(
                p,
                ParsedDir {
                    tp: tp.clone(),
                    kind
                },
                "{name}"
            );
        }
    }

    #[test]
    fn long_topic_is_truncated_to_255() {
        let tp = TopicPartition::new("x".repeat(249), 12);
        let id = "0123456789abcdef0123456789abcdef";
        let name = capped_dir_name(&tp, id, DELETE_DIR_SUFFIX);
        // suffix "-12.<32>-delete" is 43 chars, so 212 topic chars remain.
        assert_eq!(name.len(), 255);
        assert_eq!(name, format!("{}-12.{id}-delete", "x".repeat(212)));
        let short = TopicPartition::new("t", 0);
        assert_eq!(
            capped_dir_name(&short, id, STRAY_DIR_SUFFIX),
            format!("t-0.{id}-stray")
        );
        // -future is never truncated.
        assert_eq!(future_dir_name(&tp).len(), 249 + 3 + 1 + 32 + 7);
    }
}
