//! [`TopicImage`]: the topics a consumer group can subscribe to, as the
//! coordinator sees them at one moment (Kafka's `MetadataImage` topics).
//!
//! The runtime builds it from the topic store and (in cluster mode) the
//! replicas' racks, and rebuilds it only when the topic store's version
//! moves, so a heartbeat costs no scan of every topic.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

/// One topic of the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ImageTopic {
    pub id: Uuid,
    pub partitions: i32,
    /// Per partition: the racks of its replicas (empty when unknown).
    pub racks: Vec<BTreeSet<String>>,
    /// Internal topics (`__consumer_offsets`, …) never match a regex.
    pub internal: bool,
}

/// Every topic by name, and names by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TopicImage {
    /// Moves whenever a topic is created, deleted or changes its partitions.
    pub version: u64,
    pub topics: BTreeMap<String, ImageTopic>,
    names: HashMap<Uuid, String>,
}

impl TopicImage {
    /// An image of `topics` at `version`.
    pub(crate) fn new(version: u64, topics: BTreeMap<String, ImageTopic>) -> TopicImage {
        let names = topics.iter().map(|(n, t)| (t.id, n.clone())).collect();
        TopicImage {
            version,
            topics,
            names,
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&ImageTopic> {
        self.topics.get(name)
    }

    /// The name of topic `id`, if it exists.
    pub(crate) fn name_of(&self, id: Uuid) -> Option<&str> {
        self.names.get(&id).map(String::as_str)
    }
}
