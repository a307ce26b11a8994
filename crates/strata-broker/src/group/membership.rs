//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the rebalance they drive,
//! as Kafka 3.9's classic `GroupCoordinator` does it, with the same error
//! answers in the same places.
//!
//! Kafka's delayed operations are deadlines here: the join phase
//! (`JoinTimer`), the sync phase (`SyncTimer`), each member's session and
//! each pending member's expiry. [`Ops::poll_timers`] fires the due ones.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::api::{
    HeartbeatRequest, JoinMember, JoinRequest, JoinResult, LeaveMember, LeaveResult, Reply,
    SyncRequest, SyncResult,
};
use super::classic::GroupState;
use super::manager::{GroupIdRule, GroupManager, Ops};
use super::member::{Member, Protocol, Ticket, NEW_MEMBER_JOIN_TIMEOUT_MS};
use super::store::OffsetsStore;

type E = ResponseError;

impl GroupManager {
    /// JoinGroup. The answer arrives as a [`Reply::Join`] for `ticket`, now
    /// or when the rebalance completes.
    pub(crate) fn join(
        &mut self,
        req: JoinRequest,
        ticket: Ticket,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) {
        if let Some(error) = self.validate(&req.group_id, GroupIdRule::NonEmpty) {
            self.push_join_error(ticket, &req.member_id, error);
            return;
        }
        if req.session_timeout_ms < self.config.min_session_timeout_ms
            || req.session_timeout_ms > self.config.max_session_timeout_ms
        {
            self.push_join_error(ticket, &req.member_id, E::InvalidSessionTimeout);
            return;
        }
        if let Some(result) = self.classic_join_mixed(&req, now, store) {
            self.push_reply(Reply::Join(ticket, result));
            return;
        }
        if let Some(error) = self.classic_join_on_consumer_group(&req.group_id, now, store) {
            self.push_join_error(ticket, &req.member_id, error);
            return;
        }
        let is_unknown = req.member_id.is_empty();
        if is_unknown {
            self.get_or_create(&req.group_id, now);
        } else if self.group(&req.group_id).is_none() {
            self.push_join_error(ticket, &req.member_id, E::UnknownMemberId);
            return;
        }
        let group_id = req.group_id.clone();
        self.with_group(&group_id, now, store, |ops| {
            if !ops.accept_joining_member(&req.member_id) {
                let member_id = req.member_id.clone();
                ops.group.remove(&member_id);
                ops.reply_join(ticket, JoinResult::error("", E::GroupMaxSizeReached));
            } else if is_unknown {
                ops.new_member_join(req, ticket);
            } else {
                ops.current_member_join(req, ticket);
            }
            if ops.group.is(GroupState::PreparingRebalance) {
                ops.try_complete_join();
            }
        });
    }

    fn push_join_error(&mut self, ticket: Ticket, member_id: &str, error: ResponseError) {
        self.push_reply(Reply::Join(ticket, JoinResult::error(member_id, error)));
    }

    /// SyncGroup. The answer arrives as a [`Reply::Sync`] for `ticket`.
    pub(crate) fn sync(
        &mut self,
        req: SyncRequest,
        ticket: Ticket,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) {
        let error = match self.validate(&req.group_id, GroupIdRule::NonEmpty) {
            // The rebalance state was lost while loading: have the member rejoin.
            Some(E::CoordinatorLoadInProgress) => Some(E::RebalanceInProgress),
            other => other,
        };
        if let Some(error) = error {
            self.push_reply(Reply::Sync(ticket, SyncResult::error(error)));
            return;
        }
        if let Some(result) = self.classic_sync_mixed(&req, now) {
            self.push_reply(Reply::Sync(ticket, result));
            return;
        }
        let group_id = req.group_id.clone();
        let done = self.with_group(&group_id, now, store, |ops| ops.sync(req, ticket));
        if done.is_none() {
            self.push_reply(Reply::Sync(ticket, SyncResult::error(E::UnknownMemberId)));
        }
    }

