//! Damage: what `strata log verify` finds in a partition directory (CRC
//! mismatches, torn tails, indexes that disagree with the log, ...) reported
//! as doctor findings. The checking is verify's own code
//! (`crate::verify::partition::verify_partition`), run here without
//! `--deep`; this module only translates its errors.
//!
//! Verify's warnings are left out: most describe a live broker's normal
//! state (the active segment's preallocated, untrimmed index).

use std::path::Path;

use super::diagnosis::{Cause, Finding, Severity, Symptom};
use crate::verify::findings::{Finding as VerifyFinding, Severity as VerifySeverity};
use crate::verify::partition::verify_partition;

/// Run verify's checks on the partition directory `dir`.
pub fn verify_findings(dir: &Path) -> Vec<VerifyFinding> {
    let mut out = Vec::new();
    verify_partition(dir, false, &mut out);
    out
}

/// Verify's errors as doctor findings (pure).
pub fn diagnose(verified: &[VerifyFinding], out: &mut Vec<Finding>) {
    for v in verified
        .iter()
        .filter(|v| v.severity == VerifySeverity::Error)
    {
        let mut f = Finding::new(
            Symptom::DataDamaged,
            Cause::VerifyFoundDamage,
            Severity::Error,
            format!(
                "{v}. The broker recovers a damaged segment at the next unclean start by \
                 truncating it at the first invalid batch (and deleting later segments); \
                 run `strata log verify` for the full report."
            ),
        )
        .num("file", v.file.display().to_string());
        if let Some(p) = v.position {
            f = f.num("position", p);
        }
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&v.problem) {
            if let Some(tag) = fields.get("problem") {
                f = f.num("problem", tag.clone());
            }
        }
        out.push(f);
    }
}
