//! One partition this broker holds a replica of: the controller's state
//! it last applied (leader, leader epoch, ISR, the etcd revision that is
//! Kafka's partition epoch) and, while it leads, what each follower holds.
//!
//! The rules are the pure functions of `replica`, `isr` and `divergence`;
//! this type keeps their state under one lock and applies their answers to
//! the log (the high watermark) and to etcd (ISR proposals, written by the
//! manager).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use strata_log::{LeaderEpoch, Log, LogError, Offset, TopicPartition};

use super::isr::{self, IsrState};
use super::replica::FollowerState;
use crate::api_error::ApiError;
use crate::cluster::PartitionRecord;

/// A change of the ISR this leader asks etcd for.
#[derive(Clone, Debug)]
pub(crate) struct IsrProposal {
    pub tp: TopicPartition,
    /// The revision of the partition's key the leader holds.
    pub expected: i64,
    pub record: PartitionRecord,
    /// A follower joining, with the broker epoch it fetched with.
    pub joining: Option<(i32, i64)>,
}

/// What applying a controller state did to this replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// An older or equal revision: nothing changed.
    Unchanged,
    /// This broker now leads (a new leader epoch).
    BecameLeader,
    /// This broker now follows `leader` (-1: no leader) in `epoch`.
    BecameFollower { leader: i32, epoch: i32 },
    /// Same leader and epoch; the ISR or replicas changed.
    Updated,
}

/// What recording a follower's Fetch changed.
#[derive(Debug, Default)]
pub(crate) struct FetchRecorded {
    pub proposal: Option<IsrProposal>,
    pub high_watermark_moved: bool,
}

/// Who may join the ISR or hold the high watermark back: `(id, epoch)`
/// → registered and live with that broker epoch (-1: not checked), and
/// the epoch etcd has for a broker.
pub(crate) trait Eligibility {
    fn eligible(&self, broker: i32, broker_epoch: i64) -> bool;
    fn registered_epoch(&self, broker: i32) -> Option<i64>;
}

#[derive(Clone, Debug)]
struct State {
    leader: i32,
    leader_epoch: i32,
    /// The etcd revision of the state applied last (partition epoch).
    revision: i64,
    record: Option<PartitionRecord>,
    isr: IsrState,
    followers: BTreeMap<i32, FollowerState>,
    /// The log end when this broker took the current leader epoch.
    epoch_start: i64,
}

/// A replica of one partition on this broker.
#[derive(Debug)]
pub(crate) struct Partition {
    pub tp: TopicPartition,
    pub log: Arc<Log>,
    me: i32,
    state: Mutex<State>,
    /// Kafka's `leaderIsrUpdateLock`: appends as leader hold it shared,
    /// [`Partition::apply`] exclusively, so no append made in a leader
    /// epoch lands after this replica left that epoch (a paused leader
    /// resuming with a produce in hand would otherwise append old-epoch
    /// batches into a follower's log, past the divergence checks).
    role: RwLock<()>,
}

impl Partition {
    pub(crate) fn new(tp: TopicPartition, log: Arc<Log>, me: i32) -> Partition {
        Partition {
            tp,
            log,
            me,
            state: Mutex::new(State {
                leader: -1,
                leader_epoch: -1,
                revision: 0,
                record: None,
                isr: IsrState::Committed { isr: Vec::new() },
                followers: BTreeMap::new(),
                epoch_start: -1,
            }),
            role: RwLock::new(()),
        }
    }

