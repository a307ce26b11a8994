//! `strata-topics.json`, the broker's topic store, read-only: topic names,
//! ids and per-topic config overrides (the format is documented on
//! `strata_broker::topics`; this crate may be built without the broker, so
//! the few fields the tools need are read here).
//!
//! ```text
//! { "version": 1, "cluster_id": "...", "next_producer_id": 4000,
//!   "topics": { "<name>": { "id": "<hyphenated uuid>", "partitions": 3,
//!                           "leader_epoch": 0, "configs": { "segment.bytes": "65536" } } } }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;
use uuid::Uuid;

use super::{read_all, ReadError};

/// File name of the store, at the top of the broker's first log directory.
pub const TOPICS_FILE: &str = "strata-topics.json";
/// The only format version the broker writes.
const FORMAT_VERSION: u32 = 1;

/// Why the store could not be read.
#[derive(Debug, Error)]
pub enum TopicStoreError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{path} is not a valid topic store: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} has unsupported format version {version}")]
    Version { path: PathBuf, version: u32 },
    #[error("{path}: topic {topic} has an invalid id {id:?}: {source}")]
    BadId {
        path: PathBuf,
        topic: String,
        id: String,
        #[source]
        source: uuid::Error,
    },
}

#[derive(Deserialize)]
struct Document {
    version: u32,
    #[serde(default)]
    topics: BTreeMap<String, StoredTopicJson>,
}

#[derive(Deserialize)]
struct StoredTopicJson {
    id: String,
    #[serde(default)]
    configs: BTreeMap<String, String>,
}

/// One topic of the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTopic {
    pub id: Uuid,
    /// Topic config overrides, Kafka names, as the user gave them.
    pub configs: BTreeMap<String, String>,
}

/// The store as read from disk.
#[derive(Clone, Debug)]
pub struct TopicStore {
    pub path: PathBuf,
    pub topics: BTreeMap<String, StoredTopic>,
}

/// Read `<log_dir>/strata-topics.json`; `Ok(None)` when there is none (a
/// Kafka log dir, or not the broker's first log dir).
///
/// # Errors
/// An unreadable file, malformed JSON, another format version, a bad id.
pub fn read_topic_store(log_dir: &Path) -> Result<Option<TopicStore>, TopicStoreError> {
    let path = log_dir.join(TOPICS_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = read_all(&path)?;
    let doc: Document =
        serde_json::from_slice(&bytes).map_err(|source| TopicStoreError::Parse {
            path: path.clone(),
            source,
        })?;
    if doc.version != FORMAT_VERSION {
        return Err(TopicStoreError::Version {
            path,
            version: doc.version,
        });
    }
    let mut topics = BTreeMap::new();
    for (name, t) in doc.topics {
        let id = Uuid::parse_str(&t.id).map_err(|source| TopicStoreError::BadId {
            path: path.clone(),
            topic: name.clone(),
            id: t.id.clone(),
            source,
        })?;
        topics.insert(
            name,
            StoredTopic {
                id,
                configs: t.configs,
            },
        );
    }
    Ok(Some(TopicStore { path, topics }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ids_and_configs_and_rejects_other_versions() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_topic_store(dir.path()).unwrap().is_none());
        let id = Uuid::from_u128(0x1234_5678_9abc_def0_1122_3344_5566_7788);
        std::fs::write(
            dir.path().join(TOPICS_FILE),
            format!(
                r#"{{"version":1,"cluster_id":"c","next_producer_id":0,"topics":{{"orders":{{"id":"{}","partitions":2,"leader_epoch":0,"configs":{{"segment.bytes":"65536"}}}}}}}}"#,
                id.hyphenated()
            ),
        )
        .unwrap();
        let store = read_topic_store(dir.path()).unwrap().unwrap();
        let t = &store.topics["orders"];
        assert_eq!(t.id, id);
        assert_eq!(t.configs["segment.bytes"], "65536");
        std::fs::write(dir.path().join(TOPICS_FILE), r#"{"version":2}"#).unwrap();
        assert!(matches!(
            read_topic_store(dir.path()),
            Err(TopicStoreError::Version { version: 2, .. })
        ));
    }
}
