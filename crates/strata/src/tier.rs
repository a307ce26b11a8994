//! `strata tier ...`: the command line of the remote-tier tools; the work
//! itself is `strata_tiered::fsck`.
//!
//! `strata tier fsck [--log-dir DIR]... [--config server.properties]
//! [--override k=v]... [--repair]` opens the (stopped) broker's log dirs,
//! rebuilds the catalogue from `__remote_log_metadata`, lists the remote
//! store and reports orphans, half-finished copies and deletes, and
//! missing objects. The configuration is loaded as `strata serve` loads it
//! (`crate::ConfigArgs`). Exit codes: 0 clean (or repaired), 1 findings,
//! 2 usage, configuration or I/O errors.

use std::path::PathBuf;
use std::sync::Arc;

use strata_broker::BrokerConfig;
use strata_log::{LogManager, LogManagerConfig, SharedClock, SystemClock};
use strata_tiered::fsck::{fsck_with_progress, FsckReport, FsckStep};
use strata_tiered::rlmm::topic::LogManagerMetadataLog;
use strata_tiered::rlmm::TopicRlmm;
use strata_tiered::{Bridge, TieredConfig};

use crate::progress::Progress;
use crate::{ConfigArgs, EXIT_FAILURES, EXIT_OK, EXIT_USAGE_OR_IO};

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
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Delete orphans and finish half-done copies/deletes.
    #[arg(long)]
    pub repair: bool,
    /// Do not report progress on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// The settings `strata tier fsck` uses, as `--print-config` shows them.
pub fn settings(config: &BrokerConfig) -> Vec<(&'static str, String)> {
    let mut out = crate::pick(config, &["log.dirs", "node.id"]);
    out.extend(config.tiered.resolved());
    out
}

/// Run a `tier` command; returns the exit code.
pub fn run(cmd: &TierCommand) -> u8 {
    match cmd {
        TierCommand::Fsck(args) => {
            let config = match args.config.load("tier fsck", settings) {
                Ok(config) => config,
                Err(code) => return code,
            };
            match fsck_command(args, &config) {
                Ok(report) => {
                    print_report(&report, args.repair);
                    if report.is_clean() || args.repair {
                        EXIT_OK
                    } else {
                        EXIT_FAILURES
                    }
                }
                Err(message) => {
                    eprintln!("strata tier fsck: {message}");
                    EXIT_USAGE_OR_IO
                }
            }
        }
    }
}

fn fsck_command(args: &FsckArgs, broker: &BrokerConfig) -> Result<FsckReport, String> {
    let mut dirs = args.log_dirs.clone();
    let mut config = broker.tiered.clone();
    if dirs.is_empty() {
        dirs = broker.log_dirs.clone();
    } else if broker.tiered.storage_uri.is_empty() {
        // The default local tier is beside the first log dir actually opened.
        config.location = TieredConfig::default_location(&dirs[0]);
    }
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
        let mut progress: Option<Progress> = None;
        let report = fsck_with_progress(
            &rsm,
            &rlmm,
            args.repair,
            clock.now_ms(),
            broker.node_id,
            &mut |step| match step {
                FsckStep::Planned { segments, bytes } => {
                    progress = Some(Progress::new(
                        "fsck",
                        "segments",
                        segments,
                        bytes,
                        args.no_progress,
                    ));
                }
                FsckStep::Checked { bytes } => {
                    if let Some(p) = progress.as_mut() {
                        p.advance(bytes);
                    }
                }
            },
        )
        .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)));
        if let Some(p) = progress {
            p.finish();
        }
        report
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