    /// The same replica state on another log: the partition's new log after
    /// a log-dir move (AlterReplicaLogDirs); also the leader, epoch and
    /// topic id a follower fetches with, if it follows.
    ///
    /// The new log took the high watermark when the swap began; followers
    /// may have raised the old one's while the swap fsynced and renamed.
    /// The new log starts from the old one's last (both hold the same
    /// records), so a high watermark already answered never steps back.
    pub(crate) fn with_log(&self, log: Arc<Log>) -> (Partition, Option<(i32, i32, uuid::Uuid)>) {
        log.raise_high_watermark(self.log.high_watermark());
        let st = self.lock().clone();
        let follow = st
            .record
            .as_ref()
            .filter(|_| st.leader != self.me && st.leader >= 0)
            .map(|r| (st.leader, st.leader_epoch, r.topic_id));
        let p = Partition {
            tp: self.tp.clone(),
            log,
            me: self.me,
            state: Mutex::new(st),
            // Appends still holding the old replica's lock write to the old
            // log, which the move closed: they fail and are retried here.
            role: RwLock::new(()),
        };
        (p, follow)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Apply the controller's state read at `revision` (Kafka's
    /// becomeLeader / becomeFollower). A new leader epoch on the leader
    /// starts that epoch at the log end in the epoch cache before any
    /// follower can ask about it.
    ///
    /// # Errors
    /// Writing the leader-epoch cache failed (the dir goes offline).
    pub(crate) fn apply(
        &self,
        record: &PartitionRecord,
        revision: i64,
        now_ms: i64,
    ) -> Result<Role, LogError> {
        let _role = self.role.write().unwrap_or_else(|e| e.into_inner());
        let mut st = self.lock();
        if revision <= st.revision {
            return Ok(Role::Unchanged);
        }
        let new_epoch = record.leader_epoch != st.leader_epoch;
        let was_leader = st.leader == self.me;
        let role = if record.leader == self.me {
            if new_epoch || !was_leader {
                self.log
                    .assign_epoch_at_end(LeaderEpoch(record.leader_epoch))?;
                st.epoch_start = self.log.log_end_offset().0;
                let mut followers = BTreeMap::new();
                for &r in record.replicas.iter().filter(|r| **r != self.me) {
                    let in_isr = record.isr.contains(&r);
                    let f = match st.followers.get(&r) {
                        Some(old) if was_leader => FollowerState {
                            last_fetch_leader_log_end: st.epoch_start,
                            last_fetch_time_ms: if in_isr { now_ms } else { 0 },
                            last_caught_up_ms: if in_isr { now_ms } else { 0 },
                            ..*old
                        },
                        _ => FollowerState::unknown(in_isr, now_ms),
                    };
                    followers.insert(r, f);
                }
                st.followers = followers;
                Role::BecameLeader
            } else {
                let keep: Vec<i32> = record
                    .replicas
                    .iter()
                    .copied()
                    .filter(|r| *r != self.me)
                    .collect();
                st.followers.retain(|id, _| keep.contains(id));
                for r in keep {
                    st.followers
                        .entry(r)
                        .or_insert_with(|| FollowerState::unknown(false, now_ms));
                }
                Role::Updated
            }
        } else {
            st.followers.clear();
            st.epoch_start = -1;
            if new_epoch || was_leader || record.leader != st.leader {
                Role::BecameFollower {
                    leader: record.leader,
                    epoch: record.leader_epoch,
                }
            } else {
                Role::Updated
            }
        };
        st.isr = IsrState::Committed {
            isr: record.isr.clone(),
        };
        st.leader = record.leader;
        st.leader_epoch = record.leader_epoch;
        st.revision = revision;
        st.record = Some(record.clone());
        Ok(role)
    }

    /// Run `append` as the leader, in the current leader epoch, with role
    /// changes held off until it returns (Kafka `appendRecordsToLeader`).
    /// `None`: this replica does not lead (any more).
    pub(crate) fn leader_append<T>(
        &self,
        append: impl FnOnce(LeaderEpoch) -> Result<T, LogError>,
    ) -> Option<(i32, Result<T, LogError>)> {
        let _role = self.role.read().unwrap_or_else(|e| e.into_inner());
        let epoch = {
            let st = self.lock();
            if st.leader != self.me {
                return None;
            }
            st.leader_epoch
        };
        Some((epoch, append(LeaderEpoch(epoch))))
    }

    /// This broker holds no replica of the partition any more (Kafka's
    /// StopReplica, e.g. a reassignment moved it away): it neither leads
    /// nor follows. Appends are refused and acks=all waits end at once
    /// with NOT_LEADER_OR_FOLLOWER, so the producer moves to the new
    /// leader instead of waiting out its request timeout here, where the
    /// high watermark no longer moves.
    pub(crate) fn stop(&self) {
        let _role = self.role.write().unwrap_or_else(|e| e.into_inner());
        let mut st = self.lock();
        st.leader = -1;
        st.followers.clear();
        st.epoch_start = -1;
    }

    pub(crate) fn is_leader(&self) -> bool {
        self.lock().leader == self.me
    }

    pub(crate) fn leader_epoch(&self) -> i32 {
        self.lock().leader_epoch
    }

    /// `(leader, leader epoch)` as last applied.
    pub(crate) fn leader_and_epoch(&self) -> (i32, i32) {
        let st = self.lock();
        (st.leader, st.leader_epoch)
    }

    /// Whether `replica` is one of this partition's replicas.
    pub(crate) fn has_replica(&self, replica: i32) -> bool {
        self.lock()
            .record
            .as_ref()
            .is_some_and(|r| r.replicas.contains(&replica))
    }

    /// Leader only: the followers in the committed ISR and what each holds
    /// (the preferred-read-replica candidates, KIP-392); `None` when this
    /// broker does not lead.
    pub(crate) fn isr_followers(&self) -> Option<Vec<(i32, FollowerState)>> {
        let st = self.lock();
        (st.leader == self.me).then(|| {
            st.followers
                .iter()
                .filter(|(id, _)| st.isr.isr().contains(id))
                .map(|(id, f)| (*id, *f))
                .collect()
        })
    }

    /// The committed ISR and the maximal one.
    #[cfg(test)]
    pub(crate) fn isr(&self) -> (Vec<i32>, Vec<i32>) {
        let st = self.lock();
        (st.isr.isr().to_vec(), st.isr.maximal())
    }

    fn min_isr(&self, st: &State) -> usize {
        let replicas = st.record.as_ref().map_or(1, |r| r.replicas.len());
        isr::effective_min_isr(self.log.config().min_insync_replicas, replicas)
    }

    /// acks=all admission: the committed ISR must reach the effective
    /// `min.insync.replicas`, or nothing is appended.
    ///
    /// # Errors
    /// [`ApiError::NotEnoughReplicas`].
    pub(crate) fn check_enough_replicas(&self) -> Result<(), ApiError> {
        let st = self.lock();
        let required = self.min_isr(&st);
        let isr = st.isr.isr().len();
        if isr < required {
            return Err(ApiError::NotEnoughReplicas {
                isr: isr as i32,
                required: required as i32,
            });
        }
        Ok(())
    }

    /// Advance the high watermark if the ISR allows (leader only). True
    /// when it moved.
    pub(crate) fn maybe_advance_high_watermark(
        &self,
        who: &dyn Eligibility,
        now_ms: i64,
        lag_ms: i64,
    ) -> bool {
        let st = self.lock();
        self.advance_locked(&st, who, now_ms, lag_ms)
    }

    fn advance_locked(&self, st: &State, who: &dyn Eligibility, now_ms: i64, lag_ms: i64) -> bool {
        if st.leader != self.me {
            return false;
        }
        let min_isr = self.min_isr(st);
        let leo = self.log.log_end_offset().0;
        let candidate = isr::high_watermark(
            leo,
            &st.followers,
            &st.isr,
            min_isr,
            |id| {
                st.followers
                    .get(&id)
                    .is_some_and(|f| who.eligible(id, f.broker_epoch))
            },
            now_ms,
            lag_ms,
        );
        match candidate {
            Some(hw) if hw > self.log.high_watermark().0 => {
                self.log.update_high_watermark(Offset(hw));
                true
            }
            _ => false,
        }
    }

    /// A follower's Fetch reached this leader from `fetch_offset`: record
    /// what it holds, maybe admit it to the ISR, maybe move the high
    /// watermark.
    ///
    /// # Errors
    /// [`ApiError::NotLeaderOrFollower`] when this broker no longer leads,
    /// or the Fetch comes from an earlier incarnation of the follower
    /// (KIP-903); [`ApiError::UnknownLeaderEpoch`] when the follower is not
    /// a replica here (this broker's metadata may be behind).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_follower_fetch(
        &self,
        replica: i32,
        broker_epoch: i64,
        fetch_offset: i64,
        log_start: i64,
        who: &dyn Eligibility,
        now_ms: i64,
        lag_ms: i64,
    ) -> Result<FetchRecorded, ApiError> {
        let mut st = self.lock();
        if st.leader != self.me {
            return Err(ApiError::NotLeaderOrFollower);
        }
        if broker_epoch >= 0
            && who
                .registered_epoch(replica)
                .is_some_and(|e| e > broker_epoch)
        {
            return Err(ApiError::NotLeaderOrFollower);
        }
        let leo = self.log.log_end_offset().0;
        let leader_epoch = st.leader_epoch;
        let Some(f) = st.followers.get_mut(&replica) else {
            return Err(ApiError::UnknownLeaderEpoch {
                requested: leader_epoch,
                current: leader_epoch,
            });
        };
        f.record_fetch(fetch_offset, log_start, leo, broker_epoch, now_ms);
        let follower = *f;
        let hw = self.log.high_watermark().0;
        let mut out = FetchRecorded::default();
        if !st.isr.is_pending()
            && !st.isr.isr().contains(&replica)
            && isr::may_join(
                &follower,
                hw,
                st.epoch_start,
                who.eligible(replica, broker_epoch),
            )
        {
            let committed = st.isr.isr().to_vec();
            st.isr = IsrState::PendingExpand {
                isr: committed,
                added: replica,
            };
            let epoch = if broker_epoch >= 0 {
                broker_epoch
            } else {
                who.registered_epoch(replica).unwrap_or(-1)
            };
            out.proposal = self.proposal(&st, Some((replica, epoch)));
        }
        out.high_watermark_moved = self.advance_locked(&st, who, now_ms, lag_ms);
        Ok(out)
    }

