//! The persisted dynamic broker configs: one small JSON document next to
//! the topic store, rewritten atomically (temp file, fsync, rename, fsync
//! of the directory), so the file is always a complete old or new document.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::DynamicConfigError;

/// File name of the store inside the first log directory.
pub const BROKER_CONFIGS_FILE: &str = "strata-broker-configs.json";
const FORMAT_VERSION: u32 = 1;

/// The dynamic configs of every level, Kafka property names, values as the
/// user gave them.
///
/// Format: `<first log dir>/strata-broker-configs.json`
/// ```text
/// {
///   "version": 1,
///   "cluster_default": { "log.retention.ms": "3600000" },   // resource name ""
///   "brokers": { "1": { "log.segment.bytes": "1048576" } }  // resource name "<broker.id>"
/// }
/// ```
/// Invariants: broker keys are decimal node ids; values are strings; a
/// missing file is the empty document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Document {
    pub version: u32,
    #[serde(default)]
    pub cluster_default: BTreeMap<String, String>,
    #[serde(default)]
    pub brokers: BTreeMap<String, BTreeMap<String, String>>,
}

impl Default for Document {
    fn default() -> Self {
        Document {
            version: FORMAT_VERSION,
            cluster_default: BTreeMap::new(),
            brokers: BTreeMap::new(),
        }
    }
}

/// Read the document at `path`; a missing file is an empty document.
pub(crate) fn load(path: &Path) -> Result<Document, DynamicConfigError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Document::default()),
        Err(source) => {
            return Err(DynamicConfigError::Io {
                path: path.to_path_buf(),
                op: "reading",
                source,
            })
        }
    };
    let doc: Document =
        serde_json::from_slice(&bytes).map_err(|source| DynamicConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    if doc.version != FORMAT_VERSION {
        return Err(DynamicConfigError::Version {
            path: path.to_path_buf(),
            version: doc.version,
        });
    }
    Ok(doc)
}

/// Write `doc` to `path` atomically.
pub(crate) fn persist(path: &Path, doc: &Document) -> Result<(), DynamicConfigError> {
    let bytes = serde_json::to_vec_pretty(doc).map_err(|source| DynamicConfigError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    strata_log::fs::write_atomically(&strata_log::fs::StdFs, path, &bytes).map_err(|source| {
        DynamicConfigError::Io {
            path: path.to_path_buf(),
            op: "writing",
            source,
        }
    })
}
