//! `strata-topics.json`, the broker's topic store: which topics exist, their
//! ids, partition counts, leader epochs and per-topic config overrides, plus
//! the cluster id and the producer-id allocation block.
//!
//! Kafka keeps this in the KRaft metadata log; Strata keeps it in one small
//! JSON file at the top of the broker's first log directory (never inside a
//! partition directory). The broker (`strata_broker::topics`) reads and
//! rewrites it; `strata log verify / doctor` read it, possibly without the
//! broker compiled in. Both decode with [`TopicStoreDocument::decode`].
//!
//! Format:
//!
//! ```text
//! {
//!   "version": 1,
//!   "cluster_id": "<22-char base64url uuid>",
//!   "next_producer_id": 4000,              // first id of the next unallocated block
//!   "topics": {
//!     "<name>": { "id": "<hyphenated uuid>", "partitions": 3, "leader_epoch": 0,
//!                 "configs": { "retention.ms": "1000" } }
//!   }
//! }
//! ```
//!
//! Invariants: names are unique (JSON object keys), ids are unique,
//! `partitions >= 1`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

/// File name of the store, at the top of the broker's first log directory.
pub const TOPICS_FILE: &str = "strata-topics.json";

/// The only format version written or read.
pub const TOPIC_STORE_VERSION: u32 = 1;

/// Why a topic store's bytes are not a valid store.
#[derive(Debug, Error)]
pub enum TopicStoreFormatError {
    /// Not JSON, or JSON of another shape (including a malformed topic id).
    #[error("not a valid topic store")]
    Parse(#[source] serde_json::Error),
    #[error("unsupported format version {version}")]
    Version { version: u32 },
    #[error("topic {topic} has {partitions} partitions (at least 1 required)")]
    NoPartitions { topic: String, partitions: i32 },
    #[error("topics {first} and {second} share the id {id}")]
    DuplicateId {
        first: String,
        second: String,
        id: Uuid,
    },
}

/// What the broker knows about one topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopicInfo {
    /// The key of the entry in the document (not stored in the entry).
    #[serde(skip)]
    pub name: String,
    #[serde(with = "uuid_text")]
    pub id: Uuid,
    pub partitions: i32,
    /// Leader epoch of every partition (single broker: changes only when a
    /// log directory taken from elsewhere already carries a higher epoch).
    #[serde(default)]
    pub leader_epoch: i32,
    /// Topic config overrides, Kafka names, as the user gave them.
    #[serde(default)]
    pub configs: BTreeMap<String, String>,
}

/// The whole store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopicStoreDocument {
    pub version: u32,
    #[serde(default)]
    pub cluster_id: Option<String>,
    /// First id of the next unallocated producer-id block.
    #[serde(default)]
    pub next_producer_id: i64,
    #[serde(default)]
    pub topics: BTreeMap<String, TopicInfo>,
}

impl TopicStoreDocument {
    /// A store with no cluster id and no topics.
    pub fn empty() -> TopicStoreDocument {
        TopicStoreDocument {
            version: TOPIC_STORE_VERSION,
            cluster_id: None,
            next_producer_id: 0,
            topics: BTreeMap::new(),
        }
    }

    /// Decode and validate a store; each [`TopicInfo::name`] is filled in
    /// from its key.
    ///
    /// # Errors
    ///
    /// Malformed JSON or a malformed id, another version, a topic without
    /// partitions, two topics with one id.
    pub fn decode(bytes: &[u8]) -> Result<TopicStoreDocument, TopicStoreFormatError> {
        let mut doc: TopicStoreDocument =
            serde_json::from_slice(bytes).map_err(TopicStoreFormatError::Parse)?;
        if doc.version != TOPIC_STORE_VERSION {
            return Err(TopicStoreFormatError::Version {
                version: doc.version,
            });
        }
        let mut ids: BTreeMap<Uuid, &str> = BTreeMap::new();
        for (name, t) in &doc.topics {
            if t.partitions < 1 {
                return Err(TopicStoreFormatError::NoPartitions {
                    topic: name.clone(),
                    partitions: t.partitions,
                });
            }
            if let Some(first) = ids.insert(t.id, name) {
                return Err(TopicStoreFormatError::DuplicateId {
                    first: first.to_owned(),
                    second: name.clone(),
                    id: t.id,
                });
            }
        }
        for (name, t) in doc.topics.iter_mut() {
            t.name = name.clone();
        }
        Ok(doc)
    }

    /// The store's bytes (pretty-printed JSON).
    pub fn encode(&self) -> Vec<u8> {
        // Every key is a string and every value plain data: serialising
        // cannot fail.
        serde_json::to_vec_pretty(self).expect("a topic store always serialises")
    }
}

mod uuid_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub fn serialize<S: Serializer>(id: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&id.hyphenated().to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = String::deserialize(d)?;
        Uuid::parse_str(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn store(topics: &str) -> String {
        format!(r#"{{"version":1,"cluster_id":"c","next_producer_id":4000,"topics":{{{topics}}}}}"#)
    }

    #[test]
    fn round_trips_and_names_topics() {
        let text = store(&format!(
            r#""orders":{{"id":"{}","partitions":2,"leader_epoch":3,"configs":{{"segment.bytes":"65536"}}}}"#,
            id(0x1234).hyphenated()
        ));
        let doc = TopicStoreDocument::decode(text.as_bytes()).unwrap();
        let t = &doc.topics["orders"];
        assert_eq!(
            (t.name.as_str(), t.id, t.partitions),
            ("orders", id(0x1234), 2)
        );
        assert_eq!((t.leader_epoch, doc.next_producer_id), (3, 4000));
        assert_eq!(t.configs["segment.bytes"], "65536");
        assert_eq!(TopicStoreDocument::decode(&doc.encode()).unwrap(), doc);
        let empty = TopicStoreDocument::empty();
        assert_eq!(TopicStoreDocument::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn rejects_what_the_broker_never_writes() {
        let decode = |text: String| TopicStoreDocument::decode(text.as_bytes());
        assert!(matches!(
            decode(r#"{"version":2}"#.into()),
            Err(TopicStoreFormatError::Version { version: 2 })
        ));
        assert!(matches!(
            decode(store(r#""a":{"id":"not-a-uuid","partitions":1}"#)),
            Err(TopicStoreFormatError::Parse(_))
        ));
        assert!(matches!(
            decode(store(&format!(
                r#""a":{{"id":"{}","partitions":0}}"#,
                id(1)
            ))),
            Err(TopicStoreFormatError::NoPartitions { partitions: 0, .. })
        ));
        let two = format!(
            r#""a":{{"id":"{0}","partitions":1}},"b":{{"id":"{0}","partitions":1}}"#,
            id(7)
        );
        assert!(matches!(
            decode(store(&two)),
            Err(TopicStoreFormatError::DuplicateId { .. })
        ));
    }
}