    /// Heartbeat; `None` is NONE.
    pub(crate) fn heartbeat(
        &mut self,
        req: HeartbeatRequest,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Option<ResponseError> {
        match self.validate(&req.group_id, GroupIdRule::NonEmpty) {
            // Kafka answers blindly while loading.
            Some(E::CoordinatorLoadInProgress) => return None,
            Some(e) => return Some(e),
            None => {}
        }
        if let Some(outcome) = self.classic_heartbeat_mixed(&req, now) {
            return outcome;
        }
        let group_id = req.group_id.clone();
        self.with_group(&group_id, now, store, |ops| ops.heartbeat(&req))
            .unwrap_or(Some(E::UnknownMemberId))
    }

    /// A classic JoinGroup for an empty KIP-848 consumer group: it becomes a
    /// classic group (its records deleted, its offsets kept). A consumer
    /// group with members takes classic members in (`consumer::mixed`).
    fn classic_join_on_consumer_group(
        &mut self,
        group_id: &str,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Option<ResponseError> {
        let partition = self.partition_for(group_id);
        let downgrade = self.config.migration_policy.allows_downgrade();
        let group = self.groups.get_mut(group_id)?;
        let cg = group.consumer.as_deref()?;
        if !cg.members.is_empty() {
            // Served by `classic_join_mixed`; reached only if that refused.
            return Some(if downgrade {
                E::CoordinatorLoadInProgress
            } else {
                E::InconsistentGroupProtocol
            });
        }
        let tombstones = super::consumer::persist::delete_group(group_id, cg);
        if let Err(e) = store.append(partition, &tombstones, now) {
            return Some(e.group_error());
        }
        group.consumer = None;
        None
    }

    /// LeaveGroup for one or more members.
    pub(crate) fn leave(
        &mut self,
        group_id: &str,
        members: Vec<LeaveMember>,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> LeaveResult {
        if let Some(error) = self.validate(group_id, GroupIdRule::NonEmpty) {
            return LeaveResult {
                error: Some(error),
                members: Vec::new(),
            };
        }
        if let Some(result) = self.classic_leave_mixed(group_id, &members, now, store) {
            return result;
        }
        let unknown = members
            .iter()
            .map(|m| (m.clone(), Some(E::UnknownMemberId)))
            .collect();
        self.with_group(group_id, now, store, |ops| ops.leave(members))
            .unwrap_or(LeaveResult {
                error: None,
                members: unknown,
            })
    }
}

impl Ops<'_> {
    fn accept_joining_member(&self, member_id: &str) -> bool {
        let g = &*self.group;
        let max = self.config.max_size;
        match g.state() {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                g.members
                    .get(member_id)
                    .is_some_and(|m| m.awaiting_join.is_some())
                    || g.num_awaiting_join() < max
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                g.has(member_id) || g.members.len() < max
            }
        }
    }

    fn new_member_join(&mut self, req: JoinRequest, ticket: Ticket) {
        if self.group.is(GroupState::Dead) {
            return self.reply_join(ticket, JoinResult::error("", E::CoordinatorNotAvailable));
        }
        if !self
            .group
            .supports_protocols(&req.protocol_type, &req.protocols)
        {
            return self.reply_join(ticket, JoinResult::error("", E::InconsistentGroupProtocol));
        }
        let prefix = req.group_instance_id.as_deref().unwrap_or(&req.client_id);
        let new_id = format!("{prefix}-{}", uuid::Uuid::new_v4());
        match req.group_instance_id.clone() {
            Some(instance) => match self.group.static_member_id(&instance).map(str::to_string) {
                Some(old_id) => self
                    .update_static_member_and_rebalance(&old_id, &new_id, &instance, req, ticket),
                None => self.add_member_and_rebalance(new_id, Some(instance), req, ticket),
            },
            None if req.require_known_member_id => {
                let deadline = self.now + i64::from(req.session_timeout_ms);
                self.group.pending_members.insert(new_id.clone(), deadline);
                self.reply_join(ticket, JoinResult::error(&new_id, E::MemberIdRequired));
            }
            None => self.add_member_and_rebalance(new_id, None, req, ticket),
        }
    }

    /// Kafka `validateCurrentMember`.
    pub(super) fn validate_current_member(
        &self,
        member_id: &str,
        instance: Option<&str>,
    ) -> Option<ResponseError> {
        if let Some(instance) = instance {
            match self.group.static_member_id(instance) {
                Some(current) if current != member_id => return Some(E::FencedInstanceId),
                Some(_) => {}
                None => return Some(E::UnknownMemberId),
            }
        }
        (!self.group.has(member_id)).then_some(E::UnknownMemberId)
    }

    fn current_member_join(&mut self, req: JoinRequest, ticket: Ticket) {
        let member_id = req.member_id.clone();
        if self.group.is(GroupState::Dead) {
            return self.reply_join(
                ticket,
                JoinResult::error(&member_id, E::CoordinatorNotAvailable),
            );
        }
        if !self
            .group
            .supports_protocols(&req.protocol_type, &req.protocols)
        {
            return self.reply_join(
                ticket,
                JoinResult::error(&member_id, E::InconsistentGroupProtocol),
            );
        }
        if self.group.is_pending(&member_id) {
            if req.group_instance_id.is_some() {
                // Kafka throws IllegalStateException here: a pending member is never static.
                return self
                    .reply_join(ticket, JoinResult::error(&member_id, E::UnknownServerError));
            }
            return self.add_member_and_rebalance(member_id, None, req, ticket);
        }
        if let Some(e) = self.validate_current_member(&member_id, req.group_instance_id.as_deref())
        {
            return self.reply_join(ticket, JoinResult::error(&member_id, e));
        }
        let matches = self.group.members[&member_id].matches(&req.protocols);
        match self.group.state() {
            GroupState::PreparingRebalance => self.update_member_and_rebalance(req, ticket),
            GroupState::CompletingRebalance if matches => {
                // The member missed our JoinGroup answer: send it again.
                let result = self.join_result(&member_id, self.group.is_leader(&member_id), false);
                self.reply_join(ticket, result);
            }
            GroupState::CompletingRebalance => self.update_member_and_rebalance(req, ticket),
            GroupState::Stable if self.group.is_leader(&member_id) || !matches => {
                // A leader rejoining asks for a new assignment (e.g. topic changes).
                self.update_member_and_rebalance(req, ticket)
            }
            GroupState::Stable => {
                let result = self.join_result(&member_id, false, false);
                self.reply_join(ticket, result);
            }
            GroupState::Empty | GroupState::Dead => {
                self.reply_join(ticket, JoinResult::error(&member_id, E::UnknownMemberId))
            }
        }
    }

    /// The current generation's JoinGroup answer for `member_id`.
    pub(super) fn join_result(
        &self,
        member_id: &str,
        with_members: bool,
        skip_assignment: bool,
    ) -> JoinResult {
        let g = &*self.group;
        JoinResult {
            error: None,
            member_id: member_id.to_string(),
            generation_id: g.generation_id,
            protocol_type: g.protocol_type.clone(),
            protocol_name: g.protocol_name.clone(),
            leader_id: g.leader_id.clone().unwrap_or_default(),
            skip_assignment,
            members: if with_members {
                self.current_member_metadata()
            } else {
                Vec::new()
            },
        }
    }

    pub(super) fn current_member_metadata(&self) -> Vec<JoinMember> {
        let protocol = self.group.protocol_name.clone().unwrap_or_default();
        self.group
            .members
            .values()
            .map(|m| JoinMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(&protocol).cloned().unwrap_or_default(),
            })
            .collect()
    }

