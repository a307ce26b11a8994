//! The in-sync replica set as a leader holds it, with at most one change
//! in flight (KIP-497), and the rules built on it: the high watermark,
//! which followers to drop, which to admit. Pure.
//!
//! While a change is in flight the leader keeps using the last committed
//! ISR for admission (acks=all, min.insync.replicas), and the *maximal* ISR
//! — committed plus a pending addition, never minus a pending removal —
//! for the high watermark, so an unconfirmed shrink can never let the high
//! watermark pass a follower that etcd still counts in sync (KAFKA-8836).

use std::collections::BTreeMap;

use super::replica::FollowerState;

/// The ISR and its pending change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IsrState {
    Committed { isr: Vec<i32> },
    PendingExpand { isr: Vec<i32>, added: i32 },
    PendingShrink { isr: Vec<i32>, removed: Vec<i32> },
}

impl IsrState {
    /// The last committed ISR.
    pub(crate) fn isr(&self) -> &[i32] {
        match self {
            IsrState::Committed { isr }
            | IsrState::PendingExpand { isr, .. }
            | IsrState::PendingShrink { isr, .. } => isr,
        }
    }

    /// The ISR the high watermark waits for.
    pub(crate) fn maximal(&self) -> Vec<i32> {
        match self {
            IsrState::PendingExpand { isr, added } => {
                let mut m = isr.clone();
                if !m.contains(added) {
                    m.push(*added);
                }
                m
            }
            other => other.isr().to_vec(),
        }
    }

    pub(crate) fn is_pending(&self) -> bool {
        !matches!(self, IsrState::Committed { .. })
    }

    /// The ISR this state asks etcd for.
    pub(crate) fn proposed(&self) -> Vec<i32> {
        match self {
            IsrState::Committed { isr } => isr.clone(),
            IsrState::PendingExpand { .. } => self.maximal(),
            IsrState::PendingShrink { isr, removed } => isr
                .iter()
                .copied()
                .filter(|r| !removed.contains(r))
                .collect(),
        }
    }
}

/// Kafka's effective `min.insync.replicas`: never more than the replicas.
pub(crate) fn effective_min_isr(min_insync_replicas: i32, replicas: usize) -> usize {
    (min_insync_replicas.max(1) as usize).min(replicas.max(1))
}

/// The high watermark the leader may move to, or `None` when it must not
/// move: the committed ISR is below the effective minimum (KAFKA-15583).
///
/// The candidate is the leader's log end, lowered to the log end of every
/// follower in the maximal ISR, and of every caught-up follower `eligible`
/// to join (so a joining follower can reach the high watermark and join,
/// instead of chasing it). A follower whose log end is unknown pins the
/// candidate at -1. `followers` holds every replica but the leader.
pub(crate) fn high_watermark(
    leader_log_end: i64,
    followers: &BTreeMap<i32, FollowerState>,
    isr: &IsrState,
    min_isr: usize,
    eligible: impl Fn(i32) -> bool,
    now_ms: i64,
    lag_ms: i64,
) -> Option<i64> {
    if isr.isr().len() < min_isr {
        return None;
    }
    let maximal = isr.maximal();
    let mut candidate = leader_log_end;
    for (id, f) in followers {
        if f.log_end >= candidate {
            continue;
        }
        if maximal.contains(id)
            || (f.log_end >= 0 && f.is_caught_up(leader_log_end, now_ms, lag_ms) && eligible(*id))
        {
            candidate = f.log_end;
        }
    }
    Some(candidate)
}

/// ISR members (other than `leader`) that are no longer caught up: what a
/// shrink removes.
pub(crate) fn out_of_sync(
    leader: i32,
    isr: &[i32],
    followers: &BTreeMap<i32, FollowerState>,
    leader_log_end: i64,
    now_ms: i64,
    lag_ms: i64,
) -> Vec<i32> {
    isr.iter()
        .copied()
        .filter(|id| *id != leader)
        .filter(|id| {
            followers
                .get(id)
                .is_none_or(|f| !f.is_caught_up(leader_log_end, now_ms, lag_ms))
        })
        .collect()
}

