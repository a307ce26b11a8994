//! `strata tier ...` commands (the binary's `tier` arm calls [`run`]).
//!
//! `strata tier fsck --log-dir DIR [--config server.properties]
//! [--override k=v]... [--repair]` opens the (stopped) broker's log dirs,
//! rebuilds the catalogue from `__remote_log_metadata`, lists the remote
//! store and reports orphans, half-finished copies and deletes, and
//! missing objects. Exit codes: 0 clean (or repaired), 1 findings, 2 usage
//! or I/O errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_log::{LogManager, LogManagerConfig, SharedClock, SystemClock};

use crate::bridge::Bridge;
use crate::config::TieredConfig;
use crate::fsck::{fsck, FsckReport};
use crate::rlmm::topic::LogManagerMetadataLog;
use crate::rlmm::TopicRlmm;

/// `strata tier` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum TierCommand {
    /// Reconcile remote-log metadata with the object store (broker stopped).
    Fsck(FsckArgs),
}

/// Arguments of `strata tier fsck`.
#[derive(clap::Args, Debug)]
pub struct FsckArgs {
    /// A broker log directory (repeat for several); defaults to `log.dirs`.
    #[arg(long = "log-dir", value_name = "DIR")]
    pub log_dirs: Vec<PathBuf>,
    /// The broker's server.properties.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one property, `key=value`; may be repeated.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Delete orphans and finish half-done copies/deletes.
    #[arg(long)]
    pub repair: bool,
}

/// Run a `tier` command; returns the exit code.
pub fn run(cmd: &TierCommand) -> u8 {
    match cmd {
        TierCommand::Fsck(args) => match fsck_command(args) {
            Ok(report) => {
                print_report(&report, args.repair);
                if report.is_clean() || args.repair {
                    0
                } else {
                    1
                }
            }
            Err(message) => {
                eprintln!("strata tier fsck: {message}");
                2
            }
        },
    }
}

/// Kafka `server.properties` (`key=value`, `#`/`!` comments) plus overrides.
fn load_properties(
    path: Option<&Path>,
    overrides: &[String],
) -> Result<BTreeMap<String, String>, String> {
    let mut props = BTreeMap::new();
    if let Some(path) = path {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            if let Some((k, v)) = line.split_once(['=', ':']) {
                props.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    for o in overrides {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| format!("override {o:?} is not key=value"))?;
        props.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(props)
}

fn fsck_command(args: &FsckArgs) -> Result<FsckReport, String> {
    let props = load_properties(args.config.as_deref(), &args.overrides)?;
    let mut dirs = args.log_dirs.clone();
    if dirs.is_empty() {
        let listed = props
            .get("log.dirs")
            .or_else(|| props.get("log.dir"))
            .ok_or("no --log-dir and no log.dirs")?;
        dirs = listed.split(',').map(|d| PathBuf::from(d.trim())).collect();
    }
    let config =
        TieredConfig::from_broker_properties(&props, &dirs[0]).map_err(|e| e.to_string())?;
    let clock: SharedClock = Arc::new(SystemClock);
    let logs = LogManager::open(LogManagerConfig::new(dirs), Arc::clone(&clock))
        .map_err(|e| format!("opening log dirs: {e}"))?;
    let result = (|| {
        let rsm = config
            .build_rsm(Arc::new(Bridge::new(2).map_err(|e| e.to_string())?))
            .map_err(|e| e.to_string())?;
        let meta = LogManagerMetadataLog::open(Arc::clone(&logs), config.metadata_partitions)
            .map_err(|e| e.to_string())?;
        let (rlmm, _) =
            TopicRlmm::open(Arc::new(meta), Arc::clone(&clock)).map_err(|e| e.to_string())?;
        let broker_id = props
            .get("node.id")
            .or_else(|| props.get("broker.id"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1);
        fsck(&rsm, &rlmm, args.repair, clock.now_ms(), broker_id)
            .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)))
    })();
    logs.shutdown()
        .map_err(|e| format!("closing log dirs: {e}"))?;
    result
}

fn print_report(r: &FsckReport, repair: bool) {
    println!("segments in metadata: {}", r.segments);
    println!("objects in store: {}", r.objects);
    for o in &r.orphans {
        println!("orphan object: {} ({} bytes)", o.key, o.size);
    }
    for md in &r.half_copies {
        println!(
            "half-finished copy: {} offsets {}..={}",
            md.segment_id, md.start_offset.0, md.end_offset.0
        );
    }
    for md in &r.unfinished_deletes {
        println!(
            "unfinished delete: {} offsets {}..={}",
            md.segment_id, md.start_offset.0, md.end_offset.0
        );
    }
    for (md, missing) in &r.missing {
        println!(
            "MISSING objects {missing:?} of copied segment {} offsets {}..={}",
            md.segment_id, md.start_offset.0, md.end_offset.0
        );
    }
    if repair {
        println!("repaired: {}", r.repaired);
    }
    println!("{}", if r.is_clean() { "clean" } else { "findings" });
}
