//! Incremental fetch sessions (KIP-227), as Kafka's `FetchSession.scala`
//! keeps them: the broker remembers, per session, the partitions a fetcher
//! reads and what it last told it about each, so a fetcher lists only the
//! partitions whose request changed and the broker answers only the
//! partitions whose data or offsets changed.
//!
//! - [`FetchSessionCache::new_context`] classifies a request (Kafka
//!   `FetchManager.newContext`) by `(session_id, session_epoch)`:
//!   epoch -1 is sessionless (and closes session `id` if set), epoch 0 a
//!   full request that closes `id` if set and opens a new session once
//!   answered, epoch n > 0 an incremental request in session `id` expecting
//!   epoch n (else INVALID_FETCH_SESSION_EPOCH; unknown id:
//!   FETCH_SESSION_ID_NOT_FOUND; v13+ and pre-v13 requests cannot share a
//!   session: FETCH_SESSION_TOPIC_ID_ERROR).
//! - The cache holds at most `max.incremental.fetch.session.cache.slots`
//!   sessions (0: none, every request sessionless). A new session may evict
//!   one as Kafka's `FetchSessionCacheShard.tryEvict`: the least recently
//!   used if idle longer than the eviction time (Kafka's fixed 120 s,
//!   `strata.fetch.session.eviction.ms` here), else the least valuable
//!   evictable one — ordered by (privileged, partitions, id) — if the new
//!   one is worth more. A consumer session becomes evictable by others
//!   once older than the eviction time; follower (privileged) sessions by
//!   consumers likewise, by followers at once.
//! - Kafka shards the cache 8 ways to spread lock contention (and divides
//!   the slots among the shards); Strata keeps one cache behind one mutex,
//!   so the slots are exactly the configured number.
//! - Strata's own replica fetchers stay sessionless (epoch -1).
//!
//! # Layout
//! - `partitions`: the cached partition, the ordered partition map and the
//!   rule that decides whether an incremental response lists a partition.
//! - this file: sessions, the cache with its eviction, request contexts.
//!
//! # Locks
//! [`FetchSessions`] is one mutex around the cache, a leaf lock: taken
//! briefly, never across I/O or `.await`, never while another lock is held.

mod partitions;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Instant;

pub(crate) use partitions::{
    must_respond, CachedPartition, OrderedPartitions, PartitionAnswer, PartitionKey,
    PartitionRequest, TopicKey,
};

/// No session (requests and responses).
pub(crate) const INVALID_SESSION_ID: i32 = 0;
/// A full request that opens a session.
pub(crate) const INITIAL_EPOCH: i32 = 0;
/// A sessionless request, or one that closes its session.
pub(crate) const FINAL_EPOCH: i32 = -1;

/// The epoch after `epoch` (Kafka `FetchMetadata.nextEpoch`): wraps to 1.
pub(crate) fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// Why a request cannot use its session (the response's top-level error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionError {
    /// FETCH_SESSION_ID_NOT_FOUND (70).
    IdNotFound,
    /// INVALID_FETCH_SESSION_EPOCH (71).
    InvalidEpoch,
    /// FETCH_SESSION_TOPIC_ID_ERROR (106).
    TopicIdError,
}

/// A partition a request lists.
#[derive(Clone, Debug)]
pub(crate) struct RequestedPartition {
    pub key: PartitionKey,
    pub request: PartitionRequest,
}

/// How to answer a request (Kafka's `FetchContext` variants).
#[derive(Debug)]
pub(crate) enum Context {
    /// Read the request's partitions; answer with session id 0.
    Sessionless,
    /// Read the request's partitions; then try to open a session on them.
    Full { uses_topic_ids: bool },
    /// Read the session's partitions (in session order, parameters from the
    /// cache); answer only what changed.
    Incremental {
        session_id: i32,
        /// The request's epoch (the session now expects the next one).
        epoch: i32,
        partitions: Vec<(PartitionKey, CachedPartition)>,
    },
    /// Answer the error with no partitions.
    Error(SessionError),
}

/// One session (Kafka `FetchSession`).
#[derive(Debug)]
struct Session {
    privileged: bool,
    uses_topic_ids: bool,
    creation_ms: i64,
    last_used_ms: i64,
    /// The epoch the next incremental request must carry.
    epoch: i32,
    partitions: OrderedPartitions,
    /// The size the eviction sets were keyed by (`None`: not keyed yet).
    cached_size: Option<usize>,
}

/// The eviction order: least valuable first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EvictableKey {
    privileged: bool,
    size: usize,
    id: i32,
}

