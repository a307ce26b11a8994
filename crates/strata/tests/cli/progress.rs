//! Progress of long commands on stderr: plain lines with an ETA and a final
//! line when stderr is not a terminal, an indicatif bar under a
//! pseudo-terminal, nothing with `--no-progress`, and stdout left clean.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use strata_log::{LeaderEpoch, LogManager, LogManagerConfig, Offset, Timestamp, TopicPartition};
use strata_tiered::rlmm::topic::LogManagerMetadataLog;
use strata_tiered::rlmm::TopicRlmm;
use strata_tiered::{
    RemoteLogMetadataManager, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState,
    TopicIdPartition,
};

use crate::common::{run, write_strata_partition};

/// A log dir with partitions `a-0`, `b-0`, `c-0` of a few segments each.
fn log_dir_with_partitions(root: &Path) {
    for topic in ["a", "b", "c"] {
        write_strata_partition(root, topic, 30, 5, 256, 2048);
    }
}

fn progress_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect()
}

#[test]
fn verify_prints_progress_lines_with_an_eta_and_a_final_line() {
    let tmp = tempfile::tempdir().unwrap();
    log_dir_with_partitions(tmp.path());
    let (code, out, err) = run(["log", "verify", tmp.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let lines = progress_lines(&err);
    assert!(lines.len() >= 2, "{err}");
    assert!(
        lines[0].starts_with("progress: verify 0/3 partitions, "),
        "{err}"
    );
    assert!(lines[0].contains("ETA"), "{err}");
    let last = lines[lines.len() - 1];
    assert!(
        last.starts_with("progress: verify 3/3 partitions, "),
        "{err}"
    );
    assert!(last.contains("done in"), "{err}");
    // The bytes of the three partitions, in binary units.
    assert!(last.contains("KiB/"), "{err}");
    // stdout is the report alone.
    assert!(!out.contains("progress"), "{out}");
    assert!(out.contains("verified 3 partitions"), "{out}");
}

#[test]
fn no_progress_silences_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    log_dir_with_partitions(tmp.path());
    let (code, out, err) = run([
        "log",
        "verify",
        "--no-progress",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(progress_lines(&err).is_empty(), "{err}");
}

#[test]
fn dump_of_several_files_reports_files_and_json_stays_on_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "d", 30, 5, 256, 2048);
    let logs = crate::common::files_with(&dir, ".log");
    assert!(logs.len() >= 2, "{logs:?}");
    let mut args = vec!["log".to_string(), "dump".into(), "--json".into()];
    args.extend(logs.iter().map(|p| p.display().to_string()));
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let lines = progress_lines(&err);
    let n = logs.len();
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with(&format!("progress: dump {n}/{n} files"))),
        "{err}"
    );
    for line in out.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("stdout is JSON lines only");
    }
}

/// A log dir with partitions and a remote-tier catalogue of `segments`
/// half-finished copies (STARTED, no objects), as `tier fsck` reads it.
fn log_dir_with_catalogue(root: &Path, segments: i64) {
    log_dir_with_partitions(root);
    let clock = strata_log::SystemClock::shared();
    let logs = LogManager::open(
        LogManagerConfig::new(vec![root.to_path_buf()]),
        clock.clone(),
    )
    .unwrap();
    let meta = LogManagerMetadataLog::open(Arc::clone(&logs), 50).unwrap();
    let (rlmm, _) = TopicRlmm::open(Arc::new(meta), clock).unwrap();
    let tip = TopicIdPartition::new(uuid::Uuid::from_u64_pair(1, 2), TopicPartition::new("a", 0));
    for i in 0..segments {
        rlmm.add_remote_log_segment_metadata(RemoteLogSegmentMetadata {
            segment_id: RemoteLogSegmentId::generate(tip.clone()),
            start_offset: Offset(i * 10),
            end_offset: Offset(i * 10 + 9),
            max_timestamp: Timestamp(1),
            broker_id: 1,
            event_timestamp_ms: 0,
            segment_leader_epochs: [(LeaderEpoch(0), Offset(i * 10))].into(),
            segment_size_in_bytes: 1024,
            custom_metadata: None,
            state: RemoteLogSegmentState::CopySegmentStarted,
        })
        .unwrap();
    }
    logs.shutdown().unwrap();
}

#[test]
fn tier_fsck_reports_segments_reconciled() {
    let tmp = tempfile::tempdir().unwrap();
    log_dir_with_catalogue(tmp.path(), 4);
    let (code, out, err) = run(["tier", "fsck", "--log-dir", tmp.path().to_str().unwrap()]);
    // Four half-finished copies are findings.
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("segments in metadata: 4"), "{out}");
    let lines = progress_lines(&err);
    assert!(lines.len() >= 2, "{err}");
    assert!(
        lines[0].starts_with("progress: fsck 0/4 segments, 0 B/4.0 KiB, ETA"),
        "{err}"
    );
    assert!(
        lines[lines.len() - 1].starts_with("progress: fsck 4/4 segments, 4.0 KiB/4.0 KiB, done in"),
        "{err}"
    );
    let (_, _, quiet) = run([
        "tier",
        "fsck",
        "--no-progress",
        "--log-dir",
        tmp.path().to_str().unwrap(),
    ]);
    assert!(progress_lines(&quiet).is_empty(), "{quiet}");
}

/// Runs `args` under a pseudo-terminal with `script(1)`; its output (the
/// terminal's bytes). `None` when `script` is not installed.
fn under_pty(args: &[&str]) -> Option<String> {
    let mut command = env!("CARGO_BIN_EXE_strata").to_string();
    for a in args {
        command.push(' ');
        command.push_str(a);
    }
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("RUST_LOG")
        .env("TERM", "xterm")
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_terminal_gets_a_bar_not_lines() {
    let tmp = tempfile::tempdir().unwrap();
    log_dir_with_catalogue(tmp.path(), 2);
    let dir = tmp.path().to_str().unwrap();
    let Some(verify) = under_pty(&["log", "verify", dir]) else {
        eprintln!("script(1) not installed; skipping");
        return;
    };
    // indicatif's bar: the prefix, the bar's brackets and fill, and the
    // line-clearing escape it redraws with; no plain lines.
    assert!(verify.contains("verify ["), "{verify:?}");
    assert!(verify.contains("=]"), "{verify:?}");
    assert!(verify.contains("partitions"), "{verify:?}");
    assert!(!verify.contains("progress: "), "{verify:?}");
    let fsck = under_pty(&["tier", "fsck", "--log-dir", dir]).unwrap();
    assert!(fsck.contains("fsck ["), "{fsck:?}");
    assert!(fsck.contains("2/2 segments"), "{fsck:?}");
    assert!(!fsck.contains("progress: "), "{fsck:?}");
    let quiet = under_pty(&["log", "verify", "--no-progress", dir]).unwrap();
    assert!(!quiet.contains("verify ["), "{quiet:?}");
}