    fn add_member_and_rebalance(
        &mut self,
        member_id: String,
        instance: Option<String>,
        req: JoinRequest,
        ticket: Ticket,
    ) {
        if self.group.is(GroupState::PreparingRebalance) && self.group.generation_id == 0 {
            self.group.new_member_added = true;
        }
        self.group.add(Member {
            member_id: member_id.clone(),
            group_instance_id: instance,
            client_id: req.client_id,
            client_host: req.client_host,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type,
            protocols: req.protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(ticket),
            awaiting_sync: None,
            is_new: true,
            // New members cannot heartbeat yet; bound how long they may wait.
            heartbeat_deadline: Some(self.now + NEW_MEMBER_JOIN_TIMEOUT_MS),
        });
        self.maybe_prepare_rebalance();
    }

    /// Kafka `updateMember`: new protocols and timeouts, parked on `ticket`.
    pub(super) fn update_member(
        &mut self,
        member_id: &str,
        protocols: Vec<Protocol>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        ticket: Option<Ticket>,
    ) {
        let Some(m) = self.group.members.get_mut(member_id) else {
            return;
        };
        m.protocols = protocols;
        m.rebalance_timeout_ms = rebalance_timeout_ms;
        m.session_timeout_ms = session_timeout_ms;
        let previous = std::mem::replace(&mut m.awaiting_join, ticket);
        if let Some(old) = previous.filter(|old| Some(*old) != ticket) {
            // Kafka drops a superseded JoinGroup unanswered; answer it so the
            // connection's in-order queue is not blocked behind it.
            self.reply_join(old, JoinResult::error(member_id, E::RebalanceInProgress));
        }
    }