/// Whether a follower outside the ISR may join it: it holds everything up
/// to the high watermark *and* everything from before this leader's epoch
/// began (KAFKA-7128: otherwise it could be elected without records that
/// lie between the two), and it is eligible (registered, same broker epoch).
pub(crate) fn may_join(
    follower: &FollowerState,
    high_watermark: i64,
    epoch_start_offset: i64,
    eligible: bool,
) -> bool {
    eligible && follower.log_end >= high_watermark && follower.log_end >= epoch_start_offset
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: i64 = 30_000;

    fn follower(log_end: i64, caught_up_ms: i64) -> FollowerState {
        FollowerState {
            log_end,
            log_start: 0,
            last_fetch_leader_log_end: log_end,
            last_fetch_time_ms: caught_up_ms,
            last_caught_up_ms: caught_up_ms,
            broker_epoch: 1,
        }
    }

    fn committed(isr: &[i32]) -> IsrState {
        IsrState::Committed { isr: isr.to_vec() }
    }

    #[test]
    fn high_watermark_is_the_smallest_isr_log_end() {
        let followers = BTreeMap::from([(2, follower(7, 0)), (3, follower(9, 0))]);
        let hw = high_watermark(10, &followers, &committed(&[1, 2, 3]), 1, |_| true, 0, LAG);
        assert_eq!(hw, Some(7));
    }

    #[test]
    fn a_follower_outside_the_isr_is_not_waited_for_unless_it_is_about_to_join() {
        // 3 fell out and is far behind: not waited for.
        let followers = BTreeMap::from([(2, follower(10, 0)), (3, follower(4, 0))]);
        let now = 100_000;
        let hw = high_watermark(10, &followers, &committed(&[1, 2]), 1, |_| true, now, LAG);
        assert_eq!(hw, Some(10));
        // 3 is caught up (within the lag time) and eligible: waited for.
        let followers = BTreeMap::from([(2, follower(10, now)), (3, follower(8, now))]);
        let hw = high_watermark(10, &followers, &committed(&[1, 2]), 1, |_| true, now, LAG);
        assert_eq!(hw, Some(8));
        // ... unless it is not eligible (KAFKA-15021).
        let hw = high_watermark(
            10,
            &followers,
            &committed(&[1, 2]),
            1,
            |id| id != 3,
            now,
            LAG,
        );
        assert_eq!(hw, Some(10));
    }

    #[test]
    fn an_unconfirmed_shrink_does_not_let_the_high_watermark_pass_the_removed_follower() {
        // KAFKA-8836 / KIP-497: 3 is being removed, but etcd has not agreed.
        let followers = BTreeMap::from([(2, follower(10, 0)), (3, follower(5, 0))]);
        let pending = IsrState::PendingShrink {
            isr: vec![1, 2, 3],
            removed: vec![3],
        };
        let hw = high_watermark(10, &followers, &pending, 1, |_| true, 100_000, LAG);
        assert_eq!(hw, Some(5));
        assert_eq!(pending.proposed(), vec![1, 2]);
        assert_eq!(pending.isr(), &[1, 2, 3]);
    }

    #[test]
    fn a_pending_expansion_is_waited_for_at_once() {
        let followers = BTreeMap::from([(2, follower(10, 0)), (3, follower(6, 0))]);
        let pending = IsrState::PendingExpand {
            isr: vec![1, 2],
            added: 3,
        };
        let hw = high_watermark(10, &followers, &pending, 1, |_| false, 100_000, LAG);
        assert_eq!(hw, Some(6));
        assert_eq!(pending.maximal(), vec![1, 2, 3]);
        assert_eq!(pending.isr(), &[1, 2]);
    }

    #[test]
    fn below_min_isr_the_high_watermark_does_not_move() {
        // KAFKA-15583: even acks=1 data stays invisible.
        let followers = BTreeMap::from([(2, follower(3, 0))]);
        let hw = high_watermark(10, &followers, &committed(&[1]), 2, |_| true, 100_000, LAG);
        assert_eq!(hw, None);
        assert_eq!(effective_min_isr(2, 3), 2);
        assert_eq!(effective_min_isr(3, 1), 1);
        assert_eq!(effective_min_isr(0, 3), 1);
    }

    #[test]
    fn an_isr_member_that_never_fetched_pins_the_high_watermark() {
        let followers = BTreeMap::from([(2, FollowerState::unknown(true, 0))]);
        let hw = high_watermark(10, &followers, &committed(&[1, 2]), 1, |_| true, 0, LAG);
        assert_eq!(hw, Some(-1));
    }

    #[test]
    fn shrink_removes_members_that_are_not_caught_up() {
        let now = 100_000;
        let followers = BTreeMap::from([(2, follower(10, now)), (3, follower(4, now - LAG - 1))]);
        assert_eq!(
            out_of_sync(1, &[1, 2, 3, 4], &followers, 10, now, LAG),
            vec![3, 4]
        );
    }

    #[test]
    fn joining_needs_the_current_epoch_data() {
        // KAFKA-7128: log end 8 reaches the high watermark 8 but not the
        // start of the leader's epoch at 9.
        let f = follower(8, 0);
        assert!(!may_join(&f, 8, 9, true));
        assert!(may_join(&follower(9, 0), 8, 9, true));
        assert!(!may_join(&follower(9, 0), 8, 9, false));
    }
}