    /// Leader only: drop the followers that are no longer caught up.
    pub(crate) fn maybe_shrink_isr(&self, now_ms: i64, lag_ms: i64) -> Option<IsrProposal> {
        let mut st = self.lock();
        if st.leader != self.me || st.isr.is_pending() {
            return None;
        }
        let leo = self.log.log_end_offset().0;
        let removed = isr::out_of_sync(self.me, st.isr.isr(), &st.followers, leo, now_ms, lag_ms);
        if removed.is_empty() {
            return None;
        }
        tracing::info!(tp = %self.tp, ?removed, isr = ?st.isr.isr(), "shrinking the ISR: followers not caught up");
        let committed = st.isr.isr().to_vec();
        st.isr = IsrState::PendingShrink {
            isr: committed,
            removed,
        };
        self.proposal(&st, None)
    }

    fn proposal(&self, st: &State, joining: Option<(i32, i64)>) -> Option<IsrProposal> {
        let mut record = st.record.clone()?;
        record.isr = st.isr.proposed();
        record.partition_epoch += 1;
        Some(IsrProposal {
            tp: self.tp.clone(),
            expected: st.revision,
            record,
            joining,
        })
    }

    /// The answer to `proposal`: `Some(revision)` when etcd took it,
    /// `None` when it did not (the last committed ISR stands). Ignored when
    /// a newer state was applied meanwhile. True when the ISR changed.
    pub(crate) fn isr_written(&self, proposal: &IsrProposal, revision: Option<i64>) -> bool {
        let mut st = self.lock();
        if st.revision != proposal.expected || !st.isr.is_pending() {
            return false;
        }
        match revision {
            Some(rev) => {
                tracing::info!(tp = %self.tp, isr = ?proposal.record.isr, partition_epoch = proposal.record.partition_epoch, "ISR changed");
                st.isr = IsrState::Committed {
                    isr: proposal.record.isr.clone(),
                };
                st.revision = rev;
                st.record = Some(proposal.record.clone());
                true
            }
            None => {
                let committed = st.isr.isr().to_vec();
                st.isr = IsrState::Committed { isr: committed };
                false
            }
        }
    }

