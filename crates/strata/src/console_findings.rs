//! The doctor behind the storage console: `strata serve` installs
//! [`DoctorFindings`] as the broker's [`ConsoleFindings`], so a partition
//! page shows what `strata log doctor` would say about that partition
//! (retention, compaction, segment rolls), read-only, under the topic's
//! effective config.

use std::path::Path;

use strata_broker::{BrokerConfig, ConsoleFinding, ConsoleFindings, FindingSeverity};
use strata_log::LogConfig;

use crate::doctor::diagnosis::{diagnose, DoctorSettings, Finding, Severity};
use crate::doctor::scan::scan_partition;

/// `strata log doctor`'s scan and diagnosis of one partition directory.
#[derive(Debug, Clone)]
pub struct DoctorFindings {
    settings: DoctorSettings,
}

impl DoctorFindings {
    /// With the broker's own retention interval, recovery and cleaner threads.
    pub fn new(config: &BrokerConfig) -> DoctorFindings {
        DoctorFindings {
            settings: DoctorSettings {
                retention_check_interval_ms: config.log_retention_check_interval_ms,
                recovery_threads: config.num_recovery_threads_per_data_dir.max(1),
                cleaner_threads: config.cleaner.threads,
                ..DoctorSettings::default()
            },
        }
    }
}

fn severity(s: Severity) -> FindingSeverity {
    match s {
        Severity::Info => FindingSeverity::Info,
        Severity::Warning => FindingSeverity::Warning,
        Severity::Error => FindingSeverity::Error,
    }
}

/// A finding's symptom by its `--json` name (`compact_topic_not_shrinking`).
fn symptom_name(f: &Finding) -> String {
    match serde_json::to_value(f.symptom) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{:?}", f.symptom),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl ConsoleFindings for DoctorFindings {
    fn findings(&self, partition_dir: &Path, config: &LogConfig) -> Vec<ConsoleFinding> {
        let facts = match scan_partition(partition_dir, config.cleanup_policy.compact) {
            Ok(facts) => facts,
            Err(e) => {
                return vec![ConsoleFinding {
                    severity: FindingSeverity::Error,
                    symptom: "scan_failed".into(),
                    message: format!(
                        "the doctor could not read the partition: {}",
                        strata_log::ErrorChain(&e)
                    ),
                }]
            }
        };
        diagnose(&facts, config, &self.settings, now_ms())
            .iter()
            .map(|f| ConsoleFinding {
                severity: severity(f.severity),
                symptom: symptom_name(f),
                message: f.message.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_directory_is_a_finding_not_a_panic() {
        let config = BrokerConfig::from_properties(Default::default()).unwrap();
        let doctor = DoctorFindings::new(&config);
        let f = doctor.findings(Path::new("/nonexistent/strata/t-0"), &LogConfig::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, FindingSeverity::Error);
        assert_eq!(f[0].symptom, "scan_failed");
    }
}