/// What the metrics show of the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CacheStats {
    pub sessions: usize,
    pub partitions: usize,
    pub evictions: u64,
}

/// The session cache (Kafka `FetchSessionCacheShard`), bounded by
/// `max_entries`. Time comes in as `now_ms` (any monotonic millisecond
/// clock), so every decision is testable without waiting.
#[derive(Debug)]
pub(crate) struct FetchSessionCache {
    max_entries: usize,
    eviction_ms: i64,
    sessions: HashMap<i32, Session>,
    /// (last used, id), oldest first.
    last_used: BTreeSet<(i64, i32)>,
    /// Sessions any new session may evict (older than `eviction_ms`).
    evictable_by_all: BTreeSet<EvictableKey>,
    /// Sessions a new privileged session may evict (every unprivileged
    /// one, and privileged ones older than `eviction_ms`).
    evictable_by_privileged: BTreeSet<EvictableKey>,
    num_partitions: usize,
    evictions: u64,
}

impl FetchSessionCache {
    pub(crate) fn new(max_entries: usize, eviction_ms: i64) -> Self {
        FetchSessionCache {
            max_entries,
            eviction_ms,
            sessions: HashMap::new(),
            last_used: BTreeSet::new(),
            evictable_by_all: BTreeSet::new(),
            evictable_by_privileged: BTreeSet::new(),
            num_partitions: 0,
            evictions: 0,
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            sessions: self.sessions.len(),
            partitions: self.num_partitions,
            evictions: self.evictions,
        }
    }

    /// Is there a session `id`?
    #[cfg(test)]
    pub(crate) fn contains(&self, id: i32) -> bool {
        self.sessions.contains_key(&id)
    }

