//! `strata log compact --dry-run PATH`: what the log cleaner would reclaim
//! from a partition directory, computed read-only with the cleaner's own
//! filter ([`strata_log::cleaner::dry_run`]). Nothing is written.

use std::path::PathBuf;

use clap::Args;
use strata_log::Clock;

use crate::progress::Progress;
use crate::{EXIT_OK, EXIT_USAGE_OR_IO};

#[derive(Args, Debug)]
pub struct CompactArgs {
    /// A partition directory (`<topic>-<partition>`).
    #[arg(value_name = "PATH")]
    path: PathBuf,
    /// Only estimate (the only mode: compaction itself runs in the broker).
    #[arg(long)]
    dry_run: bool,
    /// `delete.retention.ms` for tombstone horizons (Kafka's default: 1 day).
    #[arg(long, default_value_t = 86_400_000)]
    delete_retention_ms: i64,
    /// `log.cleaner.io.buffer.load.factor`, to size the map needed.
    #[arg(long, default_value_t = 0.9)]
    load_factor: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Do not report progress on stderr.
    #[arg(long)]
    no_progress: bool,
}

fn mib(b: u64) -> String {
    if b < 1 << 20 {
        format!("{b} bytes")
    } else {
        format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

pub fn run(args: &CompactArgs) -> u8 {
    if !args.dry_run {
        eprintln!("strata log compact: only --dry-run is supported; the broker's cleaner threads compact live logs");
        return EXIT_USAGE_OR_IO;
    }
    let now = strata_log::SystemClock.now_ms();
    // The dry run is one pass over the partition: its progress is the
    // partition as a whole (start and end lines, or a bar on a terminal).
    let bytes = crate::progress::dir_bytes(&args.path);
    let mut progress = Progress::new("compact", "partitions", 1, bytes, args.no_progress);
    let result =
        strata_log::cleaner::dry_run(&args.path, now, args.delete_retention_ms, args.load_factor);
    progress.advance(bytes);
    progress.finish();
    match result {
        Ok(r) => {
            if args.json {
                match serde_json::to_string_pretty(&r) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("strata log compact: {e}");
                        return EXIT_USAGE_OR_IO;
                    }
                }
            } else {
                println!(
                    "partition {}-{}: {} segments, {}",
                    r.topic,
                    r.partition,
                    r.segments,
                    mib(r.total_bytes)
                );
                println!(
                    "dirty section [{}, {}): {} in {} distinct keys",
                    r.first_dirty_offset,
                    r.first_uncleanable_offset,
                    mib(r.dirty_bytes),
                    r.distinct_dirty_keys
                );
                println!(
                    "a clean would rewrite {} into {}: {} reclaimable ({} of {} records kept)",
                    mib(r.rewritten_bytes),
                    mib(r.bytes_after),
                    mib(r.reclaimable_bytes),
                    r.records_kept,
                    r.records_read
                );
                println!(
                    "dedupe memory for one pass: {}",
                    mib(r.dedupe_memory_needed)
                );
            }
            EXIT_OK
        }
        Err(e) => {
            eprintln!("strata log compact: {e}");
            EXIT_USAGE_OR_IO
        }
    }
}