    /// acks=all: how the wait for `required` (the offset after the last
    /// appended record, appended in `epoch`) ends, or `None` to keep
    /// waiting.
    pub(crate) fn produce_outcome(
        &self,
        required: i64,
        epoch: i32,
    ) -> Option<Result<(), ApiError>> {
        let st = self.lock();
        if st.leader != self.me || st.leader_epoch != epoch {
            return Some(Err(ApiError::NotLeaderOrFollower));
        }
        if self.log.high_watermark().0 >= required {
            let min_isr = self.min_isr(&st);
            return Some(if st.isr.maximal().len() >= min_isr {
                Ok(())
            } else {
                Err(ApiError::NotEnoughReplicasAfterAppend {
                    required: min_isr as i32,
                })
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use strata_log::batch::BatchBuilder;
    use strata_log::{LogConfig, LogManager, LogManagerConfig, SystemClock, Timestamp};

    use super::*;

    struct Everyone;
    impl Eligibility for Everyone {
        fn eligible(&self, _: i32, _: i64) -> bool {
            true
        }
        fn registered_epoch(&self, _: i32) -> Option<i64> {
            Some(5)
        }
    }

    const LAG: i64 = 30_000;

    fn record(leader: i32, epoch: i32, isr: &[i32]) -> PartitionRecord {
        PartitionRecord {
            topic_id: uuid::Uuid::from_u128(7),
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            leader,
            leader_epoch: epoch,
            partition_epoch: epoch,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            leader_broker_epoch: 0,
        }
    }

    fn partition(dir: &std::path::Path, min_isr: i32) -> Partition {
        let manager = LogManager::open(
            LogManagerConfig::new(vec![dir.to_path_buf()]),
            SystemClock::shared(),
        )
        .unwrap();
        let config = LogConfig {
            min_insync_replicas: min_isr,
            ..LogConfig::default()
        };
        let tp = TopicPartition::new("t", 0);
        let log = manager.get_or_create_log(&tp, config, None).unwrap();
        Partition::new(tp, log, 1)
    }

    fn append(p: &Partition, n: usize) {
        for _ in 0..n {
            let mut builder = BatchBuilder::new(Offset(0));
            builder.append(Timestamp(1), None, Some(b"v"), &[]);
            let mut batch = builder.build();
            p.log
                .append_as_leader(&mut batch, LeaderEpoch(p.leader_epoch()))
                .unwrap();
        }
    }

    #[test]
    fn a_swapped_log_starts_from_the_high_watermark_the_old_one_reached() {
        let (old_dir, new_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let old = partition(old_dir.path(), 1);
        let new = partition(new_dir.path(), 1);
        for p in [&old, &new] {
            p.apply(&record(1, 0, &[1, 2, 3]), 10, 0).unwrap();
            append(p, 4);
        }
        // The swap read 1; the followers then took the old log to 3.
        new.log.update_high_watermark(Offset(1));
        old.log.update_high_watermark(Offset(3));
        let (swapped, follow) = old.with_log(new.log.clone());
        assert_eq!(swapped.log.high_watermark(), Offset(3));
        assert!(follow.is_none(), "the leader follows no one");
        // Never lowered: a new log already further keeps its own.
        new.log.update_high_watermark(Offset(4));
        let (swapped, _) = old.with_log(new.log.clone());
        assert_eq!(swapped.log.high_watermark(), Offset(4));
    }

    /// The paused-leader race the fault suite found: a produce checked as
    /// leader in epoch 1 must not append once the replica follows epoch 2.
    #[test]
    fn a_leader_append_finishes_before_the_replica_becomes_a_follower() {
        let dir = tempfile::tempdir().unwrap();
        let p = Arc::new(partition(dir.path(), 1));
        p.apply(&record(1, 1, &[1, 2, 3]), 10, 0).unwrap();
        let (inside_tx, inside_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let appender = {
            let p = p.clone();
            std::thread::spawn(move || {
                p.leader_append(|epoch| {
                    inside_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    let mut builder = BatchBuilder::new(Offset(0));
                    builder.append(Timestamp(1), None, Some(b"v"), &[]);
                    p.log.append_as_leader(&mut builder.build(), epoch)
                })
            })
        };
        inside_rx.recv().unwrap();
        let follower = {
            let p = p.clone();
            std::thread::spawn(move || p.apply(&record(2, 2, &[2, 3]), 11, 0).unwrap())
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !follower.is_finished(),
            "the role change waits for the append in flight"
        );
        go_tx.send(()).unwrap();
        let (epoch, appended) = appender.join().unwrap().expect("led when it started");
        assert_eq!(epoch, 1);
        assert_eq!(appended.unwrap().first_offset, Offset(0));
        assert!(matches!(
            follower.join().unwrap(),
            Role::BecameFollower {
                leader: 2,
                epoch: 2
            }
        ));
        assert!(
            p.leader_append(|_| Ok(())).is_none(),
            "no append as leader once following"
        );
        assert_eq!(p.log.log_end_offset(), Offset(1));
    }

    #[test]
    fn the_high_watermark_follows_the_slowest_isr_member() {
        let dir = tempfile::tempdir().unwrap();
        let p = partition(dir.path(), 1);
        assert_eq!(
            p.apply(&record(1, 0, &[1, 2, 3]), 10, 0).unwrap(),
            Role::BecameLeader
        );
        append(&p, 4);
        assert!(
            !p.maybe_advance_high_watermark(&Everyone, 0, LAG),
            "followers unknown"
        );
        p.record_follower_fetch(2, 5, 4, 0, &Everyone, 1, LAG)
            .unwrap();
        let r = p
            .record_follower_fetch(3, 5, 2, 0, &Everyone, 1, LAG)
            .unwrap();
        assert!(r.high_watermark_moved);
        assert_eq!(p.log.high_watermark(), Offset(2));
        assert!(p.produce_outcome(4, 0).is_none());
        p.record_follower_fetch(3, 5, 4, 0, &Everyone, 2, LAG)
            .unwrap();
        assert_eq!(p.log.high_watermark(), Offset(4));
        assert!(matches!(p.produce_outcome(4, 0), Some(Ok(()))));
        assert!(matches!(
            p.produce_outcome(4, 3),
            Some(Err(ApiError::NotLeaderOrFollower))
        ));
    }

    #[test]
    fn a_stopped_replica_ends_acks_all_waits_and_refuses_appends() {
        let dir = tempfile::tempdir().unwrap();
        let p = partition(dir.path(), 1);
        p.apply(&record(1, 0, &[1, 2, 3]), 10, 0).unwrap();
        append(&p, 4);
        // The followers went to the new leader: the high watermark here
        // never reaches 4 again.
        assert!(p.produce_outcome(4, 0).is_none());
        p.stop();
        assert!(matches!(
            p.produce_outcome(4, 0),
            Some(Err(ApiError::NotLeaderOrFollower))
        ));
        assert!(p.leader_append(|_| Ok(())).is_none());
        assert!(!p.is_leader());
    }

    #[test]
    fn shrink_then_expand_go_through_proposals() {
        let dir = tempfile::tempdir().unwrap();
        let p = partition(dir.path(), 2);
        p.apply(&record(1, 0, &[1, 2, 3]), 10, 0).unwrap();
        append(&p, 3);
        p.record_follower_fetch(2, 5, 3, 0, &Everyone, 1_000, LAG)
            .unwrap();
        // 3 never fetches: out after the lag time.
        assert!(p.maybe_shrink_isr(20_000, LAG).is_none());
        let shrink = p.maybe_shrink_isr(40_000, LAG).expect("3 is out of sync");
        assert_eq!(shrink.record.isr, vec![1, 2]);
        assert_eq!(shrink.expected, 10);
        // Pending: the removed follower still holds the high watermark.
        assert_eq!(p.log.high_watermark(), Offset(0));
        assert!(p.isr_written(&shrink, Some(11)));
        assert!(p.maybe_advance_high_watermark(&Everyone, 40_000, LAG));
        assert_eq!(p.log.high_watermark(), Offset(3));
        // 3 comes back and catches up: proposed for the ISR.
        let r = p
            .record_follower_fetch(3, 5, 3, 0, &Everyone, 41_000, LAG)
            .unwrap();
        let expand = r.proposal.expect("3 caught up");
        assert_eq!(expand.record.isr, vec![1, 2, 3]);
        assert_eq!(expand.joining, Some((3, 5)));
        assert_eq!(expand.expected, 11);
        // A failed write reverts to the committed ISR.
        assert!(!p.isr_written(&expand, None));
        assert_eq!(p.isr().0, vec![1, 2]);
    }

    #[test]
    fn below_min_isr_acks_all_is_refused_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let p = partition(dir.path(), 2);
        p.apply(&record(1, 0, &[1]), 10, 0).unwrap();
        assert!(matches!(
            p.check_enough_replicas(),
            Err(ApiError::NotEnoughReplicas {
                isr: 1,
                required: 2
            })
        ));
        append(&p, 1);
        assert!(
            !p.maybe_advance_high_watermark(&Everyone, 0, LAG),
            "KAFKA-15583"
        );
    }

    #[test]
    fn a_stale_incarnation_of_a_follower_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = partition(dir.path(), 1);
        p.apply(&record(1, 0, &[1, 2, 3]), 10, 0).unwrap();
        assert!(matches!(
            p.record_follower_fetch(2, 4, 0, 0, &Everyone, 1, LAG),
            Err(ApiError::NotLeaderOrFollower)
        ));
    }

    #[test]
    fn older_states_are_ignored_and_leadership_moves() {
        let dir = tempfile::tempdir().unwrap();
        let p = partition(dir.path(), 1);
        p.apply(&record(1, 0, &[1, 2, 3]), 10, 0).unwrap();
        assert_eq!(
            p.apply(&record(2, 1, &[2, 3]), 9, 0).unwrap(),
            Role::Unchanged
        );
        assert_eq!(
            p.apply(&record(2, 1, &[2, 3]), 12, 0).unwrap(),
            Role::BecameFollower {
                leader: 2,
                epoch: 1
            }
        );
        assert!(!p.is_leader());
        assert_eq!(
            p.apply(&record(2, 1, &[1, 2, 3]), 13, 0).unwrap(),
            Role::Updated
        );
    }
}
