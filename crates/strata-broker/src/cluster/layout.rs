//! The etcd layout: every key under the configured prefix, the JSON value
//! each holds, and [`Snapshot`], the parsed view of all of them at one etcd
//! revision. Pure: no I/O. `docs/cluster.md` describes the same layout for
//! operators.
//!
//! | key (under the prefix)        | value                      | written by |
//! |-------------------------------|----------------------------|------------|
//! | `cluster-id`                  | the cluster id (text)      | first broker, create-if-absent |
//! | `brokers/<id>`                | [`BrokerRecord`], leased   | the broker itself |
//! | `controller`                  | [`ControllerRecord`], leased | the elected broker |
//! | `controller-epoch`            | last controller epoch (text) | each election |
//! | `topics/<name>`               | [`TopicRecord`]            | admin requests, CAS |
//! | `partitions/<name>/<p>`       | [`PartitionRecord`]        | the controller, CAS + fence |
//! | `deleted-topics/<id>`         | the deleted topic's name   | DeleteTopics |
//! | `configs/brokers/<id or empty>` | `{name: value}`          | AlterConfigs, CAS |
//! | `producer-ids`                | next unreserved id (text)  | CAS counter |
//! | `security`                    | ACLs, SCRAM credentials, quotas (JSON, `security::store`) | security APIs, CAS |

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub(crate) const CLUSTER_ID: &str = "cluster-id";
pub(crate) const CONTROLLER: &str = "controller";
pub(crate) const CONTROLLER_EPOCH: &str = "controller-epoch";
pub(crate) const PRODUCER_IDS: &str = "producer-ids";
pub(crate) const BROKERS: &str = "brokers/";
pub(crate) const TOPICS: &str = "topics/";
pub(crate) const PARTITIONS: &str = "partitions/";
pub(crate) const DELETED_TOPICS: &str = "deleted-topics/";
pub(crate) const BROKER_CONFIGS: &str = "configs/brokers/";
pub(crate) const SECURITY: &str = "security";

pub(crate) fn broker_key(id: i32) -> String {
    format!("{BROKERS}{id}")
}

pub(crate) fn topic_key(name: &str) -> String {
    format!("{TOPICS}{name}")
}

/// The prefix of every partition key of `topic` (for a range delete).
pub(crate) fn topic_partitions_prefix(topic: &str) -> String {
    format!("{PARTITIONS}{topic}/")
}

pub(crate) fn partition_key(topic: &str, partition: i32) -> String {
    format!("{PARTITIONS}{topic}/{partition}")
}

pub(crate) fn deleted_topic_key(id: Uuid) -> String {
    format!("{DELETED_TOPICS}{id}")
}

/// `configs/brokers/<id>`; the empty resource name is the cluster default.
pub(crate) fn broker_config_key(resource: &str) -> String {
    format!("{BROKER_CONFIGS}{resource}")
}

/// A live broker's registration (`brokers/<id>`, under its lease).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BrokerRecord {
    pub id: i32,
    #[serde(default)]
    pub rack: Option<String>,
    /// The inter-broker listener's name and advertised endpoint.
    pub listener: String,
    pub host: String,
    pub port: u16,
    /// Every advertised listener (name, host, port), for clients' Metadata;
    /// empty in records of brokers that predate multiple listeners.
    #[serde(default)]
    pub endpoints: Vec<(String, String, u16)>,
    /// Controlled shutdown asked: the controller moves leadership away
    /// and leaves it out of elections and ISRs.
    #[serde(default)]
    pub shutting_down: bool,
}

impl BrokerRecord {
    /// The broker's endpoint on `listener`.
    pub(crate) fn endpoint(&self, listener: &str) -> Option<(&str, u16)> {
        if self.endpoints.is_empty() {
            // A record of one listener only: it serves every client.
            return Some((self.host.as_str(), self.port));
        }
        self.endpoints
            .iter()
            .find(|(name, _, _)| name == listener)
            .map(|(_, host, port)| (host.as_str(), *port))
    }
}

/// The elected controller (`controller`, under its broker's lease).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ControllerRecord {
    pub id: i32,
    pub epoch: i32,
}

/// A topic (`topics/<name>`): what admin requests decide. Its partitions'
/// replicas and leaders are the controller's (`partitions/...`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TopicRecord {
    pub id: Uuid,
    pub partitions: i32,
    pub replication_factor: i16,
    #[serde(default)]
    pub configs: BTreeMap<String, String>,
}

/// A partition's state (`partitions/<name>/<p>`), Kafka's `PartitionRecord`
/// / `LeaderAndIsr`: changed only by the controller, by compare-and-swap on
/// the key's revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PartitionRecord {
    pub topic_id: Uuid,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// -1: no leader.
    pub leader: i32,
    pub leader_epoch: i32,
    /// Bumped on every change (Kafka's partition epoch).
    pub partition_epoch: i32,
    /// A reassignment in progress (KIP-455): the replicas joining and
    /// leaving; `replicas` is the target followed by `removing_replicas`.
    /// Both empty when none (and absent from older records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding_replicas: Vec<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing_replicas: Vec<i32>,
    /// The broker epoch (registration create revision) of `leader` when it
    /// was elected or last confirmed; 0: none recorded (no leader, or a
    /// record written before this field). A leader registered under another
    /// epoch now restarted since (a bounced broker, as Kafka's controller
    /// detects in ZooKeeper mode and KRaft fences): it must not go on
    /// leading the same epoch with state it lost.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub leader_broker_epoch: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

