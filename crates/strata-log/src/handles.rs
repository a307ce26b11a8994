//! The bound on open segment files (`strata.log.max.open.files`): one
//! [`HandleCache`] per broker counts every `.log` descriptor and every index
//! (descriptor plus mapping) the segments hold, and when the count passes the
//! limit closes those of the least recently used segments.
//!
//! Kafka keeps a descriptor for every segment and maps the indexes of every
//! segment it touched, so 10,000 partitions need a `ulimit -n` above 10,000
//! and a `vm.max_map_count` above 20,000. Strata opens a segment's files on
//! demand ([`crate::Segment`] reopens through the file-system seam) and lets
//! this cache close them again.
//!
//! # What "close" means
//!
//! A segment hands its `.log` out as an `Arc<File>` (a fetch keeps it for
//! `sendfile`, an append for its write). Closing drops only the segment's own
//! `Arc`: the descriptor really closes when the last user drops it, so a
//! handle is never closed under its user. Eviction first takes idle handles
//! (nobody else holds the `Arc`) and takes a handle in use only when no idle
//! one is left; the count here is the segments' handles, so a descriptor
//! still held by a slow reader after eviction is the "slack" above the limit.
//!
//! Indexes have no users outside their segment's lock: eviction closes them
//! only when it gets that lock without waiting (`try_lock`), trimming a
//! preallocated index to its entries first so that reopening finds exactly
//! them (the segment grows it again for appends).
//!
//! # Locks
//!
//! `members` guards the registry of live segments and is a leaf for
//! blocking: eviction copies the members it wants out of it, releases it,
//! and only then `try_lock`s their segments. A segment may call
//! [`HandleCache::opened`] while holding its own locks; eviction skips a
//! segment whose locks are taken, so no lock order can deadlock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Default of `strata.log.max.open.files`: well below 10,000 partitions
/// and the usual `ulimit -n` of 65,536.
pub const DEFAULT_MAX_OPEN_FILES: usize = 4096;

/// The smallest accepted `strata.log.max.open.files`: an append and a read
/// of one segment need its `.log`, `.index` and `.timeindex` open at once.
pub const MIN_MAX_OPEN_FILES: usize = 8;

/// Something holding open segment files that the cache may ask to close.
pub(crate) trait FileHolder: Send + Sync {
    /// The cache clock when the holder was last used.
    fn last_used(&self) -> u64;
    /// How many handles it holds now.
    fn open_handles(&self) -> usize;
    /// Close what can be closed without waiting; with `in_use` also a
    /// `.log` someone still reads (only the holder's reference is dropped).
    /// Returns how many handles were closed (already subtracted from the
    /// cache through [`HandleCache::closed`]).
    fn try_close(&self, in_use: bool) -> usize;
}

/// The process's bound on open segment files. See the module docs.
pub struct HandleCache {
    limit: usize,
    /// Handles the segments hold now.
    open: AtomicUsize,
    /// Highest value of `open` seen (tests, metrics).
    peak: AtomicUsize,
    /// Logical time for least-recently-used order.
    clock: AtomicU64,
    /// Handles closed by eviction.
    evicted: AtomicU64,
    /// Handles opened (first opens and reopens).
    opens: AtomicU64,
    members: Mutex<Members>,
    /// Held by the one thread evicting; others skip eviction meanwhile.
    evicting: Mutex<()>,
}

#[derive(Default)]
struct Members {
    next_id: u64,
    by_id: HashMap<u64, Weak<dyn FileHolder>>,
}

impl std::fmt::Debug for HandleCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleCache")
            .field("limit", &self.limit)
            .field("open", &self.open())
            .finish()
    }
}

/// A snapshot of the cache's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandleStats {
    pub limit: usize,
    pub open: usize,
    pub peak: usize,
    pub opens: u64,
    pub evicted: u64,
}

impl HandleCache {
    /// A cache closing handles past `limit` (at least
    /// [`MIN_MAX_OPEN_FILES`]; smaller values are raised to it).
    pub fn new(limit: usize) -> Arc<HandleCache> {
        Arc::new(HandleCache {
            limit: limit.max(MIN_MAX_OPEN_FILES),
            open: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            clock: AtomicU64::new(1),
            evicted: AtomicU64::new(0),
            opens: AtomicU64::new(0),
            members: Mutex::new(Members::default()),
            evicting: Mutex::new(()),
        })
    }

