//! What a fetch session remembers per partition (Kafka `CachedPartition`)
//! and the rule that decides whether an incremental response lists a
//! partition (`CachedPartition.maybeUpdateResponseData`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use uuid::Uuid;

/// How a session names a topic: by id from Fetch v13 on (the id may be
/// unknown to this broker; the handler resolves it on every request, so a
/// topic created later is found), by name before.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TopicKey {
    Id(Uuid),
    Name(Arc<str>),
}

/// One partition of a session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct PartitionKey {
    pub topic: TopicKey,
    pub partition: i32,
}

/// The fetcher's parameters of one partition, as its last request that
/// listed the partition gave them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PartitionRequest {
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    /// The fetcher's own log start offset (followers; -1 for consumers).
    pub log_start_offset: i64,
    pub last_fetched_epoch: i32,
}

/// A partition as the session last answered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CachedPartition {
    pub request: PartitionRequest,
    /// -1 until answered, and after an error (so the partition is listed
    /// again once the error clears).
    pub high_watermark: i64,
    /// The log start offset on this broker as last answered.
    pub log_start_offset: i64,
    /// Strata also remembers the last stable offset (Kafka does not): a
    /// read_committed fetcher learns of an LSO move at once.
    pub last_stable_offset: i64,
}

impl CachedPartition {
    /// A partition first seen in a request, not answered yet.
    pub(crate) fn new(request: PartitionRequest) -> Self {
        CachedPartition {
            request,
            high_watermark: -1,
            log_start_offset: -1,
            last_stable_offset: -1,
        }
    }
}

/// What one partition's answer holds, as far as the session cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PartitionAnswer {
    pub records_len: u64,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub last_stable_offset: i64,
    pub error_code: i16,
    /// A preferred read replica is set (KIP-392).
    pub preferred_replica: bool,
    /// A diverging epoch is set (KIP-320).
    pub diverging: bool,
}

/// Must an incremental response list this partition? With `update`, the
/// cache takes the answer's offsets (Kafka: only when the response is
/// really sent, not when sizing it for the quota).
pub(crate) fn must_respond(
    cached: &mut CachedPartition,
    answer: &PartitionAnswer,
    update: bool,
) -> bool {
    let mut respond = answer.records_len > 0;
    if cached.high_watermark != answer.high_watermark {
        respond = true;
        if update {
            cached.high_watermark = answer.high_watermark;
        }
    }
    if cached.log_start_offset != answer.log_start_offset {
        respond = true;
        if update {
            cached.log_start_offset = answer.log_start_offset;
        }
    }
    if cached.last_stable_offset != answer.last_stable_offset {
        respond = true;
        if update {
            cached.last_stable_offset = answer.last_stable_offset;
        }
    }
    if answer.preferred_replica || answer.diverging {
        respond = true;
    }
    if answer.error_code != 0 {
        respond = true;
        if update {
            cached.high_watermark = -1;
        }
    }
    respond
}

/// A session's partitions in order: new partitions join at the end, and a
/// partition that returned records moves to the end, so that under
/// `max_bytes` every partition gets its turn (Kafka's
/// `ImplicitLinkedHashCollection` reordering).
#[derive(Clone, Debug, Default)]
pub(crate) struct OrderedPartitions {
    slots: HashMap<PartitionKey, u64>,
    order: BTreeMap<u64, (PartitionKey, CachedPartition)>,
    next: u64,
}

impl OrderedPartitions {
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub(crate) fn get_mut(&mut self, key: &PartitionKey) -> Option<&mut CachedPartition> {
        let slot = self.slots.get(key)?;
        self.order.get_mut(slot).map(|(_, c)| c)
    }

    /// Add at the end, or replace in place when present.
    pub(crate) fn insert(&mut self, key: PartitionKey, cached: CachedPartition) {
        if let Some(c) = self.get_mut(&key) {
            *c = cached;
            return;
        }
        let slot = self.next;
        self.next += 1;
        self.slots.insert(key.clone(), slot);
        self.order.insert(slot, (key, cached));
    }

    pub(crate) fn remove(&mut self, key: &PartitionKey) -> bool {
        match self.slots.remove(key) {
            Some(slot) => self.order.remove(&slot).is_some(),
            None => false,
        }
    }

    pub(crate) fn move_to_end(&mut self, key: &PartitionKey) {
        if let Some(slot) = self.slots.get_mut(key) {
            if let Some(entry) = self.order.remove(slot) {
                *slot = self.next;
                self.order.insert(self.next, entry);
                self.next += 1;
            }
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&PartitionKey, &CachedPartition)> {
        self.order.values().map(|(k, c)| (k, c))
    }
}
