//! `strata-topics.json`, the broker's topic store, read-only: topic names,
//! ids and per-topic config overrides. This crate may be built without the
//! broker, so the store is decoded and validated by
//! `strata_log::codec::topic_store`, the broker's own decoder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use strata_log::codec::topic_store::{TopicStoreDocument, TopicStoreFormatError};
use thiserror::Error;

use super::{read_all, ReadError};

pub use strata_log::codec::topic_store::{TopicInfo, TOPICS_FILE};

/// Why the store could not be read.
#[derive(Debug, Error)]
pub enum TopicStoreError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{path} is not a valid topic store")]
    Format {
        path: PathBuf,
        #[source]
        source: TopicStoreFormatError,
    },
}

/// The store as read from disk.
#[derive(Clone, Debug)]
pub struct TopicStore {
    pub path: PathBuf,
    pub topics: BTreeMap<String, TopicInfo>,
}

/// Read `<log_dir>/strata-topics.json`; `Ok(None)` when there is none (a
/// Kafka log dir, or not the broker's first log dir).
///
/// # Errors
/// An unreadable file, or one the broker would refuse to open.
pub fn read_topic_store(log_dir: &Path) -> Result<Option<TopicStore>, TopicStoreError> {
    let path = log_dir.join(TOPICS_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = read_all(&path)?;
    let doc = TopicStoreDocument::decode(&bytes).map_err(|source| TopicStoreError::Format {
        path: path.clone(),
        source,
    })?;
    Ok(Some(TopicStore {
        path,
        topics: doc.topics,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

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
            Err(TopicStoreError::Format {
                source: TopicStoreFormatError::Version { version: 2 },
                ..
            })
        ));
    }
}
