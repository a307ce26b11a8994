//! The seam through which the console shows the doctor's findings. The
//! doctor lives in the `strata` binary crate, which depends on this one, so
//! the binary installs an implementation of [`ConsoleFindings`] in
//! [`crate::BrokerConfig::console_findings`] at start; without one the
//! partition page says that no findings source is installed.

use std::path::Path;
use std::sync::Arc;

use strata_log::LogConfig;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingSeverity {
    /// Worth knowing.
    Info,
    /// Something an operator should change.
    Warning,
    /// Data on disk is damaged.
    Error,
}

/// One finding about one partition, in plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleFinding {
    pub severity: FindingSeverity,
    /// The symptom it explains (`compaction_uses_cpu`, `retention_not_deleting`, ...).
    pub symptom: String,
    /// Plain words with numbers.
    pub message: String,
}

/// Diagnoses one partition directory read-only (implemented by the
/// `strata` binary with `strata log doctor`'s scan and diagnosis).
pub trait ConsoleFindings: Send + Sync {
    /// The findings about the partition in `partition_dir` under `config`
    /// (the topic's effective config). Must not write anything; problems
    /// reading the directory are findings too.
    fn findings(&self, partition_dir: &Path, config: &LogConfig) -> Vec<ConsoleFinding>;
}

/// The installed findings source, if any. `Debug` prints nothing of it.
#[derive(Clone, Default)]
pub struct FindingsSource(pub Option<Arc<dyn ConsoleFindings>>);

impl FindingsSource {
    /// A source that asks `findings`.
    pub fn new(findings: Arc<dyn ConsoleFindings>) -> FindingsSource {
        FindingsSource(Some(findings))
    }
}

impl std::fmt::Debug for FindingsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "FindingsSource(installed)"
        } else {
            "FindingsSource(none)"
        })
    }
}
