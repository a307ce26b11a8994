//! `strata`: the Kafka-compatible broker and its log toolchain in one binary.
//!
//! # Layout
//!
//! - `strata serve`: runs the broker ([`strata_broker::serve_main`]).
//! - `strata log dump`: [`dump`], parity with Kafka 3.9's `kafka-dump-log.sh`.
//! - `strata log verify`: [`verify`], a read-only consistency check of
//!   partition and log directories.
//! - `strata log doctor`: [`doctor`], explains a partition (retention,
//!   compaction, restart cost, rolls, indexes, damage, hanging transactions).
//! - `strata log compact --dry-run`: [`compact`], what compaction would reclaim.
//! - `strata tier fsck`: [`tier`], the remote-tier catalogue against the bucket.
//! - [`progress`]: progress of long commands on stderr (a bar on a
//!   terminal, plain lines otherwise; `--no-progress` turns it off).
//! - `console_findings`: the doctor behind the storage console's partition
//!   pages (installed by `serve`).
//! - [`read`]: the read-only file readers `dump`, `verify` and `doctor`
//!   share; every format is decoded by `strata_log::codec` (the engine's own
//!   codecs) from plain reads, never a mapping.
//! - [`ConfigArgs`]: `--config`/`--override`/`--print-config`, shared by
//!   `serve`, `log doctor` and `tier fsck`, so that all three load a
//!   `server.properties` through the same reader, tables and validation
//!   (`strata_broker::BrokerConfig::load`) and fail with the same message.
//!
//! `§N` in comments is a section of `docs/kafka-behaviour.md`.
//!
//! Exit codes: 0 success, 1 verification failures (corruption found),
//! 2 usage or I/O errors.

mod compact;
mod console_findings;
mod doctor;
mod dump;
mod progress;
mod read;
mod tier;
mod verify;

use std::path::PathBuf;

use std::process::ExitCode;
use strata_broker::{BrokerConfig, LogFormat};

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
    Tier(tier::TierCommand),
}

#[derive(Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArgs,
}

/// How a command gets the broker's configuration: the same for `serve`,
/// `log doctor` and `tier fsck`.
#[derive(Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// A server.properties file with Kafka's property names.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one property, `key=value`; may be repeated.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Print the resolved `key=value` of every setting this command uses, then exit.
    #[arg(long)]
    pub print_config: bool,
}

impl ConfigArgs {
    /// Load and validate the configuration as `strata serve` does.
    /// `Err` carries the exit code when the command must stop here: after
    /// `--print-config` (0, having printed `settings(config)`), or on a bad
    /// configuration (2, with `strata <command>: <error>` on stderr).
    pub fn load(
        &self,
        command: &str,
        settings: fn(&BrokerConfig) -> Vec<(&'static str, String)>,
    ) -> Result<BrokerConfig, u8> {
        let config = BrokerConfig::load(self.config.as_deref(), &self.overrides).map_err(|e| {
            eprintln!("strata {command}: {}", strata_log::ErrorChain(&e));
            EXIT_USAGE_OR_IO
        })?;
        if self.print_config {
            for (key, value) in settings(&config) {
                println!("{key}={value}");
            }
            return Err(EXIT_OK);
        }
        Ok(config)
    }
}

/// The broker-table rows `keys` of `config`, resolved, in `keys` order.
pub fn pick(config: &BrokerConfig, keys: &[&str]) -> Vec<(&'static str, String)> {
    let all = config.resolved();
    keys.iter()
        .filter_map(|k| all.iter().find(|(name, _)| name == k).cloned())
        .collect()
}

/// The settings `strata log doctor` uses, as `--print-config` shows them.
fn doctor_settings(config: &BrokerConfig) -> Vec<(&'static str, String)> {
    let mut out = pick(
        config,
        &[
            "log.dirs",
            "log.retention.check.interval.ms",
            "num.recovery.threads.per.data.dir",
            "log.cleaner.threads",
        ],
    );
    out.extend(config.log_config.resolved());
    out
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

/// Install the log subscriber: `RUST_LOG` filters (default `warn`), lines
/// go to stderr so that dump output on stdout stays machine-readable, as
/// text or (`strata.log.format=json`, `serve` only) one JSON object per line.
fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        // `serve` installs logging itself, once it knows the format.
        Command::Serve(args) => serve(&args),
        Command::Log(LogCommand::Dump(args)) => {
            init_tracing(LogFormat::Text);
            dump::run(&args)
        }
        Command::Log(LogCommand::Verify(args)) => {
            init_tracing(LogFormat::Text);
            verify::run(&args)
        }
        Command::Log(LogCommand::Doctor(args)) => {
            init_tracing(LogFormat::Text);
            match args.config.load("log doctor", doctor_settings) {
                Ok(config) => doctor::run(&args, &config),
                Err(code) => code,
            }
        }
        Command::Log(LogCommand::Compact(args)) => {
            init_tracing(LogFormat::Text);
            compact::run(&args)
        }
        Command::Tier(cmd) => {
            init_tracing(LogFormat::Text);
            tier::run(&cmd)
        }
    };
    ExitCode::from(code)
}

/// The log format `serve` will use: `strata.log.format` of the
/// configuration, read quietly (no subscriber yet) so that the real load
/// below logs its warnings in that format; text when the configuration is
/// bad (the real load then reports why).
fn serve_log_format(args: &ServeArgs) -> LogFormat {
    BrokerConfig::load(args.config.config.as_deref(), &args.config.overrides)
        .map_or(LogFormat::Text, |c| c.log_format)
}

fn serve(args: &ServeArgs) -> u8 {
    init_tracing(serve_log_format(args));
    let mut config = match args.config.load("serve", BrokerConfig::resolved) {
        Ok(config) => config,
        Err(code) => return code,
    };
    config.console_findings = strata_broker::FindingsSource::new(std::sync::Arc::new(
        console_findings::DoctorFindings::new(&config),
    ));
    match strata_broker::serve_main(config) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("strata serve: {}", strata_log::ErrorChain(&e));
            EXIT_USAGE_OR_IO
        }
    }
}
