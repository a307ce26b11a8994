//! The rebalance itself: starting one (`prepareRebalance`), completing the
//! join phase (`onCompleteJoin`), removing members, propagating
//! assignments, and persisting the group's metadata record.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::api::{JoinResult, SyncResult};
use super::classic::{GroupState, JoinTimer, SyncTimer};
use super::manager::Ops;
use super::records::GroupMetadataKey;
use super::store::StoreRecord;

type E = ResponseError;

impl Ops<'_> {
    pub(crate) fn maybe_prepare_rebalance(&mut self) {
        if self.group.can_rebalance() {
            self.prepare_rebalance();
        }
    }

    /// Kafka `prepareRebalance`.
    pub(super) fn prepare_rebalance(&mut self) {
        if self.group.is(GroupState::CompletingRebalance) {
            self.reset_and_propagate_assignment_error(E::RebalanceInProgress);
        }
        self.group.pending_sync.clear();
        self.group.sync_timer = None;
        let rebalance_timeout = self.group.rebalance_timeout_ms();
        self.group.join_timer = Some(if self.group.is(GroupState::Empty) {
            let delay = i64::from(self.config.initial_rebalance_delay_ms);
            JoinTimer::Initial {
                deadline: self.now + delay,
                delay_ms: delay,
                remaining_ms: (rebalance_timeout - delay).max(0),
            }
        } else {
            JoinTimer::Regular {
                deadline: self.now + rebalance_timeout,
            }
        });
        self.group
            .transition_to(GroupState::PreparingRebalance, self.now);
        tracing::info!(
            group = %self.group.id,
            generation = self.group.generation_id,
            partition = self.partition,
            "preparing to rebalance"
        );
        self.try_complete_join();
    }

    /// Kafka `tryCompleteJoin` for a regular join phase.
    pub(crate) fn try_complete_join(&mut self) {
        if self.group.is(GroupState::PreparingRebalance)
            && matches!(self.group.join_timer, Some(JoinTimer::Regular { .. }))
            && self.group.has_all_members_joined()
        {
            self.complete_join();
        }
    }

    /// Kafka `onCompleteJoin`.
    pub(super) fn complete_join(&mut self) {
        self.group.join_timer = None;
        let gone: Vec<String> = self
            .group
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && !m.is_static())
            .map(|m| m.member_id.clone())
            .collect();
        for id in gone {
            self.remove_and_answer(&id);
        }
        if self.group.is(GroupState::Dead) {
            return;
        }
        if !self.maybe_elect_new_joined_leader() && !self.group.members.is_empty() {
            // Only static members that have not rejoined remain: wait another round.
            let deadline = self.now + self.group.rebalance_timeout_ms();
            self.group.join_timer = Some(JoinTimer::Regular { deadline });
            return;
        }
        self.group.init_next_generation(self.now);
        if self.group.is(GroupState::Empty) {
            if let Err(error) = self.store_group(&HashMap::new()) {
                tracing::warn!(group = %self.group.id, error = %strata_log::ErrorChain(&error), "failed to write empty group metadata");
            }
            return;
        }
        tracing::info!(
            group = %self.group.id,
            generation = self.group.generation_id,
            members = self.group.members.len(),
            "stabilized group"
        );
        let ids: Vec<String> = self.group.members.keys().cloned().collect();
        for id in ids {
            let result = self.join_result(&id, self.group.is_leader(&id), false);
            self.invoke_join(&id, result);
            self.schedule_heartbeat(&id);
            if let Some(m) = self.group.members.get_mut(&id) {
                m.is_new = false;
            }
            self.group.pending_sync.insert(id);
        }
        self.group.sync_timer = Some(SyncTimer {
            deadline: self.now + self.group.rebalance_timeout_ms(),
            generation: self.group.generation_id,
        });
    }

    pub(super) fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.group.leader_id.clone() else {
            return false;
        };
        if self
            .group
            .members
            .get(&leader)
            .is_some_and(|m| m.awaiting_join.is_some())
        {
            return true;
        }
        match self
            .group
            .members
            .values()
            .find(|m| m.awaiting_join.is_some())
        {
            Some(m) => {
                self.group.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Remove a member, answering whatever it is parked on.
    pub(super) fn remove_and_answer(&mut self, member_id: &str) {
        self.invoke_join(member_id, JoinResult::error("", E::UnknownMemberId));
        self.invoke_sync(member_id, SyncResult::error(E::UnknownMemberId));
        self.group.remove(member_id);
    }

    /// Kafka `removeMemberAndUpdateGroup`.
    pub(super) fn remove_member_and_update_group(&mut self, member_id: &str) {
        self.remove_and_answer(member_id);
        match self.group.state() {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::Stable | GroupState::CompletingRebalance => self.maybe_prepare_rebalance(),
            GroupState::PreparingRebalance => self.try_complete_join(),
        }
    }

    pub(super) fn remove_pending_member_and_update_group(&mut self, member_id: &str) {
        self.group.remove(member_id);
        if self.group.is(GroupState::PreparingRebalance) {
            self.try_complete_join();
        }
    }

    pub(super) fn reset_and_propagate_assignment_error(&mut self, error: ResponseError) {
        for m in self.group.members.values_mut() {
            m.assignment = Bytes::new();
        }
        self.propagate_assignment(Some(error));
    }

    /// Answer every parked SyncGroup with its assignment (or `error`).
    pub(super) fn propagate_assignment(&mut self, error: Option<ResponseError>) {
        let ids: Vec<String> = self.group.members.keys().cloned().collect();
        for id in ids {
            let result = match error {
                None => SyncResult {
                    error: None,
                    protocol_type: self.group.protocol_type.clone(),
                    protocol_name: self.group.protocol_name.clone(),
                    assignment: self.group.members[&id].assignment.clone(),
                },
                Some(e) => SyncResult::error(e),
            };
            if self.invoke_sync(&id, result) {
                self.schedule_heartbeat(&id);
            }
        }
    }

    /// Write the group's metadata record (Kafka `storeGroup`).
    pub(crate) fn store_group(
        &mut self,
        assignment: &HashMap<String, Bytes>,
    ) -> Result<(), ResponseError> {
        let key = GroupMetadataKey {
            group: self.group.id.clone(),
        };
        let value = self.group.metadata_value(assignment);
        let record = StoreRecord {
            key: key.encode(),
            value: Some(value.encode()),
        };
        match self.store.append(self.partition, &[record], self.now) {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(group = %self.group.id, error = %strata_log::ErrorChain(&e), "storing group metadata failed");
                Err(e.group_error())
            }
        }
    }
}