    /// The process-wide cache with [`DEFAULT_MAX_OPEN_FILES`], used where
    /// no cache is injected (tools, tests that do not care).
    pub fn shared_default() -> Arc<HandleCache> {
        static DEFAULT: OnceLock<Arc<HandleCache>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| HandleCache::new(DEFAULT_MAX_OPEN_FILES))
            .clone()
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Handles open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> HandleStats {
        HandleStats {
            limit: self.limit,
            open: self.open(),
            peak: self.peak.load(Ordering::Relaxed),
            opens: self.opens.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
        }
    }

    /// A fresh stamp for "used now".
    pub(crate) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Register a holder; the id is for [`HandleCache::forget`].
    pub(crate) fn register(&self, holder: Weak<dyn FileHolder>) -> u64 {
        let mut m = self.lock_members();
        let id = m.next_id;
        m.next_id += 1;
        m.by_id.insert(id, holder);
        id
    }

    /// A holder is going away (its handles were already counted closed).
    pub(crate) fn forget(&self, id: u64) {
        self.lock_members().by_id.remove(&id);
    }

    /// `n` handles were opened: count them and evict past the limit. May
    /// be called with the opener's own locks held (see the module docs).
    pub(crate) fn opened(&self, n: usize) {
        self.opens.fetch_add(n as u64, Ordering::Relaxed);
        let now = self.open.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
        if now > self.limit {
            self.evict();
        }
    }

    /// `n` handles were closed.
    pub(crate) fn closed(&self, n: usize) {
        if n > 0 {
            self.open.fetch_sub(n, Ordering::Relaxed);
        }
    }

    fn lock_members(&self) -> std::sync::MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Close the least recently used handles until the count is an eighth
    /// below the limit (so eviction runs once per many opens), idle ones
    /// first.
    fn evict(&self) {
        let Ok(_one) = self.evicting.try_lock() else {
            return;
        };
        let target = self.limit - self.limit / 8;
        // Copy out, release the registry, then work (module docs, Locks).
        let mut holders: Vec<(u64, Arc<dyn FileHolder>)> = {
            let m = self.lock_members();
            m.by_id
                .values()
                .filter_map(Weak::upgrade)
                .filter(|h| h.open_handles() > 0)
                .map(|h| (h.last_used(), h))
                .collect()
        };
        holders.sort_unstable_by_key(|(t, _)| *t);
        for in_use in [false, true] {
            for (_, h) in &holders {
                if self.open() <= target {
                    break;
                }
                let n = h.try_close(in_use);
                self.evicted.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
        // Dropping the copies may drop a segment (its Drop calls `forget`):
        // the registry is not held here.
        drop(holders);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    struct Fake {
        cache: Arc<HandleCache>,
        used: AtomicU64,
        open: AtomicBool,
        busy: bool,
    }

    impl FileHolder for Fake {
        fn last_used(&self) -> u64 {
            self.used.load(Ordering::Relaxed)
        }
        fn open_handles(&self) -> usize {
            usize::from(self.open.load(Ordering::Relaxed))
        }
        fn try_close(&self, in_use: bool) -> usize {
            if self.busy && !in_use {
                return 0;
            }
            let n = usize::from(self.open.swap(false, Ordering::Relaxed));
            self.cache.closed(n);
            n
        }
    }

    fn fake(cache: &Arc<HandleCache>, busy: bool) -> Arc<Fake> {
        let f = Arc::new(Fake {
            cache: cache.clone(),
            used: AtomicU64::new(cache.tick()),
            open: AtomicBool::new(true),
            busy,
        });
        let w: Weak<dyn FileHolder> = Arc::downgrade(&(f.clone() as Arc<dyn FileHolder>));
        cache.register(w);
        cache.opened(1);
        f
    }

    #[test]
    fn evicts_least_recently_used_idle_first_and_stays_under_limit() {
        let cache = HandleCache::new(8);
        let busy = fake(&cache, true);
        let all: Vec<_> = (0..8).map(|_| fake(&cache, false)).collect();
        // The ninth open went over the limit: down to 7, the oldest idle
        // ones closed, the older busy one kept.
        assert_eq!(cache.open(), 7);
        assert!(busy.open.load(Ordering::Relaxed));
        assert!(!all[0].open.load(Ordering::Relaxed));
        assert!(all[7].open.load(Ordering::Relaxed));
        assert!(cache.stats().peak <= 9);
    }

    #[test]
    fn takes_handles_in_use_when_nothing_idle_is_left() {
        let cache = HandleCache::new(8);
        let all: Vec<_> = (0..9).map(|_| fake(&cache, true)).collect();
        assert_eq!(cache.open(), 7);
        assert!(!all[0].open.load(Ordering::Relaxed));
    }

    #[test]
    fn limit_is_at_least_the_minimum() {
        assert_eq!(HandleCache::new(1).limit(), MIN_MAX_OPEN_FILES);
    }
}
