//! Guards that recovery never deletes data silently: cutting a segment at a
//! corrupt or torn batch, deleting the segments after it, and dropping every
//! segment because the checkpointed log start is beyond the log end each log
//! a WARN line naming the partition, the offsets and the bytes dropped.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::*;
use strata_log::{LoadParams, Log, LogConfig, MockClock, Offset};
use tracing_subscriber::fmt::MakeWriter;

/// A shared buffer the fmt layer writes into.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Run `f` with a WARN-level subscriber as this thread's default; its output.
fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let buf = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(buf.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (out, text.lines().map(str::to_owned).collect())
}

fn cfg() -> LogConfig {
    LogConfig {
        segment_bytes: 2_000,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

fn reopen(root: &Path, name: &str, params: LoadParams) -> Arc<Log> {
    open_log(root, name, cfg(), &MockClock::new(0), params)
}

/// A closed log of `n` two-record batches in several segments (each test
/// chooses what the next open is told about the shutdown).
fn written(root: &Path, name: &str, n: i64) -> Vec<strata_log::SegmentInfo> {
    let log = reopen(root, name, LoadParams::default());
    for i in 0..n {
        log.append_as_follower(&follower_batch(2 * i, &[10 * i, 10 * i + 5], 30))
            .unwrap();
    }
    let segs = log.segments();
    log.close().unwrap();
    segs
}

/// The one WARN line containing `message`, asserting each `field=value`.
fn warn_line<'a>(lines: &'a [String], message: &str, fields: &[String]) -> &'a str {
    let found: Vec<&String> = lines.iter().filter(|l| l.contains(message)).collect();
    assert_eq!(found.len(), 1, "one {message:?} line in {lines:#?}");
    let line = found[0].as_str();
    assert!(line.contains(" WARN "), "{line}");
    for f in fields {
        assert!(
            line.split_whitespace().any(|w| w == f),
            "{f} missing in {line}"
        );
    }
    line
}

#[test]
fn truncation_at_a_corrupt_batch_and_deleted_later_segments_are_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let segs = written(tmp.path(), "warn-0", 60);
    assert!(segs.len() >= 4, "{}", segs.len());
    let victim = &segs[1];
    let mut bytes = fs::read(&victim.log_path).unwrap();
    let bad = split_batches(&bytes)[3].clone();
    bytes[bad.position + bad.size - 3] ^= 0x55;
    fs::write(&victim.log_path, &bytes).unwrap();

    let (log, lines) = capture(|| reopen(tmp.path(), "warn-0", LoadParams::default()));
    assert_eq!(log.log_end_offset(), Offset(bad.base));
    warn_line(
        &lines,
        "found an invalid or torn batch in log segment",
        &[
            "partition=warn-0".to_owned(),
            format!("segment_base={}", victim.base_offset.0),
            format!("truncated_at_offset={}", bad.base),
            format!("truncated_at_position={}", bad.position),
            format!("invalid_batch_position={}", bad.position),
            format!("bytes_dropped={}", bytes.len() - bad.position),
        ],
    );
    for later in &segs[2..] {
        warn_line(
            &lines,
            &format!(" segment_base={} ", later.base_offset.0),
            &[
                "partition=warn-0".to_owned(),
                format!("truncated_segment_base={}", victim.base_offset.0),
                format!("bytes_dropped={}", later.size),
            ],
        );
    }
    let deletions = lines
        .iter()
        .filter(|l| l.contains("deleting log segment after a truncated segment"))
        .count();
    assert_eq!(deletions, segs.len() - 2);
}

#[test]
fn torn_active_segment_after_a_clean_shutdown_is_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let segs = written(tmp.path(), "torn-0", 60);
    let active = segs.last().unwrap();
    let last = split_batches(&fs::read(&active.log_path).unwrap())
        .last()
        .unwrap()
        .clone();
    let f = fs::OpenOptions::new()
        .write(true)
        .open(&active.log_path)
        .unwrap();
    f.set_len((last.position + 20) as u64).unwrap();
    let clean = LoadParams {
        had_clean_shutdown: true,
        ..LoadParams::default()
    };
    let (_log, lines) = capture(|| reopen(tmp.path(), "torn-0", clean));
    warn_line(
        &lines,
        "active segment does not end on a whole batch after a clean shutdown",
        &[
            "partition=torn-0".to_owned(),
            format!("segment_base={}", active.base_offset.0),
            format!("segment_bytes={}", last.position + 20),
            format!("valid_end={}", last.position),
        ],
    );
    warn_line(
        &lines,
        "found an invalid or torn batch in log segment",
        &[
            "partition=torn-0".to_owned(),
            format!("truncated_at_offset={}", last.base),
            "bytes_dropped=20".to_owned(),
        ],
    );
}

#[test]
fn log_start_beyond_the_log_end_is_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let segs = written(tmp.path(), "start-0", 30);
    let total: u64 = segs.iter().map(|s| s.size).sum();
    let params = LoadParams {
        log_start_offset: Offset(1_000),
        had_clean_shutdown: true,
        ..LoadParams::default()
    };
    let (log, lines) = capture(|| reopen(tmp.path(), "start-0", params));
    assert_eq!(log.log_end_offset(), Offset(1_000));
    warn_line(
        &lines,
        "log end offset is below the checkpointed log start offset",
        &[
            "partition=start-0".to_owned(),
            "log_start_offset=1000".to_owned(),
            "log_end_offset=60".to_owned(),
            format!("segments={}", segs.len()),
            format!("bytes_dropped={total}"),
        ],
    );
}

#[test]
fn a_clean_open_logs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    written(tmp.path(), "quiet-0", 30);
    let clean = LoadParams {
        had_clean_shutdown: true,
        ..LoadParams::default()
    };
    let (_log, lines) = capture(|| reopen(tmp.path(), "quiet-0", clean));
    assert!(lines.is_empty(), "{lines:#?}");
}
