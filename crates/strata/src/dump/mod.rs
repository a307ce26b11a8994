//! `strata log dump`: Kafka 3.9 `kafka-dump-log.sh` (`DumpLogSegments`) parity.
//!
//! Files are dispatched on their last extension as Kafka does (`.log` and
//! KRaft `.checkpoint` → batches, `.index`, `.timeindex`, `.snapshot`,
//! `.txnindex`); Strata also prints checkpoint files and `partition.metadata`,
//! which Kafka's tool cannot read. Output lines are rendered by [`lines`]
//! (`--transaction-log-decoder` texts by [`txn_log`], `--offsets-decoder`
//! texts by [`offsets_log`]);
//! the problem reports Kafka prints on stderr after all files are collected in
//! [`Problems`] and printed at the end in Kafka's wording.
//!
//! Every file is opened read-only; nothing is created, resized or locked.

mod index;
mod kraft;
mod lines;
mod misc;
mod offsets_log;
mod segment;
mod txn_log;

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Map, Value};

use crate::progress::Progress;
use crate::read::read_all;
use crate::{EXIT_FAILURES, EXIT_OK, EXIT_USAGE_OR_IO};

/// Options of `strata log dump` (Kafka's option names).
#[derive(Args, Debug, Clone)]
pub struct DumpArgs {
    /// The comma separated list of data and index log files to be dumped.
    #[arg(long, value_name = "file1,file2,...", value_delimiter = ',')]
    files: Vec<PathBuf>,
    /// More files (in addition to --files).
    #[arg(value_name = "FILE")]
    paths: Vec<PathBuf>,
    /// Print the messages content (keys and payloads as UTF-8); implies --deep-iteration.
    #[arg(long)]
    print_data_log: bool,
    /// Just verify the index against the log without printing its content.
    #[arg(long)]
    verify_index_only: bool,
    /// Just check index sanity (the broker's startup check) without printing its content.
    #[arg(long)]
    index_sanity_check: bool,
    /// Decode records as `__transaction_state` keys and values (transaction
    /// metadata); implies --print-data-log.
    #[arg(long)]
    transaction_log_decoder: bool,
    /// Decode records as `__consumer_offsets` keys and values (offset
    /// commits, classic and consumer group metadata); implies --print-data-log.
    #[arg(long, conflicts_with = "transaction_log_decoder")]
    offsets_decoder: bool,
    /// Size of the largest message.
    #[arg(long, value_name = "size", default_value_t = 5 * 1024 * 1024)]
    max_message_size: u32,
    /// Limit the amount of total batches read in bytes.
    #[arg(long, value_name = "size", default_value_t = i32::MAX as u32)]
    max_bytes: u32,
    /// Iterate records inside batches (deep iteration).
    #[arg(long)]
    deep_iteration: bool,
    /// Do not print the metadata of each record.
    #[arg(long)]
    skip_record_metadata: bool,
    /// One JSON object per file (one per line) instead of Kafka's text.
    #[arg(long)]
    json: bool,
    /// Do not report progress on stderr (reported when dumping more than one file).
    #[arg(long)]
    no_progress: bool,
}

/// Resolved options.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub print_data: bool,
    /// `--transaction-log-decoder`: keys and values are printed decoded.
    pub transaction_log: bool,
    /// `--offsets-decoder`: keys and values are printed decoded.
    pub offsets: bool,
    pub deep: bool,
    pub verify_only: bool,
    pub sanity_only: bool,
    pub max_message_size: u32,
    pub max_bytes: u32,
    pub skip_record_metadata: bool,
    pub json: bool,
}

impl From<&DumpArgs> for Options {
    fn from(a: &DumpArgs) -> Self {
        Options {
            print_data: a.print_data_log || a.transaction_log_decoder || a.offsets_decoder,
            transaction_log: a.transaction_log_decoder,
            offsets: a.offsets_decoder,
            deep: a.deep_iteration
                || a.print_data_log
                || a.transaction_log_decoder
                || a.offsets_decoder,
            verify_only: a.verify_index_only,
            sanity_only: a.index_sanity_check,
            max_message_size: a.max_message_size,
            max_bytes: a.max_bytes,
            skip_record_metadata: a.skip_record_metadata,
            json: a.json,
        }
    }
}

/// Where a dump writes: Kafka's text lines on stdout, or one JSON object per
/// file. `error` lines always go to stderr (and into the JSON object).
pub struct Emitter {
    json: bool,
    out: std::io::BufWriter<std::io::Stdout>,
    current: Map<String, Value>,
}

impl Emitter {
    fn new(json: bool) -> Self {
        Emitter {
            json,
            out: std::io::BufWriter::new(std::io::stdout()),
            current: Map::new(),
        }
    }

    pub fn is_json(&self) -> bool {
        self.json
    }

    /// A text line (ignored in JSON mode).
    pub fn line(&mut self, text: &str) {
        if !self.json {
            let _ = writeln!(self.out, "{text}");
        }
    }

