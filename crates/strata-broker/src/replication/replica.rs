//! A leader's view of one follower (Kafka's `Replica` state): what the
//! follower holds, learned from its Fetch requests, and when it was last
//! caught up. Pure: the caller passes the clock.

/// One follower as its leader sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FollowerState {
    /// The follower's log end offset (its last fetch offset); -1 unknown.
    pub log_end: i64,
    /// The follower's log start offset; -1 unknown.
    pub log_start: i64,
    /// The leader's log end when the previous Fetch arrived.
    pub last_fetch_leader_log_end: i64,
    pub last_fetch_time_ms: i64,
    /// The last time the follower was known to hold everything the leader
    /// had (Kafka's `lastCaughtUpTimeMs`, KAFKA-4485).
    pub last_caught_up_ms: i64,
    /// The broker epoch the follower sent (`ReplicaState.ReplicaEpoch`), -1
    /// when it sent none.
    pub broker_epoch: i64,
}

impl FollowerState {
    /// Unknown: a follower that has not fetched since this broker became
    /// leader. `in_isr` followers count as caught up now, so the ISR is not
    /// shrunk before they had a chance to fetch.
    pub(crate) fn unknown(in_isr: bool, now_ms: i64) -> FollowerState {
        FollowerState {
            log_end: -1,
            log_start: -1,
            last_fetch_leader_log_end: -1,
            last_fetch_time_ms: 0,
            last_caught_up_ms: if in_isr { now_ms } else { 0 },
            broker_epoch: -1,
        }
    }

    /// Record a Fetch at `now_ms` from offset `fetch_offset` while the
    /// leader's log end was `leader_log_end`.
    ///
    /// Caught up: a fetch at or past the leader's end is caught up now; a
    /// fetch that reached where the leader was at the previous fetch was
    /// caught up at the previous fetch's time.
    pub(crate) fn record_fetch(
        &mut self,
        fetch_offset: i64,
        log_start: i64,
        leader_log_end: i64,
        broker_epoch: i64,
        now_ms: i64,
    ) {
        if fetch_offset >= leader_log_end {
            self.last_caught_up_ms = self.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= self.last_fetch_leader_log_end {
            self.last_caught_up_ms = self.last_caught_up_ms.max(self.last_fetch_time_ms);
        }
        self.log_end = fetch_offset;
        self.log_start = log_start;
        self.last_fetch_leader_log_end = self.last_fetch_leader_log_end.max(leader_log_end);
        self.last_fetch_time_ms = now_ms;
        self.broker_epoch = broker_epoch;
    }

    /// In sync: holds the leader's whole log, or was caught up within
    /// `lag_ms`.
    pub(crate) fn is_caught_up(&self, leader_log_end: i64, now_ms: i64, lag_ms: i64) -> bool {
        (self.log_end >= 0 && self.log_end == leader_log_end)
            || now_ms - self.last_caught_up_ms <= lag_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: i64 = 30_000;

    #[test]
    fn a_fetch_at_the_leader_end_is_caught_up_now() {
        let mut f = FollowerState::unknown(false, 0);
        f.record_fetch(10, 0, 10, 5, 1_000);
        assert_eq!(f.last_caught_up_ms, 1_000);
        assert!(f.is_caught_up(10, 100_000, LAG), "same log end");
        assert!(!f.is_caught_up(11, 100_000, LAG));
        assert!(f.is_caught_up(11, 31_000, LAG));
    }

    #[test]
    fn a_steady_follower_one_batch_behind_stays_in_sync() {
        // KAFKA-4485: the leader grows by 10 between fetches; each fetch
        // reaches where the leader was at the previous one.
        let mut f = FollowerState::unknown(true, 0);
        let mut leader_end = 10;
        let mut fetch = 0;
        for t in 1..200 {
            let now = t * 1_000;
            f.record_fetch(fetch, 0, leader_end, 1, now);
            fetch = leader_end;
            leader_end += 10;
            assert!(f.is_caught_up(leader_end, now + 500, LAG), "at {now}");
        }
    }

    #[test]
    fn a_follower_that_falls_behind_leaves_after_the_lag_time() {
        let mut f = FollowerState::unknown(true, 0);
        f.record_fetch(10, 0, 10, 1, 1_000);
        // The leader moves on; the follower keeps fetching from 10.
        for t in 2..40 {
            f.record_fetch(10, 0, 100, 1, t * 1_000);
        }
        assert!(!f.is_caught_up(100, 40_000, LAG));
        assert!(f.is_caught_up(100, 31_000, LAG));
    }

    #[test]
    fn unknown_followers_outside_the_isr_are_not_caught_up() {
        let f = FollowerState::unknown(false, 50_000);
        assert!(!f.is_caught_up(0, 50_000, LAG) || f.log_end == 0);
        assert!(!f.is_caught_up(10, 50_000, LAG));
        let g = FollowerState::unknown(true, 50_000);
        assert!(g.is_caught_up(10, 50_000, LAG));
        assert!(!g.is_caught_up(10, 80_001, LAG));
    }
}
