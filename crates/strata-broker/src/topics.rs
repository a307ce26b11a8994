//! The topic metadata store: which topics exist, their ids, partition
//! counts, leader epochs and per-topic config overrides, plus the broker's
//! cluster id and producer-id allocation block.
//!
//! Kafka keeps this in the KRaft metadata log; Strata keeps it in one small
//! JSON file at the log-directory level (never inside a partition directory,
//! docs/architecture.md decision 1), rewritten atomically: write `strata-topics.json.tmp`,
//! fsync, rename over `strata-topics.json`, fsync the directory.
//!
//! Format: `<first log dir>/strata-topics.json`, encoded and validated by
//! [`strata_log::codec::topic_store`] (which the `strata log` tools read too).
//! Invariants: names are unique, ids are unique, `partitions >= 1`, the file
//! on disk is always a complete document (old or new, never a mix).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use strata_log::codec::topic_store::{TopicStoreDocument as Document, TopicStoreFormatError};
use thiserror::Error;
use uuid::Uuid;

pub use strata_log::codec::topic_store::{TopicInfo, TOPICS_FILE};
/// Longest legal topic name (Kafka `Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Why the store could not be read, written or changed.
#[derive(Debug, Error)]
pub enum TopicStoreError {
    #[error("I/O error on {path} while {op}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid topic store")]
    Format {
        path: PathBuf,
        #[source]
        source: TopicStoreFormatError,
    },
    #[error("topic {name} already exists")]
    AlreadyExists { name: String },
    #[error("topic {name} does not exist")]
    NotFound { name: String },
}

/// The store. All state sits behind one mutex; every mutation persists the
/// whole document before returning (while still holding the lock, so writes
/// are serialised and the file always matches some in-memory state).
#[derive(Debug)]
pub struct TopicStore {
    /// `None`: cluster mode, where the store only mirrors etcd in memory.
    path: Option<PathBuf>,
    state: Mutex<Document>,
    /// Moves on every change of the topics (the group coordinator rebuilds
    /// its topic image when it moves).
    version: AtomicU64,
}