    fn update_member_and_rebalance(&mut self, req: JoinRequest, ticket: Ticket) {
        self.update_member(
            &req.member_id,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(ticket),
        );
        self.maybe_prepare_rebalance();
    }

    fn update_static_member_and_rebalance(
        &mut self,
        old_id: &str,
        new_id: &str,
        instance: &str,
        req: JoinRequest,
        ticket: Ticket,
    ) {
        let current_leader = self.group.leader_id.clone().unwrap_or_default();
        // Fence whatever the old incarnation is parked on.
        self.invoke_join(old_id, JoinResult::error(old_id, E::FencedInstanceId));
        self.invoke_sync(old_id, SyncResult::error(E::FencedInstanceId));
        self.group.replace_static_member(instance, old_id, new_id);
        self.schedule_heartbeat(new_id);
        let (old_protocols, old_rebalance, old_session) = {
            let m = &self.group.members[new_id];
            (
                m.protocols.clone(),
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
            )
        };
        self.update_member(
            new_id,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(ticket),
        );
        match self.group.state() {
            GroupState::Stable => {
                if self.group.select_protocol() != self.group.protocol_name {
                    return self.maybe_prepare_rebalance();
                }
                // Same protocol: persist the new member id, no rebalance.
                let assignment: HashMap<String, Bytes> = self
                    .group
                    .members
                    .values()
                    .map(|m| (m.member_id.clone(), m.assignment.clone()))
                    .collect();
                if let Err(error) = self.store_group(&assignment) {
                    self.update_member(new_id, old_protocols, old_rebalance, old_session, None);
                    self.group.replace_static_member(instance, new_id, old_id);
                    self.schedule_heartbeat(old_id);
                    let mut result = self.join_result("", false, false);
                    result.error = Some(error);
                    result.leader_id = current_leader;
                    return self.reply_join(ticket, result);
                }
                let result = if req.supports_skip_assignment {
                    let is_leader = self.group.is_leader(new_id);
                    self.join_result(new_id, is_leader, is_leader)
                } else {
                    // Older clients: name the old leader id so the rejoining
                    // leader does not compute an assignment nobody would see.
                    let mut r = self.join_result(new_id, false, false);
                    r.leader_id = current_leader;
                    r
                };
                self.invoke_join(new_id, result);
            }
            GroupState::CompletingRebalance => self.prepare_rebalance(),
            GroupState::PreparingRebalance => {}
            GroupState::Empty | GroupState::Dead => {
                // Unreachable in Kafka (it throws): a static member implies members.
                self.invoke_join(new_id, JoinResult::error(new_id, E::UnknownServerError));
            }
        }
    }

