//! `strata`: the Kafka-compatible broker and its log toolchain in one binary.
//!
//! # Layout
//!
//! - `strata serve`: runs the broker ([`strata_broker::serve_main`]).
//! - `strata log dump`: [`dump`], parity with Kafka 3.9's `kafka-dump-log.sh`.
//! - `strata log verify`: [`verify`], a read-only consistency check of
//!   partition and log directories.
//! - `strata log doctor`: [`doctor`], explains a partition (retention,
//!   compaction, restart cost, rolls, indexes, damage).
//! - `strata log compact --dry-run`: [`compact`], what compaction would reclaim.
//! - `strata tier fsck`: `strata_tiered::cli`, the remote catalogue against
//!   the bucket.
//! - [`read`]: the read-only file readers `dump`, `verify` and `doctor`
//!   share; every format is decoded by `strata_log::codec` (the engine's own
//!   codecs) from plain reads, never a mapping.
//!
//! `§N` in comments is a section of `docs/kafka-behaviour.md`.
//!
//! Exit codes: 0 success, 1 verification failures (corruption found),
//! 2 usage or I/O errors.

mod compact;
mod doctor;
mod dump;
mod read;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Everything went as asked.
pub const EXIT_OK: u8 = 0;
/// The command ran but found corruption or inconsistencies.
pub const EXIT_FAILURES: u8 = 1;
/// Bad usage, or a file could not be read.
pub const EXIT_USAGE_OR_IO: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "strata",
    version,
    about = "Kafka-compatible streaming broker and Kafka log toolchain"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the broker.
    Serve(ServeArgs),
    /// Inspect and check Kafka log directories, segments and indexes.
    #[command(subcommand)]
    Log(LogCommand),
    /// Tiered storage (KIP-405) tools: `fsck` reconciles metadata with the bucket.
    #[command(subcommand)]
    Tier(strata_tiered::cli::TierCommand),
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// A server.properties file with Kafka's property names.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override one property, `key=value`; may be repeated.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum LogCommand {
    /// Dump segments, indexes, snapshots and checkpoints (kafka-dump-log parity).
    Dump(dump::DumpArgs),
    /// Check partition or log directories for corruption and inconsistencies.
    Verify(verify::VerifyArgs),
    /// Explain a partition: retention, compaction, restart cost, rolls, indexes.
    Doctor(doctor::DoctorArgs),
    /// Estimate what compaction would reclaim (`--dry-run`; read-only).
    Compact(compact::CompactArgs),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Logs go to stderr so that dump output on stdout stays machine-readable.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let code = match cli.command {
        Command::Serve(args) => serve(&args),
        Command::Log(LogCommand::Dump(args)) => dump::run(&args),
        Command::Log(LogCommand::Verify(args)) => verify::run(&args),
        Command::Log(LogCommand::Doctor(args)) => doctor::run(&args),
        Command::Log(LogCommand::Compact(args)) => compact::run(&args),
        Command::Tier(cmd) => strata_tiered::cli::run(&cmd),
    };
    ExitCode::from(code)
}

#[cfg(feature = "serve")]
fn serve(args: &ServeArgs) -> u8 {
    match strata_broker::serve_main(args.config.as_deref(), &args.overrides) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("strata serve: {}", strata_log::ErrorChain(&e));
            EXIT_USAGE_OR_IO
        }
    }
}

#[cfg(not(feature = "serve"))]
fn serve(args: &ServeArgs) -> u8 {
    eprintln!(
        "strata serve: this binary was built without the `serve` feature (config {:?}, {} overrides ignored)",
        args.config,
        args.overrides.len()
    );
    EXIT_USAGE_OR_IO
}