impl TopicStore {
    /// Open (or create empty) the store in `dir`.
    ///
    /// # Errors
    /// Unreadable or corrupt file.
    pub fn open(dir: &Path) -> Result<TopicStore, TopicStoreError> {
        let path = dir.join(TOPICS_FILE);
        let doc = match std::fs::read(&path) {
            Ok(bytes) => Document::decode(&bytes).map_err(|source| TopicStoreError::Format {
                path: path.clone(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Document::empty(),
            Err(source) => {
                return Err(TopicStoreError::Io {
                    path,
                    op: "reading",
                    source,
                })
            }
        };
        Ok(TopicStore {
            path: Some(path),
            state: Mutex::new(doc),
            version: AtomicU64::new(0),
        })
    }

    /// A store that persists nothing: in cluster mode the topics live in
    /// etcd and this store mirrors them ([`Self::replace_topics`]).
    pub fn in_memory() -> TopicStore {
        TopicStore {
            path: None,
            state: Mutex::new(Document::empty()),
            version: AtomicU64::new(0),
        }
    }

    /// Replace every topic at once (the cluster mirror).
    pub fn replace_topics(&self, topics: impl IntoIterator<Item = TopicInfo>) {
        let mut doc = self.lock();
        doc.topics = topics.into_iter().map(|t| (t.name.clone(), t)).collect();
        self.version.fetch_add(1, Ordering::Release);
    }

    /// A number that changes whenever a topic is created, changed or deleted.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Document> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cluster id: `configured` if given (and remembered), else the stored
    /// one, else a new random one (persisted).
    pub fn cluster_id(&self, configured: Option<&str>) -> Result<String, TopicStoreError> {
        let mut doc = self.lock();
        if let Some(c) = configured {
            if doc.cluster_id.as_deref() != Some(c) {
                doc.cluster_id = Some(c.to_string());
                self.persist(&doc)?;
            }
            return Ok(c.to_string());
        }
        if let Some(c) = &doc.cluster_id {
            return Ok(c.clone());
        }
        let id = new_cluster_id();
        doc.cluster_id = Some(id.clone());
        self.persist(&doc)?;
        Ok(id)
    }

    /// The stored cluster id, if the store has one yet.
    pub fn stored_cluster_id(&self) -> Option<String> {
        self.lock().cluster_id.clone()
    }

    /// Never hand out an id at or below `id` again (ids found in the logs
    /// when the store was rebuilt).
    pub fn reserve_producer_ids_through(&self, id: i64) -> Result<(), TopicStoreError> {
        let mut doc = self.lock();
        if doc.next_producer_id > id {
            return Ok(());
        }
        let old = doc.next_producer_id;
        doc.next_producer_id = id.saturating_add(1);
        if let Err(e) = self.persist(&doc) {
            doc.next_producer_id = old;
            return Err(e);
        }
        Ok(())
    }

    /// Reserve `count` producer ids; returns the first. Ids are never reused
    /// across restarts because the block end is persisted before use.
    pub fn allocate_producer_ids(&self, count: i64) -> Result<i64, TopicStoreError> {
        let mut doc = self.lock();
        let first = doc.next_producer_id;
        doc.next_producer_id = first + count;
        if let Err(e) = self.persist(&doc) {
            doc.next_producer_id = first;
            return Err(e);
        }
        Ok(first)
    }

    pub fn get(&self, name: &str) -> Option<TopicInfo> {
        self.lock().topics.get(name).cloned()
    }

    pub fn get_by_id(&self, id: Uuid) -> Option<TopicInfo> {
        self.lock().topics.values().find(|t| t.id == id).cloned()
    }

    /// All topics, sorted by name.
    pub fn list(&self) -> Vec<TopicInfo> {
        self.lock().topics.values().cloned().collect()
    }

    /// Add a topic. `id` is generated when `None`.
    pub fn create(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        id: Option<Uuid>,
    ) -> Result<TopicInfo, TopicStoreError> {
        let mut doc = self.lock();
        if doc.topics.contains_key(name) {
            return Err(TopicStoreError::AlreadyExists { name: name.into() });
        }
        let info = TopicInfo {
            name: name.to_string(),
            id: id.unwrap_or_else(new_topic_id),
            partitions,
            leader_epoch: 0,
            configs,
        };
        doc.topics.insert(name.to_string(), info.clone());
        if let Err(e) = self.persist(&doc) {
            doc.topics.remove(name);
            return Err(e);
        }
        self.version.fetch_add(1, Ordering::Release);
        Ok(info)
    }

    /// Change one topic with `f` and persist; rolled back if persisting fails.
    pub fn update(
        &self,
        name: &str,
        f: impl FnOnce(&mut TopicInfo),
    ) -> Result<TopicInfo, TopicStoreError> {
        let mut doc = self.lock();
        let old = doc
            .topics
            .get(name)
            .cloned()
            .ok_or_else(|| TopicStoreError::NotFound { name: name.into() })?;
        let mut new = old.clone();
        f(&mut new);
        doc.topics.insert(name.to_string(), new.clone());
        if let Err(e) = self.persist(&doc) {
            doc.topics.insert(name.to_string(), old);
            return Err(e);
        }
        self.version.fetch_add(1, Ordering::Release);
        Ok(new)
    }

    /// Remove a topic.
    pub fn delete(&self, name: &str) -> Result<TopicInfo, TopicStoreError> {
        let mut doc = self.lock();
        let old = doc
            .topics
            .remove(name)
            .ok_or_else(|| TopicStoreError::NotFound { name: name.into() })?;
        if let Err(e) = self.persist(&doc) {
            doc.topics.insert(name.to_string(), old);
            return Err(e);
        }
        self.version.fetch_add(1, Ordering::Release);
        Ok(old)
    }

    /// Write the document atomically: tmp file, fsync, rename, fsync dir.
    fn persist(&self, doc: &Document) -> Result<(), TopicStoreError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let bytes = doc.encode();
        strata_log::fs::write_atomically(&strata_log::fs::StdFs, path, &bytes).map_err(|source| {
            TopicStoreError::Io {
                path: path.clone(),
                op: "writing",
                source,
            }
        })
    }
}

/// A random topic id that is neither the zero uuid nor Kafka's reserved
/// metadata-topic id (`AAAAAAAAAAAAAAAAAAAAAQ`).
pub fn new_topic_id() -> Uuid {
    loop {
        let id = Uuid::new_v4();
        if id.as_u128() > 1 {
            return id;
        }
    }
}

/// Kafka's cluster id format: a random uuid in unpadded base64url (22 chars).
pub fn new_cluster_id() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Uuid::new_v4().as_bytes())
}