    /// A random positive id no session has (Kafka `newSessionId`).
    fn new_session_id(&self) -> i32 {
        use rand::Rng;
        let mut rng = rand::thread_rng();
        loop {
            let id = rng.gen_range(1..i32::MAX);
            if !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    fn evictable_key(id: i32, s: &Session) -> Option<EvictableKey> {
        s.cached_size.map(|size| EvictableKey {
            privileged: s.privileged,
            size,
            id,
        })
    }

    /// Classify a request (Kafka `FetchManager.newContext`) and, for an
    /// incremental one, apply its changes to the session: listed partitions
    /// are added or take the new parameters, forgotten ones leave, the
    /// epoch advances. A session left empty is closed (sessionless answer).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_context(
        &mut self,
        now_ms: i64,
        version: i16,
        session_id: i32,
        epoch: i32,
        fetch: &[RequestedPartition],
        forgotten: &[PartitionKey],
    ) -> Context {
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != INVALID_SESSION_ID {
                self.remove(session_id);
            }
            return if epoch == FINAL_EPOCH {
                Context::Sessionless
            } else {
                Context::Full {
                    uses_topic_ids: version >= 13,
                }
            };
        }
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return Context::Error(SessionError::IdNotFound);
        };
        if session.epoch != epoch {
            return Context::Error(SessionError::InvalidEpoch);
        }
        if session.uses_topic_ids != (version >= 13) {
            return Context::Error(SessionError::TopicIdError);
        }
        for p in fetch {
            match session.partitions.get_mut(&p.key) {
                Some(cached) => cached.request = p.request,
                None => session
                    .partitions
                    .insert(p.key.clone(), CachedPartition::new(p.request)),
            }
        }
        for key in forgotten {
            session.partitions.remove(key);
        }
        if session.partitions.is_empty() {
            self.remove(session_id);
            return Context::Sessionless;
        }
        session.epoch = next_epoch(session.epoch);
        let partitions = session
            .partitions
            .iter()
            .map(|(k, c)| (k.clone(), c.clone()))
            .collect();
        self.touch(session_id, now_ms);
        Context::Incremental {
            session_id,
            epoch,
            partitions,
        }
    }

    /// After answering a full request: open a session on its partitions if
    /// there is room or one can be evicted (Kafka `maybeCreateSession`).
    /// The new session's id, or [`INVALID_SESSION_ID`].
    pub(crate) fn maybe_create_session(
        &mut self,
        now_ms: i64,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: OrderedPartitions,
    ) -> i32 {
        let size = partitions.len();
        if self.sessions.len() >= self.max_entries
            && !self.try_evict(
                privileged,
                EvictableKey {
                    privileged,
                    size,
                    id: 0,
                },
                now_ms,
            )
        {
            return INVALID_SESSION_ID;
        }
        let id = self.new_session_id();
        self.sessions.insert(
            id,
            Session {
                privileged,
                uses_topic_ids,
                creation_ms: now_ms,
                last_used_ms: now_ms,
                epoch: next_epoch(INITIAL_EPOCH),
                partitions,
                cached_size: None,
            },
        );
        self.last_used.insert((now_ms, id));
        self.touch(id, now_ms);
        id
    }

    /// Make room for a new session worth `key` (Kafka `tryEvict`): evict
    /// the least recently used session if it is stale, else the least
    /// valuable evictable one if it is worth less than `key`.
    fn try_evict(&mut self, privileged: bool, key: EvictableKey, now_ms: i64) -> bool {
        let Some(&(last_used, oldest)) = self.last_used.first() else {
            return false;
        };
        if now_ms - last_used > self.eviction_ms {
            self.remove(oldest);
            self.evictions += 1;
            return true;
        }
        let set = if privileged {
            &self.evictable_by_privileged
        } else {
            &self.evictable_by_all
        };
        match set.first().copied() {
            Some(victim) if key >= victim => {
                self.remove(victim.id);
                self.evictions += 1;
                true
            }
            _ => false,
        }
    }

    /// Close session `id`; whether it existed.
    pub(crate) fn remove(&mut self, id: i32) -> bool {
        let Some(s) = self.sessions.remove(&id) else {
            return false;
        };
        self.last_used.remove(&(s.last_used_ms, id));
        if let Some(k) = Self::evictable_key(id, &s) {
            self.evictable_by_all.remove(&k);
            self.evictable_by_privileged.remove(&k);
            self.num_partitions -= k.size;
        }
        true
    }

    /// Mark session `id` used at `now_ms` and re-key it by its size (Kafka
    /// `touch`).
    fn touch(&mut self, id: i32, now_ms: i64) {
        let eviction_ms = self.eviction_ms;
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        self.last_used.remove(&(s.last_used_ms, id));
        s.last_used_ms = now_ms;
        self.last_used.insert((now_ms, id));
        if let Some(old) = Self::evictable_key(id, s) {
            self.evictable_by_all.remove(&old);
            self.evictable_by_privileged.remove(&old);
            self.num_partitions -= old.size;
        }
        s.cached_size = Some(s.partitions.len());
        let key = Self::evictable_key(id, s).expect("size just set");
        let old_enough = now_ms - s.creation_ms > eviction_ms;
        if !s.privileged || old_enough {
            self.evictable_by_privileged.insert(key);
        }
        if old_enough {
            self.evictable_by_all.insert(key);
        }
        self.num_partitions += key.size;
    }

    /// Which of an incremental request's answers the response lists (Kafka
    /// `IncrementalFetchContext.updateAndGenerateResponseData`). With
    /// `update`, the session takes the listed answers' offsets and moves
    /// partitions that returned records to its end; without, nothing
    /// changes (sizing a response that may be throttled).
    ///
    /// # Errors
    /// [`SessionError::InvalidEpoch`] when another request of the session
    /// came in between (a duplicate request).
    pub(crate) fn select(
        &mut self,
        session_id: i32,
        request_epoch: i32,
        answers: &[(PartitionKey, PartitionAnswer)],
        update: bool,
    ) -> Result<Vec<bool>, SessionError> {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            // Closed meanwhile (a full request, or evicted): answer it all;
            // the fetcher's next incremental request learns the id is gone.
            return Ok(vec![true; answers.len()]);
        };
        if session.epoch != next_epoch(request_epoch) {
            return Err(SessionError::InvalidEpoch);
        }
        Ok(answers
            .iter()
            .map(|(key, answer)| {
                let Some(cached) = session.partitions.get_mut(key) else {
                    return true;
                };
                let respond = must_respond(cached, answer, update);
                if update && respond && answer.records_len > 0 {
                    session.partitions.move_to_end(key);
                }
                respond
            })
            .collect())
    }
}

/// The broker's session cache and its clock.
#[derive(Debug)]
pub(crate) struct FetchSessions {
    cache: Mutex<FetchSessionCache>,
    start: Instant,
}

impl FetchSessions {
    pub(crate) fn new(max_entries: usize, eviction_ms: i64) -> Self {
        FetchSessions {
            cache: Mutex::new(FetchSessionCache::new(max_entries, eviction_ms)),
            start: Instant::now(),
        }
    }

    /// Milliseconds on the cache's monotonic clock.
    pub(crate) fn now_ms(&self) -> i64 {
        i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// The cache, locked (a leaf lock: see the module doc).
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, FetchSessionCache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}