    /// Set a field of the current file's JSON object.
    pub fn field(&mut self, key: &str, value: impl serde::Serialize) {
        if self.json {
            let v = serde_json::to_value(value).unwrap_or(Value::Null);
            self.current.insert(key.to_owned(), v);
        }
    }

    /// Append to an array field of the current file's JSON object.
    pub fn push(&mut self, key: &str, value: impl serde::Serialize) {
        if self.json {
            let v = serde_json::to_value(value).unwrap_or(Value::Null);
            match self
                .current
                .entry(key.to_owned())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(a) => a.push(v),
                other => *other = Value::Array(vec![v]),
            }
        }
    }

    /// A message for stderr, recorded under `"errors"` in JSON mode.
    pub fn error(&mut self, text: &str) {
        let _ = self.out.flush();
        eprintln!("{text}");
        self.push("errors", text);
    }

    fn begin_file(&mut self, path: &Path) {
        self.current = Map::new();
        self.field("file", path.display().to_string());
        self.line(&format!("Dumping {}", path.display()));
    }

    fn end_file(&mut self) {
        if self.json {
            let obj = Value::Object(std::mem::take(&mut self.current));
            let _ = writeln!(self.out, "{obj}");
        }
    }

    fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

/// Problems found while dumping, reported on stderr after all files in
/// Kafka's wording and order, and folded into the exit code.
#[derive(Debug, Default)]
pub struct Problems {
    /// `(index file, [(index offset, log offset)])`.
    pub index_mismatches: Vec<(PathBuf, Vec<(i64, i64)>)>,
    pub time_mismatches: Vec<(PathBuf, Vec<(i64, i64)>)>,
    pub time_out_of_order: Vec<(PathBuf, Vec<(i64, i64)>)>,
    pub time_not_found: Vec<(PathBuf, Vec<(i64, i64)>)>,
    /// `(log file, [(offset, next offset)])`; normal after compaction, so it
    /// does not affect the exit code.
    pub non_consecutive: Vec<(PathBuf, Vec<(i64, i64)>)>,
    /// Corruption found (bad CRC, unreadable records, failed sanity check…).
    pub corrupt: bool,
    /// A file could not be read or named.
    pub io: bool,
}

/// Read a file or report it; `None` after reporting.
fn read_or_report(path: &Path, em: &mut Emitter, problems: &mut Problems) -> Option<Vec<u8>> {
    match read_all(path) {
        Ok(b) => Some(b),
        Err(e) => {
            problems.io = true;
            em.error(&e.to_string());
            None
        }
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn add(list: &mut Vec<(PathBuf, Vec<(i64, i64)>)>, path: &Path, pairs: Vec<(i64, i64)>) {
    if !pairs.is_empty() {
        list.push((absolute(path), pairs));
    }
}

impl Problems {
    fn print(&self) {
        // Kafka prepends to immutable lists, so these two come out newest first.
        for (file, pairs) in &self.index_mismatches {
            eprintln!("Mismatches in :{}", file.display());
            for (index, log) in pairs.iter().rev() {
                eprintln!("  Index offset: {index}, log offset: {log}");
            }
        }
        for (file, pairs) in &self.time_mismatches {
            eprintln!("Found timestamp mismatch in :{}", file.display());
            for (index, log) in pairs {
                eprintln!("  Index timestamp: {index}, log timestamp: {log}");
            }
        }
        for (file, pairs) in &self.time_out_of_order {
            eprintln!("Found out of order timestamp in :{}", file.display());
            for (index, prev) in pairs {
                eprintln!("  Index timestamp: {index}, Previously indexed timestamp: {prev}");
            }
        }
        for (_, pairs) in &self.time_not_found {
            eprintln!("The following indexed offsets are not found in the log.");
            for (index, log) in pairs {
                eprintln!("Indexed offset: {index}, found log offset: {log}");
            }
        }
        for (file, pairs) in &self.non_consecutive {
            eprintln!("Non-consecutive offsets in {}", file.display());
            for (first, second) in pairs.iter().rev() {
                eprintln!("  {first} is followed by {second}");
            }
        }
    }

    fn exit_code(&self) -> u8 {
        if self.io {
            EXIT_USAGE_OR_IO
        } else if self.corrupt
            || !self.index_mismatches.is_empty()
            || !self.time_mismatches.is_empty()
            || !self.time_out_of_order.is_empty()
            || !self.time_not_found.is_empty()
        {
            EXIT_FAILURES
        } else {
            EXIT_OK
        }
    }
}

/// What a file is, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileKind {
    Log,
    KraftSnapshot,
    Index,
    TimeIndex,
    ProducerSnapshot,
    TxnIndex,
    OffsetCheckpoint,
    EpochCheckpoint,
    PartitionMetadata,
    Unknown,
}

fn classify(path: &Path) -> FileKind {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    use strata_log::format as f;
    match name.as_str() {
        f::RECOVERY_POINT_CHECKPOINT
        | f::LOG_START_OFFSET_CHECKPOINT
        | f::REPLICATION_OFFSET_CHECKPOINT
        | f::CLEANER_OFFSET_CHECKPOINT => return FileKind::OffsetCheckpoint,
        f::LEADER_EPOCH_CHECKPOINT => return FileKind::EpochCheckpoint,
        f::PARTITION_METADATA => return FileKind::PartitionMetadata,
        _ => {}
    }
    // Kafka: the suffix from the last '.'.
    match name.rfind('.').map(|i| &name[i..]) {
        Some(f::LOG_SUFFIX) => FileKind::Log,
        Some(".checkpoint") => FileKind::KraftSnapshot,
        Some(f::INDEX_SUFFIX) => FileKind::Index,
        Some(f::TIME_INDEX_SUFFIX) => FileKind::TimeIndex,
        Some(f::SNAPSHOT_SUFFIX) => FileKind::ProducerSnapshot,
        Some(f::TXN_INDEX_SUFFIX) => FileKind::TxnIndex,
        _ => FileKind::Unknown,
    }
}

/// The offset a segment-like file is named after (the digits before the
/// first '.'), or an error line.
pub fn file_offset(path: &Path) -> Result<i64, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.split('.').next().unwrap_or_default();
    let stem = stem.split('-').next().unwrap_or_default();
    strata_log::format::offset_from_file_name(&format!("{stem}."))
        .map(|o| o.get())
        .ok_or_else(|| {
            format!(
                "{}: file name does not start with an offset",
                path.display()
            )
        })
}