    fn sync(&mut self, req: SyncRequest, ticket: Ticket) {
        let member_id = req.member_id.clone();
        let g = &*self.group;
        let error = if g.is(GroupState::Dead) {
            Some(E::CoordinatorNotAvailable)
        } else if let Some(e) =
            self.validate_current_member(&member_id, req.group_instance_id.as_deref())
        {
            Some(e)
        } else if req.generation_id != g.generation_id {
            Some(E::IllegalGeneration)
        } else if (req.protocol_type.is_some() && req.protocol_type != g.protocol_type)
            || (req.protocol_name.is_some() && req.protocol_name != g.protocol_name)
        {
            Some(E::InconsistentGroupProtocol)
        } else {
            None
        };
        if let Some(e) = error {
            return self.reply_sync(ticket, SyncResult::error(e));
        }
        match self.group.state() {
            GroupState::Empty => self.reply_sync(ticket, SyncResult::error(E::UnknownMemberId)),
            GroupState::PreparingRebalance => {
                self.reply_sync(ticket, SyncResult::error(E::RebalanceInProgress))
            }
            GroupState::CompletingRebalance => {
                let member = self
                    .group
                    .members
                    .get_mut(&member_id)
                    .expect("validated member");
                if let Some(old) = member.awaiting_sync.replace(ticket) {
                    self.reply_sync(old, SyncResult::error(E::RebalanceInProgress));
                }
                self.remove_pending_sync(&member_id);
                if self.group.is_leader(&member_id) {
                    let mut assignment: HashMap<String, Bytes> =
                        req.assignments.into_iter().collect();
                    for id in self.group.members.keys() {
                        assignment.entry(id.clone()).or_default();
                    }
                    match self.store_group(&assignment) {
                        Ok(()) => {
                            for m in self.group.members.values_mut() {
                                m.assignment =
                                    assignment.get(&m.member_id).cloned().unwrap_or_default();
                            }
                            self.propagate_assignment(None);
                            self.group.transition_to(GroupState::Stable, self.now);
                        }
                        Err(e) => {
                            self.reset_and_propagate_assignment_error(e);
                            self.maybe_prepare_rebalance();
                        }
                    }
                }
            }
            GroupState::Stable => {
                self.remove_pending_sync(&member_id);
                let result = SyncResult {
                    error: None,
                    protocol_type: self.group.protocol_type.clone(),
                    protocol_name: self.group.protocol_name.clone(),
                    assignment: self.group.members[&member_id].assignment.clone(),
                };
                self.reply_sync(ticket, result);
                self.schedule_heartbeat(&member_id);
            }
            GroupState::Dead => {
                self.reply_sync(ticket, SyncResult::error(E::CoordinatorNotAvailable))
            }
        }
    }

    fn remove_pending_sync(&mut self, member_id: &str) {
        self.group.pending_sync.remove(member_id);
        if self.group.pending_sync.is_empty() {
            self.group.sync_timer = None;
        }
    }

    fn heartbeat(&mut self, req: &HeartbeatRequest) -> Option<ResponseError> {
        if self.group.is(GroupState::Dead) {
            return Some(E::CoordinatorNotAvailable);
        }
        if let Some(e) =
            self.validate_current_member(&req.member_id, req.group_instance_id.as_deref())
        {
            return Some(e);
        }
        if req.generation_id != self.group.generation_id {
            return Some(E::IllegalGeneration);
        }
        match self.group.state() {
            GroupState::Empty => Some(E::UnknownMemberId),
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.schedule_heartbeat(&req.member_id);
                None
            }
            GroupState::PreparingRebalance => {
                self.schedule_heartbeat(&req.member_id);
                Some(E::RebalanceInProgress)
            }
            GroupState::Dead => Some(E::CoordinatorNotAvailable),
        }
    }

    fn leave(&mut self, members: Vec<LeaveMember>) -> LeaveResult {
        if self.group.is(GroupState::Dead) {
            return LeaveResult {
                error: Some(E::CoordinatorNotAvailable),
                members: Vec::new(),
            };
        }
        let mut out = Vec::with_capacity(members.len());
        for leaving in members {
            let error = if leaving.member_id.is_empty() {
                // Administrative removal by group.instance.id.
                match leaving
                    .group_instance_id
                    .as_deref()
                    .and_then(|i| self.group.static_member_id(i))
                    .map(str::to_string)
                {
                    Some(current) => {
                        self.remove_member_and_update_group(&current);
                        None
                    }
                    None => Some(E::UnknownMemberId),
                }
            } else if self.group.is_pending(&leaving.member_id) {
                self.remove_pending_member_and_update_group(&leaving.member_id);
                None
            } else {
                let e = self.validate_current_member(
                    &leaving.member_id,
                    leaving.group_instance_id.as_deref(),
                );
                if e.is_none() {
                    self.remove_member_and_update_group(&leaving.member_id);
                }
                e
            };
            out.push((leaving, error));
        }
        LeaveResult {
            error: None,
            members: out,
        }
    }
}
