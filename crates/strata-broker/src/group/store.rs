//! Where the coordinator writes `__consumer_offsets` records: a small trait
//! so the state machine is tested against memory and runs against the log.
//!
//! An append is synchronous and complete when it returns (the runtime's
//! implementation appends to the partition log and advances its high
//! watermark; single node, so acks=all is the leader's append).

use thiserror::Error;

/// One record to write: a key and a value, or `None` for a tombstone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoreRecord {
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

/// Why an append to `__consumer_offsets` failed. The codes JoinGroup,
/// SyncGroup and OffsetCommit answer for it are decided in `error_code`.
#[derive(Debug, Error)]
pub(crate) enum StoreError {
    /// The topic or partition does not exist (yet) or could not be created.
    #[error("__consumer_offsets partition {partition} is not available")]
    Unavailable {
        partition: i32,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The log directory failed (I/O error, offline).
    #[error("__consumer_offsets partition {partition}: storage failure")]
    Storage {
        partition: i32,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The producer was fenced (a newer epoch wrote to the partition).
    #[error("__consumer_offsets partition {partition}: producer fenced")]
    Fenced { partition: i32 },
    /// The batch exceeds the partition's size limits.
    #[error("__consumer_offsets partition {partition}: batch of {size} bytes is too large")]
    TooLarge { partition: i32, size: usize },
}

/// Appends records to one partition of `__consumer_offsets`.
pub(crate) trait OffsetsStore {
    /// Append `records` as one batch with timestamp `now_ms`; returns the
    /// offset of the first record.
    ///
    /// # Errors
    /// [`StoreError`] when the partition is missing or its log fails.
    fn append(
        &mut self,
        partition: i32,
        records: &[StoreRecord],
        now_ms: i64,
    ) -> Result<i64, StoreError>;

    /// Append `records` as one transactional batch of `producer` (id,
    /// epoch), Kafka's COORDINATOR origin; returns the first offset.
    ///
    /// # Errors
    /// As [`Self::append`], plus the producer-state refusals (a fenced epoch).
    fn append_txn(
        &mut self,
        partition: i32,
        records: &[StoreRecord],
        producer: (i64, i16),
        now_ms: i64,
    ) -> Result<i64, StoreError>;
}

/// An in-memory store for tests: keeps every record, can be told to fail.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct MemoryStore {
    /// (partition, offset, record) in append order.
    pub records: Vec<(i32, i64, StoreRecord)>,
    pub fail_next: Option<fn(i32) -> StoreError>,
    next_offset: i64,
}

#[cfg(test)]
impl OffsetsStore for MemoryStore {
    fn append(
        &mut self,
        partition: i32,
        records: &[StoreRecord],
        _now_ms: i64,
    ) -> Result<i64, StoreError> {
        if let Some(fail) = self.fail_next.take() {
            return Err(fail(partition));
        }
        let base = self.next_offset;
        for r in records {
            self.records.push((partition, self.next_offset, r.clone()));
            self.next_offset += 1;
        }
        Ok(base)
    }

    fn append_txn(
        &mut self,
        partition: i32,
        records: &[StoreRecord],
        _producer: (i64, i16),
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        self.append(partition, records, now_ms)
    }
}