impl PartitionRecord {
    /// `self` with `leader_broker_epoch` set from `s` (0 without a live
    /// leader): every write that chooses a leader records its incarnation.
    pub(crate) fn stamped(mut self, s: &Snapshot) -> PartitionRecord {
        self.leader_broker_epoch = s.brokers.get(&self.leader).map_or(0, |b| b.epoch);
        self
    }

    /// The leader restarted since it was elected: it is registered under
    /// another broker epoch than the one recorded.
    pub(crate) fn leader_bounced(&self, s: &Snapshot) -> bool {
        self.leader >= 0
            && self.leader_broker_epoch != 0
            && s.brokers
                .get(&self.leader)
                .is_some_and(|b| b.epoch != self.leader_broker_epoch)
    }
}

/// A key's value with the revisions compare-and-swap needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawValue {
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
}

/// A value with the revision it was last written at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Versioned<T> {
    pub value: T,
    pub mod_revision: i64,
}

/// A registered broker: its record and its broker epoch (the registration
/// key's create revision, Kafka ZooKeeper mode's czxid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LiveBroker {
    pub record: BrokerRecord,
    pub epoch: i64,
}

/// The controller and the revision its key was created at (every
/// controller write compares it, so a deposed controller's writes fail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Controller {
    pub record: ControllerRecord,
    pub create_revision: i64,
}

/// Everything under the prefix at one revision, parsed. A value that does
/// not parse is skipped (and logged by [`Snapshot::parse`]), never guessed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub revision: i64,
    pub cluster_id: Option<String>,
    pub brokers: BTreeMap<i32, LiveBroker>,
    pub controller: Option<Controller>,
    /// Last controller epoch handed out, with its key's revision.
    pub controller_epoch: Versioned<i32>,
    pub topics: BTreeMap<String, Versioned<TopicRecord>>,
    pub partitions: BTreeMap<(String, i32), Versioned<PartitionRecord>>,
    pub deleted_topics: BTreeSet<Uuid>,
    pub broker_configs: BTreeMap<String, Versioned<BTreeMap<String, String>>>,
    pub producer_ids: Versioned<i64>,
    /// The security store's document (JSON text; parsed by `security::store`).
    pub security: Versioned<Option<String>>,
}

impl Snapshot {
    /// Parse the raw keys (relative to the prefix) at `revision`.
    pub(crate) fn parse(raw: &BTreeMap<String, RawValue>, revision: i64) -> Snapshot {
        let mut s = Snapshot {
            revision,
            ..Snapshot::default()
        };
        for (key, raw) in raw {
            if let Err(reason) = s.add(key, raw) {
                tracing::warn!(key, reason, "ignoring an unreadable cluster metadata key");
            }
        }
        s
    }

