//! The metadata changes any broker makes on a client's behalf: topics
//! (create, grow, reconfigure, delete), dynamic broker configs and
//! producer-id blocks. Each is one etcd transaction conditional on the
//! revision it read, so concurrent admins never overwrite each other; the
//! controller then acts on the result (assigns new partitions).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::layout::Versioned;
use super::layout::{self, PartitionRecord, TopicRecord};
use super::store::{Cond, Op};
use super::{Cluster, ClusterError};

impl Cluster {
    /// Create `topics/<name>`; `Ok(false)` if it already exists.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn create_topic(
        &self,
        name: &str,
        record: &TopicRecord,
    ) -> Result<bool, ClusterError> {
        let key = layout::topic_key(name);
        let when = [Cond::CreateRevision(key.clone(), 0)];
        self.write(&when, &[Op::Put(key, json(record))]).await
    }

    /// The record of topic `name` as etcd holds it now.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn topic_record(
        &self,
        name: &str,
    ) -> Result<Option<TopicRecord>, ClusterError> {
        let r = self.store.get(&layout::topic_key(name)).await;
        self.note(&r);
        Ok(r?.and_then(|raw| serde_json::from_slice(&raw.value).ok()))
    }

    /// Replace `topics/<name>` read at `expected`; `Ok(false)` if it changed.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn update_topic(
        &self,
        name: &str,
        expected: i64,
        record: &TopicRecord,
    ) -> Result<bool, ClusterError> {
        let key = layout::topic_key(name);
        let when = [Cond::ModRevision(key.clone(), expected)];
        self.write(&when, &[Op::Put(key, json(record))]).await
    }

    /// Delete topic `name` (read at `expected`, id `id`) with its partition
    /// states, leaving a `deleted-topics/<id>` marker: a broker that was
    /// down learns from it that its partitions of that id are to go.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn delete_topic(
        &self,
        name: &str,
        expected: i64,
        id: Uuid,
    ) -> Result<bool, ClusterError> {
        let key = layout::topic_key(name);
        let when = [Cond::ModRevision(key.clone(), expected)];
        let ops = [
            Op::Delete(key),
            Op::DeletePrefix(layout::topic_partitions_prefix(name)),
            Op::Put(layout::deleted_topic_key(id), name.as_bytes().to_vec()),
        ];
        self.write(&when, &ops).await
    }

    /// Replace the dynamic configs of BROKER resource `resource` (empty:
    /// the cluster default) read at `expected` (0: absent); `Ok(false)` if
    /// they changed since.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn put_broker_configs(
        &self,
        resource: &str,
        expected: i64,
        configs: &BTreeMap<String, String>,
    ) -> Result<bool, ClusterError> {
        let key = layout::broker_config_key(resource);
        let op = if configs.is_empty() {
            Op::Delete(key.clone())
        } else {
            Op::Put(key.clone(), json(configs))
        };
        self.write(&[Cond::ModRevision(key, expected)], &[op]).await
    }

    /// Replace the security store's document read at `expected` (0:
    /// absent); `Ok(false)` if it changed since.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn put_security(
        &self,
        expected: i64,
        document: Vec<u8>,
    ) -> Result<bool, ClusterError> {
        let key = layout::SECURITY.to_string();
        self.write(
            &[Cond::ModRevision(key.clone(), expected)],
            &[Op::Put(key, document)],
        )
        .await
    }

    /// The security document as etcd holds it now.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn security_document(
        &self,
    ) -> Result<Versioned<Option<String>>, ClusterError> {
        let r = self.store.get(layout::SECURITY).await;
        self.note(&r);
        Ok(match r? {
            Some(raw) => Versioned {
                value: String::from_utf8(raw.value).ok(),
                mod_revision: raw.mod_revision,
            },
            None => Versioned::default(),
        })
    }

    /// A leader's change of its partition's ISR (Kafka's AlterPartition):
    /// replace `partitions/<topic>/<p>` read at `expected`, only while each
    /// broker in `joining` is registered with the broker epoch it fetched
    /// with (KIP-903: a restarted broker must earn its place again).
    /// Returns the new revision (the partition epoch), `None` when a
    /// condition failed.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn alter_partition(
        &self,
        topic: &str,
        partition: i32,
        expected: i64,
        record: &PartitionRecord,
        joining: &[(i32, i64)],
    ) -> Result<Option<i64>, ClusterError> {
        let key = layout::partition_key(topic, partition);
        let mut when = vec![Cond::ModRevision(key.clone(), expected)];
        for &(id, epoch) in joining {
            when.push(Cond::CreateRevision(layout::broker_key(id), epoch));
        }
        let r = self.store.txn(&when, &[Op::Put(key, json(record))]).await;
        self.note(&r);
        r
    }

    /// Reserve `count` producer ids cluster-wide; returns the first. The
    /// counter only grows, by compare-and-swap, so no two brokers ever get
    /// overlapping blocks.
    ///
    /// # Errors
    /// etcd unreachable.
    pub(crate) async fn allocate_producer_ids(&self, count: i64) -> Result<i64, ClusterError> {
        for _ in 0..100 {
            let r = self.store.get(layout::PRODUCER_IDS).await;
            self.note(&r);
            let (next, revision) = match r? {
                Some(raw) => {
                    let next = std::str::from_utf8(&raw.value)
                        .ok()
                        .and_then(|v| v.parse::<i64>().ok())
                        .ok_or(ClusterError::Conflict)?;
                    (next, raw.mod_revision)
                }
                None => (0, 0),
            };
            let end = next.checked_add(count).ok_or(ClusterError::Conflict)?;
            let when = [Cond::ModRevision(layout::PRODUCER_IDS.into(), revision)];
            let ops = [Op::Put(
                layout::PRODUCER_IDS.into(),
                end.to_string().into_bytes(),
            )];
            if self.write(&when, &ops).await? {
                return Ok(next);
            }
        }
        Err(ClusterError::Conflict)
    }

    /// One conditional transaction; `Ok(false)` when a condition failed.
    async fn write(&self, when: &[Cond], ops: &[Op]) -> Result<bool, ClusterError> {
        let r = self.store.txn(when, ops).await;
        self.note(&r);
        Ok(r?.is_some())
    }
}

fn json(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("metadata records serialize")
}