/// Run `strata log dump`; returns the exit code.
pub fn run(args: &DumpArgs) -> u8 {
    let opts = Options::from(args);
    let files: Vec<PathBuf> = args
        .files
        .iter()
        .chain(args.paths.iter())
        .filter(|p| !p.as_os_str().is_empty())
        .cloned()
        .collect();
    if files.is_empty() {
        eprintln!("Missing required argument \"[files]\"");
        return EXIT_USAGE_OR_IO;
    }
    let mut em = Emitter::new(opts.json);
    let mut problems = Problems::default();
    // One file needs no progress, and Kafka's tool prints nothing extra on stderr.
    let mut progress = (files.len() > 1).then(|| {
        let bytes = files.iter().map(|f| crate::progress::file_bytes(f)).sum();
        Progress::new("dump", "files", files.len() as u64, bytes, args.no_progress)
    });
    for path in &files {
        em.begin_file(path);
        match classify(path) {
            FileKind::Log | FileKind::KraftSnapshot => {
                segment::dump_log(path, &opts, &mut em, &mut problems)
            }
            FileKind::Index => index::dump_index(path, &opts, &mut em, &mut problems),
            FileKind::TimeIndex => index::dump_time_index(path, &opts, &mut em, &mut problems),
            FileKind::ProducerSnapshot => misc::dump_snapshot(path, &mut em, &mut problems),
            FileKind::TxnIndex => misc::dump_txn_index(path, &mut em, &mut problems),
            FileKind::OffsetCheckpoint => {
                misc::dump_offset_checkpoint(path, &mut em, &mut problems)
            }
            FileKind::EpochCheckpoint => misc::dump_epoch_checkpoint(path, &mut em, &mut problems),
            FileKind::PartitionMetadata => {
                misc::dump_partition_metadata(path, &mut em, &mut problems)
            }
            FileKind::Unknown => {
                em.field("kind", "unknown");
                em.flush();
                eprintln!("Ignoring unknown file {}", path.display());
            }
        }
        em.end_file();
        if let Some(p) = progress.as_mut() {
            p.advance(crate::progress::file_bytes(path));
        }
    }
    if let Some(p) = progress {
        p.finish();
    }
    em.flush();
    problems.print();
    problems.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_classified_like_kafka() {
        let k = |s: &str| classify(Path::new(s));
        assert_eq!(k("/d/00000000000000000000.log"), FileKind::Log);
        assert_eq!(k("00000000000000000000.index"), FileKind::Index);
        assert_eq!(k("00000000000000000000.timeindex"), FileKind::TimeIndex);
        assert_eq!(k("00000000000000000000.txnindex"), FileKind::TxnIndex);
        assert_eq!(
            k("00000000000000000010.snapshot"),
            FileKind::ProducerSnapshot
        );
        assert_eq!(
            k("00000000000000000010-0000000001.checkpoint"),
            FileKind::KraftSnapshot
        );
        assert_eq!(k("00000000000000000000.log.deleted"), FileKind::Unknown);
        assert_eq!(
            k("recovery-point-offset-checkpoint"),
            FileKind::OffsetCheckpoint
        );
        assert_eq!(k("leader-epoch-checkpoint"), FileKind::EpochCheckpoint);
        assert_eq!(k("partition.metadata"), FileKind::PartitionMetadata);
        assert_eq!(k("meta.properties"), FileKind::Unknown);
    }

    #[test]
    fn offsets_from_names() {
        assert_eq!(
            file_offset(Path::new("/x/00000000000012345678.log")),
            Ok(12345678)
        );
        assert_eq!(
            file_offset(Path::new("00000000000000000010-0000000001.checkpoint")),
            Ok(10)
        );
        assert!(file_offset(Path::new("abc.log")).is_err());
    }
}
