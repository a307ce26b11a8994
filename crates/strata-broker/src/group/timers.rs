//! Kafka's delayed operations as deadlines: pending-member expiry,
//! session expiry, the join phase (`DelayedJoin` / `InitialDelayedJoin`)
//! and the sync phase (`DelayedSync`), fired in deadline order by
//! [`Ops::poll_timers`]; and unloading a group.

use kafka_protocol::error::ResponseError;

use super::api::{JoinResult, Reply, SyncResult};
use super::classic::{Group, GroupState, JoinTimer, SyncTimer};
use super::manager::Ops;

type E = ResponseError;

impl Ops<'_> {
    /// Fire the group's due deadlines, earliest first.
    pub(crate) fn poll_timers(&mut self) {
        // Each firing removes its deadline or moves it past `now`, except a
        // zero initial delay, which fires at most twice; bound the loop anyway.
        for _ in 0..10_000 {
            let now = self.now;
            let g = &*self.group;
            let pending = g
                .pending_members
                .iter()
                .find(|(_, d)| **d <= now)
                .map(|(id, _)| id.clone());
            if let Some(id) = pending {
                self.remove_pending_member_and_update_group(&id);
                continue;
            }
            let expired = g
                .members
                .values()
                .find(|m| m.heartbeat_deadline.is_some_and(|d| d <= now))
                .map(|m| m.member_id.clone());
            if let Some(id) = expired {
                let m = self.group.members.get_mut(&id).expect("found above");
                m.heartbeat_deadline = None;
                if !m.has_satisfied_heartbeat() {
                    tracing::info!(group = %self.group.id, member = %id, "session expired, removing member");
                    self.remove_member_and_update_group(&id);
                }
                continue;
            }
            if let Some(timer) = g.join_timer.filter(|t| t.deadline() <= now) {
                self.expire_join(timer);
                continue;
            }
            if let Some(timer) = g.sync_timer.filter(|t| t.deadline <= now) {
                self.group.sync_timer = None;
                self.expire_sync(timer);
                continue;
            }
            return;
        }
    }

    fn expire_join(&mut self, timer: JoinTimer) {
        match timer {
            JoinTimer::Initial {
                delay_ms,
                remaining_ms,
                ..
            } if self.group.new_member_added && remaining_ms != 0 => {
                self.group.new_member_added = false;
                let configured = i64::from(self.config.initial_rebalance_delay_ms);
                let delay = configured.min(remaining_ms);
                self.group.join_timer = Some(JoinTimer::Initial {
                    deadline: self.now + delay,
                    delay_ms: delay,
                    remaining_ms: (remaining_ms - delay_ms).max(0),
                });
            }
            _ => self.complete_join(),
        }
    }

    /// Kafka `onExpirePendingSync`.
    fn expire_sync(&mut self, timer: SyncTimer) {
        if timer.generation != self.group.generation_id
            || !matches!(
                self.group.state(),
                GroupState::CompletingRebalance | GroupState::Stable
            )
            || self.group.pending_sync.is_empty()
        {
            return;
        }
        let late: Vec<String> = self.group.pending_sync.iter().cloned().collect();
        for id in &late {
            self.remove_and_answer(id);
        }
        tracing::info!(group = %self.group.id, members = ?late, "removed members that did not sync");
        self.prepare_rebalance();
    }
}

/// Kafka `onGroupUnloaded`: answer everything parked with NOT_COORDINATOR.
pub(crate) fn unload(group: &mut Group, replies: &mut Vec<Reply>) {
    for m in group.members.values_mut() {
        if let Some(t) = m.awaiting_join.take() {
            replies.push(Reply::Join(
                t,
                JoinResult::error(&m.member_id, E::NotCoordinator),
            ));
        }
        if let Some(t) = m.awaiting_sync.take() {
            replies.push(Reply::Sync(t, SyncResult::error(E::NotCoordinator)));
        }
    }
    if !group.is(GroupState::Dead) {
        group.transition_to(GroupState::Dead, group.state_timestamp.unwrap_or(0));
    }
}