/// Why a topic name is illegal (Kafka `Topic.validate`), or `None` if legal.
pub fn invalid_topic_name_reason(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("topic name is empty");
    }
    if name == "." || name == ".." {
        return Some("topic name cannot be \".\" or \"..\"");
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Some("topic name is longer than 249 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Some(
            "topic name contains characters other than ASCII alphanumerics, '.', '_' and '-'",
        );
    }
    None
}

/// Kafka's internal topics.
pub fn is_internal(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_reopen_and_rolls_nothing_partial() {
        let dir = tempfile::tempdir().unwrap();
        let store = TopicStore::open(dir.path()).unwrap();
        let cid = store.cluster_id(None).unwrap();
        assert_eq!(cid.len(), 22);
        let mut cfg = BTreeMap::new();
        cfg.insert("retention.ms".to_string(), "1000".to_string());
        let a = store.create("a", 3, cfg.clone(), None).unwrap();
        assert!(matches!(
            store.create("a", 1, BTreeMap::new(), None),
            Err(TopicStoreError::AlreadyExists { .. })
        ));
        store.create("b", 1, BTreeMap::new(), None).unwrap();
        store.update("b", |t| t.partitions = 5).unwrap();
        store.delete("a").unwrap();
        store.create("a", 2, cfg, None).unwrap();
        let p1 = store.allocate_producer_ids(1000).unwrap();
        drop(store);
        assert!(!dir.path().join("strata-topics.json.tmp").exists());

        let store = TopicStore::open(dir.path()).unwrap();
        assert_eq!(store.cluster_id(None).unwrap(), cid);
        let a2 = store.get("a").unwrap();
        assert_ne!(a2.id, a.id, "a re-created topic gets a new id");
        assert_eq!(a2.partitions, 2);
        assert_eq!(a2.configs["retention.ms"], "1000");
        assert_eq!(store.get("b").unwrap().partitions, 5);
        assert_eq!(store.get_by_id(a2.id).unwrap().name, "a");
        assert_eq!(store.allocate_producer_ids(1000).unwrap(), p1 + 1000);
        assert_eq!(
            store
                .list()
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            vec!["a", "b"]
        );
    }

    #[test]
    fn corrupt_file_is_an_error_not_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(TOPICS_FILE), b"{ not json").unwrap();
        assert!(matches!(
            TopicStore::open(dir.path()),
            Err(TopicStoreError::Format {
                source: TopicStoreFormatError::Parse(_),
                ..
            })
        ));
    }

    #[test]
    fn topic_name_rules_are_kafkas() {
        assert!(invalid_topic_name_reason("orders.v1_x-y").is_none());
        assert!(invalid_topic_name_reason("").is_some());
        assert!(invalid_topic_name_reason("..").is_some());
        assert!(invalid_topic_name_reason("a b").is_some());
        assert!(invalid_topic_name_reason(&"x".repeat(250)).is_some());
        assert!(invalid_topic_name_reason(&"x".repeat(249)).is_none());
        assert!(is_internal("__consumer_offsets"));
        assert!(!is_internal("orders"));
    }
}