    fn add(&mut self, key: &str, raw: &RawValue) -> Result<(), &'static str> {
        fn json<T: serde::de::DeserializeOwned>(
            raw: &RawValue,
            what: &'static str,
        ) -> Result<T, &'static str> {
            serde_json::from_slice(&raw.value).map_err(|_| what)
        }
        fn versioned<T>(raw: &RawValue, value: T) -> Versioned<T> {
            Versioned {
                value,
                mod_revision: raw.mod_revision,
            }
        }
        let text = || std::str::from_utf8(&raw.value).map_err(|_| "value is not UTF-8");
        if key == CLUSTER_ID {
            self.cluster_id = Some(text()?.to_string());
        } else if key == CONTROLLER {
            self.controller = Some(Controller {
                record: json(raw, "not a controller record")?,
                create_revision: raw.create_revision,
            });
        } else if key == CONTROLLER_EPOCH {
            let epoch = text()?.parse().map_err(|_| "not an epoch")?;
            self.controller_epoch = versioned(raw, epoch);
        } else if key == SECURITY {
            self.security = versioned(raw, Some(text()?.to_string()));
        } else if key == PRODUCER_IDS {
            let next = text()?.parse().map_err(|_| "not a producer id")?;
            self.producer_ids = versioned(raw, next);
        } else if let Some(id) = key.strip_prefix(BROKERS) {
            let id: i32 = id.parse().map_err(|_| "broker id is not a number")?;
            let record: BrokerRecord = json(raw, "not a broker record")?;
            if record.id != id {
                return Err("broker record names another id than its key");
            }
            self.brokers.insert(
                id,
                LiveBroker {
                    record,
                    epoch: raw.create_revision,
                },
            );
        } else if let Some(name) = key.strip_prefix(TOPICS) {
            let record: TopicRecord = json(raw, "not a topic record")?;
            self.topics.insert(name.to_string(), versioned(raw, record));
        } else if let Some(rest) = key.strip_prefix(PARTITIONS) {
            let (topic, p) = rest.rsplit_once('/').ok_or("partition key without index")?;
            let p: i32 = p.parse().map_err(|_| "partition index is not a number")?;
            let record: PartitionRecord = json(raw, "not a partition record")?;
            self.partitions
                .insert((topic.to_string(), p), versioned(raw, record));
        } else if let Some(id) = key.strip_prefix(DELETED_TOPICS) {
            let id: Uuid = id.parse().map_err(|_| "deleted topic id is not a uuid")?;
            self.deleted_topics.insert(id);
        } else if let Some(resource) = key.strip_prefix(BROKER_CONFIGS) {
            let configs: BTreeMap<String, String> = json(raw, "not a config map")?;
            self.broker_configs
                .insert(resource.to_string(), versioned(raw, configs));
        } else {
            return Err("unknown key");
        }
        Ok(())
    }

    /// The state of partition `p` of `topic`, if the controller assigned it.
    pub(crate) fn partition(&self, topic: &str, p: i32) -> Option<&Versioned<PartitionRecord>> {
        // BTreeMap<(String, i32)> cannot be probed with (&str, i32) without
        // an owned key; topics are short, so the allocation is cheap.
        self.partitions.get(&(topic.to_string(), p))
    }

    /// True once every partition of `topic` has a state.
    pub(crate) fn fully_assigned(&self, topic: &str) -> bool {
        match self.topics.get(topic) {
            Some(t) => (0..t.value.partitions).all(|p| {
                self.partition(topic, p)
                    .is_some_and(|s| s.value.topic_id == t.value.id)
            }),
            None => false,
        }
    }

    pub(crate) fn is_live(&self, broker: i32) -> bool {
        self.brokers.contains_key(&broker)
    }

    /// Live and not shutting down: may lead or join an ISR.
    pub(crate) fn is_eligible(&self, broker: i32) -> bool {
        self.brokers
            .get(&broker)
            .is_some_and(|b| !b.record.shutting_down)
    }

    /// The dynamic configs of BROKER resource `resource` (empty: default).
    pub(crate) fn broker_configs(&self, resource: &str) -> BTreeMap<String, String> {
        self.broker_configs
            .get(resource)
            .map(|v| v.value.clone())
            .unwrap_or_default()
    }

    pub(crate) fn controller_id(&self) -> Option<i32> {
        self.controller.as_ref().map(|c| c.record.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(value: &str, rev: i64) -> RawValue {
        RawValue {
            value: value.as_bytes().to_vec(),
            create_revision: rev,
            mod_revision: rev + 1,
        }
    }

    #[test]
    fn parses_every_kind_of_key_and_skips_garbage() {
        let id = Uuid::from_u128(7);
        let mut m = BTreeMap::new();
        m.insert(CLUSTER_ID.to_string(), raw("abc", 1));
        m.insert(
            broker_key(2),
            raw(
                r#"{"id":2,"rack":"r1","listener":"PLAINTEXT","host":"h","port":9}"#,
                5,
            ),
        );
        m.insert(
            broker_key(3),
            raw(r#"{"id":4,"listener":"P","host":"h","port":9}"#, 6),
        );
        m.insert(CONTROLLER.to_string(), raw(r#"{"id":2,"epoch":3}"#, 8));
        m.insert(CONTROLLER_EPOCH.to_string(), raw("3", 7));
        m.insert(
            topic_key("t"),
            raw(
                &format!(r#"{{"id":"{id}","partitions":2,"replication_factor":1}}"#),
                9,
            ),
        );
        m.insert(
            partition_key("t", 1),
            raw(
                &format!(
                    r#"{{"topic_id":"{id}","replicas":[2],"isr":[2],"leader":2,"leader_epoch":4,"partition_epoch":4}}"#
                ),
                10,
            ),
        );
        m.insert(partition_key("t", 0) + "x", raw("{}", 11));
        m.insert("nonsense".into(), raw("1", 12));
        m.insert(PRODUCER_IDS.to_string(), raw("2000", 13));
        let s = Snapshot::parse(&m, 20);
        assert_eq!(s.cluster_id.as_deref(), Some("abc"));
        assert_eq!(s.brokers.len(), 1, "a record naming another id is skipped");
        assert_eq!(s.brokers[&2].epoch, 5);
        assert_eq!(s.controller_id(), Some(2));
        assert_eq!(s.controller.as_ref().unwrap().create_revision, 8);
        assert_eq!(s.controller_epoch.value, 3);
        assert_eq!(s.producer_ids.value, 2000);
        assert_eq!(s.partition("t", 1).unwrap().value.leader_epoch, 4);
        assert_eq!(s.partition("t", 1).unwrap().mod_revision, 11);
        assert!(!s.fully_assigned("t"), "partition 0 has no state");
    }
}
