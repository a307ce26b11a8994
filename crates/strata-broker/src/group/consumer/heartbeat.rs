//! ConsumerGroupHeartbeat (KIP-848) on the [`GroupManager`]: one
//! coordinator write per heartbeat, as Kafka's
//! `GroupMetadataManager.consumerGroupHeartbeat` does it:
//!
//! 1. validate the request and find (or create) the group and the member;
//! 2. apply what the member sent; bump the group epoch when its
//!    subscription or the subscribed topics changed;
//! 3. compute a new target assignment when the group epoch passed the
//!    target's;
//! 4. reconcile this member toward its target (revoke before assign);
//! 5. write every record of the change as one batch; only once it is
//!    stored does the in-memory group change and the member get its answer.
//!
//! A Stable classic group with members is converted online (`mixed`);
//! while it rebalances the new member is told COORDINATOR_LOAD_IN_PROGRESS
//! and retries (`docs/groups.md`). When the last member speaking the
//! consumer protocol leaves or is fenced, the group goes back to a classic
//! group (`downgrade`).

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;

use super::api::{ConsumerHeartbeat, ConsumerHeartbeatResult, LEAVE_EPOCH, STATIC_LEAVE_EPOCH};
use super::assignment::{partition_count, TopicPartitions};
use super::assignor::AssignorName;
use super::downgrade;
use super::group::{compile_regex, ConsumerGroup};
use super::image::TopicImage;
use super::member::ConsumerMember;
use super::persist;
use super::reconcile::{reconcile, validate_epoch, CurrentAssignment, MemberState};
use crate::group::classic::{Group, GroupState, CONSUMER_PROTOCOL_TYPE};
use crate::group::config::{GroupConfig, MigrationPolicy};
use crate::group::manager::{GroupIdRule, GroupManager};
use crate::group::records::GroupMetadataKey;
use crate::group::store::{OffsetsStore, StoreRecord};

type E = ResponseError;

/// A refusal: the error and its message.
pub(crate) type Refusal = (E, Option<String>);

/// What one member update works on (see [`GroupManager::update_and_reconcile`]).
pub(crate) struct Step<'a> {
    pub group_id: &'a str,
    pub member_id: &'a str,
    /// The member before this request (`None`: it joins).
    pub old_member: Option<&'a ConsumerMember>,
    /// It replaces a static member under a new id.
    pub replaced: bool,
    /// The group did not exist before this request.
    pub new_group: bool,
    /// The partitions the member says it owns (`None`: unchanged).
    pub owned: Option<&'a TopicPartitions>,
    pub image: &'a TopicImage,
    pub now: i64,
}

pub(crate) fn refuse(e: E, message: impl Into<String>) -> Refusal {
    (e, Some(message.into()))
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate_request(req: &ConsumerHeartbeat, config: &GroupConfig) -> Result<(), Refusal> {
    let invalid = |m: &str| Err(refuse(E::InvalidRequest, m));
    if req.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if req.instance_id.as_deref() == Some("") {
        return invalid("InstanceId can't be empty.");
    }
    if req.rack_id.as_deref() == Some("") {
        return invalid("RackId can't be empty.");
    }
    if req.version >= 1 && req.member_id.is_empty() {
        return invalid("MemberId can't be empty.");
    }
    match req.member_epoch {
        0 => {
            if req.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if req.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
                return invalid("TopicPartitions must be empty when (re-)joining.");
            }
            let names = req.subscribed_topic_names.as_ref();
            let regex = req.subscribed_topic_regex.as_deref();
            if req.version == 0 && names.is_none_or(Vec::is_empty) {
                return invalid("SubscribedTopicNames must be set in first request.");
            }
            if names.is_none() && regex.is_none() {
                return invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                );
            }
        }
        e if e > 0 => {
            if req.member_id.is_empty() {
                return invalid("MemberId can't be empty.");
            }
        }
        LEAVE_EPOCH => {
            if req.member_id.is_empty() {
                return invalid("MemberId can't be empty.");
            }
        }
        STATIC_LEAVE_EPOCH => {
            if req.member_id.is_empty() {
                return invalid("MemberId can't be empty.");
            }
            if req.instance_id.is_none() {
                return invalid("InstanceId can't be null.");
            }
        }
        _ => return invalid("MemberEpoch is invalid."),
    }
    if let Some(a) = req.server_assignor.as_deref() {
        let known = AssignorName::parse(a).is_some_and(|n| config.consumer_assignors.contains(&n));
        if !known {
            let names: Vec<&str> = config.consumer_assignors.iter().map(|a| a.name()).collect();
            return Err(refuse(
                E::UnsupportedAssignor,
                format!(
                    "ServerAssignor {a} is not supported. Supported assignors: {}.",
                    names.join(", ")
                ),
            ));
        }
    }
    if let Some(r) = req
        .subscribed_topic_regex
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        if let Err(error) = compile_regex(r) {
            return Err(refuse(
                E::InvalidRegularExpression,
                format!("SubscribedTopicRegex `{r}` is not a valid regular expression: {error}"),
            ));
        }
    }
    Ok(())
}

/// A new member id: 22 characters of URL-safe base64 over 16 random bytes,
/// as Kafka's `Uuid.randomUuid().toString()`.
pub(crate) fn new_member_id() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes())
}

impl GroupManager {
    /// ConsumerGroupHeartbeat.
    pub(crate) fn consumer_heartbeat(
        &mut self,
        req: &ConsumerHeartbeat,
        image: &TopicImage,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> ConsumerHeartbeatResult {
        match self.try_consumer_heartbeat(req, image, now, store) {
            Ok(r) => r,
            Err((e, message)) => ConsumerHeartbeatResult::error(e, message),
        }
    }

    fn try_consumer_heartbeat(
        &mut self,
        req: &ConsumerHeartbeat,
        image: &TopicImage,
        now: i64,
        store: &mut dyn OffsetsStore,
    ) -> Result<ConsumerHeartbeatResult, Refusal> {
        if !self.config.consumer_protocol_enabled {
            return Err(refuse(
                E::UnsupportedVersion,
                "The new consumer group protocol is not enabled (group.coordinator.rebalance.protocols).",
            ));
        }
        validate_request(req, &self.config)?;
        if let Some(e) = self.validate(&req.group_id, GroupIdRule::NonEmpty) {
            return Err((e, None));
        }
        let partition = self.partition_for(&req.group_id);
        if req.member_epoch == LEAVE_EPOCH || req.member_epoch == STATIC_LEAVE_EPOCH {
            return self.consumer_leave(req, now, store, partition);
        }
        let mut records: Vec<StoreRecord> = Vec::new();
        let mut convert_classic = false;
        let mut cg: ConsumerGroup = match self.groups.get(&req.group_id) {
            None => {
                if req.member_epoch != 0 {
                    return Err(refuse(
                        E::UnknownMemberId,
                        format!("Group {} has no member {}.", req.group_id, req.member_id),
                    ));
                }
                ConsumerGroup::default()
            }
            Some(g) => match g.consumer.as_deref() {
                Some(cg) => cg.clone(),
                None => {
                    if req.member_epoch != 0 {
                        return Err(refuse(
                            E::GroupIdNotFound,
                            format!("Group {} is not a consumer group.", req.group_id),
                        ));
                    }
                    if g.members.is_empty()
                        && g.pending_members.is_empty()
                        && !g.is(GroupState::Dead)
                    {
                        // An empty classic group becomes a consumer group;
                        // its committed offsets stay.
                        if g.generation_id > 0 || g.protocol_type.is_some() {
                            records.push(StoreRecord {
                                key: GroupMetadataKey {
                                    group: req.group_id.clone(),
                                }
                                .encode(),
                                value: None,
                            });
                        }
                        convert_classic = true;
                        ConsumerGroup::default()
                    } else {
                        let upgradable = g.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
                            && self.config.migration_policy.allows_upgrade();
                        if !upgradable {
                            return Err(refuse(
                                E::GroupIdNotFound,
                                format!("Group {} is not a consumer group.", req.group_id),
                            ));
                        }
                        if !g.is(GroupState::Stable) {
                            // Its members' assignments are being replaced:
                            // convert it once the rebalance is over.
                            return Err(refuse(
                                E::CoordinatorLoadInProgress,
                                format!("Group {} is rebalancing; it becomes a consumer group once it is stable.", req.group_id),
                            ));
                        }
                        let (cg, upgrade) = super::mixed::upgrade_classic(g, image, now)
                            .ok_or_else(|| {
                                refuse(
                                    E::GroupIdNotFound,
                                    format!("Group {} has members whose consumer protocol data does not parse.", req.group_id),
                                )
                            })?;
                        tracing::info!(group = %req.group_id, members = cg.members.len(), epoch = cg.group_epoch, "classic group upgraded to a consumer group");
                        records.extend(upgrade);
                        convert_classic = true;
                        cg
                    }
                }
            },
        };
        let new_group = cg.members.is_empty() && cg.group_epoch == 0;

        // The member: looked up, created, or replacing a static one.
        let (member_id, old_member, replaced) = self.consumer_member(&mut cg, req)?;
        if let Some(old_id) = replaced.as_deref() {
            records.push(persist::current_assignment_tombstone(&req.group_id, old_id));
            records.push(persist::target_member_tombstone(&req.group_id, old_id));
            records.push(persist::member_metadata_tombstone(&req.group_id, old_id));
        }
        let mut member = old_member
            .clone()
            .unwrap_or_else(|| ConsumerMember::new(&member_id));
        if let Some(v) = &req.instance_id {
            member.instance_id = Some(v.clone());
        }
        if let Some(v) = &req.rack_id {
            member.rack_id = Some(v.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(v) = &req.server_assignor {
            member.server_assignor = Some(v.clone());
        }
        if let Some(v) = &req.subscribed_topic_names {
            member.subscribed_topic_names = v.iter().cloned().collect();
        }
        if let Some(v) = &req.subscribed_topic_regex {
            member.subscribed_topic_regex = (!v.is_empty()).then(|| v.clone());
        }
        member.client_id.clone_from(&req.client_id);
        member.client_host.clone_from(&req.client_host);
        let step = Step {
            group_id: &req.group_id,
            member_id: &member_id,
            old_member: old_member.as_ref(),
            replaced: replaced.is_some(),
            new_group,
            owned: req.topic_partitions.as_ref(),
            image,
            now,
        };
        let (current, next) = self.update_and_reconcile(&mut cg, member, &step, &mut records)?;

        if !records.is_empty() {
            store
                .append(partition, &records, now)
                .map_err(|e| {
                    tracing::warn!(group = %req.group_id, error = %strata_log::ErrorChain(&e), "consumer group heartbeat write failed");
                    (e.group_error(), None)
                })?;
        }

        // Stored: apply.
        self.apply_member(&mut cg, &req.group_id, &member_id, &current, &next, now);
        let full = req.member_epoch == 0
            || (req.rebalance_timeout_ms != -1
                && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
                && req.topic_partitions.is_some());
        let assignment = (full || next.assigned != current.assigned || old_member.is_none())
            .then(|| next.assigned.clone());
        let group = self
            .groups
            .entry(req.group_id.clone())
            .or_insert_with(|| Group::new(&req.group_id, GroupState::Empty, now));
        if convert_classic {
            group.reset_classic(now);
        }
        group.consumer = Some(Box::new(cg));
        Ok(ConsumerHeartbeatResult {
            error: None,
            error_message: None,
            member_id: Some(member_id),
            member_epoch: next.member_epoch,
            heartbeat_interval_ms: self.config.consumer_heartbeat_interval_ms,
            assignment,
        })
    }

    /// Steps 3–5 of a heartbeat (and of a classic member's JoinGroup):
    /// store `member` in `cg`, bump the group epoch when its subscription
    /// or the subscribed topics changed, compute a new target when the
    /// epoch passed it, and reconcile the member. The records of every
    /// change are appended to `records`. Returns the member's assignment
    /// before and after.
    pub(crate) fn update_and_reconcile(
        &self,
        cg: &mut ConsumerGroup,
        member: ConsumerMember,
        step: &Step<'_>,
        records: &mut Vec<StoreRecord>,
    ) -> Result<(CurrentAssignment, CurrentAssignment), Refusal> {
        let (group_id, member_id, image, now) =
            (step.group_id, step.member_id, step.image, step.now);
        let old_member = step.old_member;
        let metadata_changed =
            step.replaced || old_member.is_none_or(|o| !o.same_metadata(&member));
        let subscription_changed = old_member.is_none_or(|o| {
            o.subscribed_topic_names != member.subscribed_topic_names
                || o.subscribed_topic_regex != member.subscribed_topic_regex
        });
        if metadata_changed {
            records.push(persist::member_metadata(group_id, &member));
        }
        if step.replaced {
            let target = cg.target.get(member_id).cloned().unwrap_or_default();
            records.push(persist::target_member(group_id, member_id, &target));
        }
        cg.members.insert(member_id.to_string(), member);

        // Subscription metadata, regexes and the group epoch.
        let mut bump = subscription_changed || step.new_group;
        if subscription_changed || cg.image_version != Some(image.version) {
            let before: BTreeSet<String> = cg.resolved_regex.keys().cloned().collect();
            let changed = cg.resolve_regexes(image);
            let version = i64::try_from(image.version).unwrap_or(i64::MAX);
            for r in &changed {
                records.push(persist::regex_resolution(
                    group_id,
                    r,
                    cg.resolved_regex.get(r),
                    version,
                    now,
                ));
            }
            for gone in before
                .iter()
                .filter(|r| !cg.resolved_regex.contains_key(*r))
            {
                records.push(persist::regex_resolution(
                    group_id, gone, None, version, now,
                ));
            }
            bump |= !changed.is_empty();
            let metadata = cg.compute_subscription_metadata(image);
            if metadata != cg.subscription_metadata {
                cg.subscription_metadata = metadata;
                records.push(persist::subscription_metadata(
                    group_id,
                    &cg.subscription_metadata,
                ));
                bump = true;
            }
            cg.image_version = Some(image.version);
        }
        if bump {
            cg.group_epoch += 1;
            records.push(persist::group_epoch(group_id, cg.group_epoch));
        }

        // A new target assignment for the whole group.
        if cg.group_epoch > cg.assignment_epoch {
            let assignor = cg.preferred_assignor(&self.config.consumer_assignors);
            let target = cg.compute_target(assignor);
            for (id, tp) in &target {
                if cg.target.get(id) != Some(tp) {
                    records.push(persist::target_member(group_id, id, tp));
                }
            }
            cg.target = target;
            cg.assignment_epoch = cg.group_epoch;
            records.push(persist::target_epoch(group_id, cg.assignment_epoch));
        }

        // Reconcile this member.
        let current = cg.members[member_id].assignment.clone();
        let reconciled = current.is_reconciled_to(cg.assignment_epoch) && old_member.is_some();
        let next = if reconciled {
            current.clone()
        } else {
            let target = cg.target.get(member_id).cloned().unwrap_or_default();
            reconcile(
                &current,
                cg.assignment_epoch,
                &target,
                step.owned,
                |t, p| cg.owned_by_other(member_id, t, p),
            )
            .map_err(|f| refuse(E::FencedMemberEpoch, f.to_string()))?
        };
        if next != current || old_member.is_none() {
            records.push(persist::current_assignment(group_id, member_id, &next));
        }
        Ok((current, next))
    }

    /// After the records are stored: the member's new assignment, its
    /// session re-armed, its revocation deadline set or cleared.
    pub(crate) fn apply_member(
        &self,
        cg: &mut ConsumerGroup,
        group_id: &str,
        member_id: &str,
        current: &CurrentAssignment,
        next: &CurrentAssignment,
        now: i64,
    ) {
        let Some(m) = cg.members.get_mut(member_id) else {
            return;
        };
        let was_revoking = current.state == MemberState::UnrevokedPartitions;
        m.assignment = next.clone();
        m.session_deadline =
            Some(now + i64::from(m.session_timeout_ms(self.config.consumer_session_timeout_ms)));
        m.rebalance_deadline = if next.state == MemberState::UnrevokedPartitions {
            match m.rebalance_deadline {
                Some((d, e)) if was_revoking && e == next.member_epoch => Some((d, e)),
                _ => Some((
                    now + i64::from(m.rebalance_timeout_ms.max(0)),
                    next.member_epoch,
                )),
            }
        } else {
            None
        };
        if next != current {
            tracing::debug!(
                group = %group_id,
                member = %member_id,
                epoch = next.member_epoch,
                state = next.state.name(),
                assigned = partition_count(&next.assigned),
                revoking = partition_count(&next.pending_revocation),
                "consumer group member moved"
            );
        }
    }

    /// Find the heartbeating member in `cg` (Kafka's
    /// `getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember`): returns
    /// its id, its state before this heartbeat (`None`: a new member), and
    /// the id of a static member it replaces (which `cg` no longer holds).
    fn consumer_member(
        &self,
        cg: &mut ConsumerGroup,
        req: &ConsumerHeartbeat,
    ) -> Result<(String, Option<ConsumerMember>, Option<String>), Refusal> {
        let full = |cg: &ConsumerGroup| cg.members.len() >= self.config.consumer_max_size;
        let group_full = || {
            refuse(
                E::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    self.config.consumer_max_size
                ),
            )
        };
        let joining_id = || {
            if req.member_id.is_empty() {
                new_member_id()
            } else {
                req.member_id.clone()
            }
        };
        // A member rejoining with epoch 0 gave up its partitions: it starts
        // over as a new incarnation of the same id (its target stays).
        let rejoin = |m: &ConsumerMember| ConsumerMember {
            assignment: CurrentAssignment::new_member(),
            ..m.clone()
        };
        if let Some(instance) = req.instance_id.as_deref() {
            match cg.static_member(instance).map(str::to_string) {
                None => {
                    if req.member_epoch != 0 {
                        return Err(refuse(
                            E::UnknownMemberId,
                            format!("Instance id {instance} is unknown."),
                        ));
                    }
                    if full(cg) {
                        return Err(group_full());
                    }
                    Ok((joining_id(), None, None))
                }
                Some(owner) if req.member_epoch == 0 => {
                    let old = cg.members[&owner].clone();
                    if old.assignment.member_epoch == STATIC_LEAVE_EPOCH {
                        // Kafka: the instance comes back; a new member id
                        // takes over its subscription and target, and the
                        // group epoch does not move (no rebalance).
                        let id = joining_id();
                        let mut replacement = ConsumerMember {
                            member_id: id.clone(),
                            assignment: CurrentAssignment::new_member(),
                            session_deadline: None,
                            rebalance_deadline: None,
                            ..old.clone()
                        };
                        replacement.assignment.previous_member_epoch = 0;
                        cg.members.remove(&owner);
                        if let Some(t) = cg.target.remove(&owner) {
                            cg.target.insert(id.clone(), t);
                        }
                        if id == owner {
                            return Ok((id, Some(replacement), None));
                        }
                        Ok((id, Some(replacement), Some(owner)))
                    } else if owner == req.member_id {
                        Ok((owner, Some(rejoin(&old)), None))
                    } else {
                        Err(refuse(
                            E::UnreleasedInstanceId,
                            format!("Static member {owner} with instance id {instance} is still in the group."),
                        ))
                    }
                }
                Some(owner) => {
                    if owner != req.member_id {
                        return Err(refuse(
                            E::FencedInstanceId,
                            format!("Static member {} with instance id {instance} was replaced by {owner}.", req.member_id),
                        ));
                    }
                    let m = cg.members[&owner].clone();
                    validate_epoch(
                        &m.assignment,
                        req.member_epoch,
                        req.topic_partitions.as_ref(),
                    )
                    .map_err(|f| refuse(E::FencedMemberEpoch, f.to_string()))?;
                    Ok((owner, Some(m), None))
                }
            }
        } else if req.member_epoch == 0 {
            match cg.members.get(&req.member_id) {
                Some(m) if !req.member_id.is_empty() => {
                    Ok((req.member_id.clone(), Some(rejoin(m)), None))
                }
                _ => {
                    if full(cg) {
                        return Err(group_full());
                    }
                    Ok((joining_id(), None, None))
                }
            }
        } else {
            let Some(m) = cg.members.get(&req.member_id) else {
                return Err(refuse(
                    E::UnknownMemberId,
                    format!(
                        "Member {} is not a member of group {}.",
                        req.member_id, req.group_id
                    ),
                ));
            };
            validate_epoch(
                &m.assignment,
                req.member_epoch,
                req.topic_partitions.as_ref(),
            )
            .map_err(|f| refuse(E::FencedMemberEpoch, f.to_string()))?;
            Ok((req.member_id.clone(), Some(m.clone()), None))
        }
    }

    /// A heartbeat with epoch -1 (leave) or -2 (a static member leaving for
    /// a while: it keeps its assignment until its session expires).
    fn consumer_leave(
        &mut self,
        req: &ConsumerHeartbeat,
        now: i64,
        store: &mut dyn OffsetsStore,
        partition: i32,
    ) -> Result<ConsumerHeartbeatResult, Refusal> {
        let unknown = || {
            refuse(
                E::UnknownMemberId,
                format!(
                    "Member {} is not a member of group {}.",
                    req.member_id, req.group_id
                ),
            )
        };
        let Some(cg) = self
            .groups
            .get(&req.group_id)
            .and_then(|g| g.consumer.as_deref())
        else {
            return Err(unknown());
        };
        let member_id = match req.instance_id.as_deref() {
            Some(instance) => {
                let owner = cg.static_member(instance).ok_or_else(unknown)?;
                if owner != req.member_id {
                    return Err(refuse(
                        E::FencedInstanceId,
                        format!(
                            "Static member {} with instance id {instance} was replaced by {owner}.",
                            req.member_id
                        ),
                    ));
                }
                owner.to_string()
            }
            None if cg.members.contains_key(&req.member_id) => req.member_id.clone(),
            None => return Err(unknown()),
        };
        let mut cg = cg.clone();
        let records = if req.member_epoch == STATIC_LEAVE_EPOCH {
            let m = cg.members.get_mut(&member_id).expect("found above");
            m.assignment.member_epoch = STATIC_LEAVE_EPOCH;
            m.assignment.pending_revocation.clear();
            m.rebalance_deadline = None;
            vec![persist::current_assignment(
                &req.group_id,
                &member_id,
                &m.assignment,
            )]
        } else if downgrade::may_downgrade(&cg, &member_id, &self.config) {
            let (classic, records) = downgrade::to_classic(&cg, &req.group_id, &member_id, now);
            store
                .append(partition, &records, now)
                .map_err(|e| (e.group_error(), None))?;
            tracing::info!(group = %req.group_id, member = %member_id, "the last consumer-protocol member left");
            self.finish_downgrade(classic, now, store);
            return Ok(Self::left(req, &self.config));
        } else {
            remove_member(&mut cg, &req.group_id, &member_id)
        };
        store
            .append(partition, &records, now)
            .map_err(|e| (e.group_error(), None))?;
        tracing::info!(group = %req.group_id, member = %member_id, epoch = req.member_epoch, "member left the consumer group");
        if let Some(g) = self.groups.get_mut(&req.group_id) {
            g.consumer = Some(Box::new(cg));
        }
        Ok(Self::left(req, &self.config))
    }

    /// The answer to a member that left.
    fn left(req: &ConsumerHeartbeat, config: &GroupConfig) -> ConsumerHeartbeatResult {
        ConsumerHeartbeatResult {
            error: None,
            error_message: None,
            member_id: Some(req.member_id.clone()),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: config.consumer_heartbeat_interval_ms,
            assignment: None,
        }
    }

    /// Fence consumer-group members whose session or revocation time ran
    /// out at `now` (Kafka's session and rebalance timers).
    pub(crate) fn consumer_poll_timers(&mut self, now: i64, store: &mut dyn OffsetsStore) {
        let due: Vec<String> = self
            .groups
            .values()
            .filter(|g| {
                g.consumer.as_deref().is_some_and(|cg| {
                    cg.members
                        .values()
                        .any(|m| m.next_deadline().is_some_and(|d| d <= now))
                })
            })
            .map(|g| g.id.clone())
            .collect();
        for id in due {
            let partition = self.partition_for(&id);
            let Some(cg) = self.groups.get(&id).and_then(|g| g.consumer.as_deref()) else {
                continue;
            };
            let mut cg = cg.clone();
            let mut records = Vec::new();
            let expired: Vec<(String, bool)> = cg
                .members
                .values()
                .filter_map(|m| {
                    if m.session_deadline.is_some_and(|d| d <= now) {
                        return Some((m.member_id.clone(), true));
                    }
                    match m.rebalance_deadline {
                        Some((d, epoch)) if d <= now => Some((
                            m.member_id.clone(),
                            m.assignment.member_epoch == epoch
                                && m.assignment.state == MemberState::UnrevokedPartitions,
                        )),
                        _ => None,
                    }
                })
                .collect();
            let mut classic = None;
            for (member, fence) in expired {
                if fence {
                    tracing::info!(group = %id, member = %member, "consumer group member fenced: session or revocation timed out");
                    if downgrade::may_downgrade(&cg, &member, &self.config) {
                        // The members still expired are classic ones: the
                        // classic group's own timers deal with them.
                        let (g, conversion) = downgrade::to_classic(&cg, &id, &member, now);
                        records.extend(conversion);
                        classic = Some(g);
                        break;
                    }
                    records.extend(remove_member(&mut cg, &id, &member));
                } else if let Some(m) = cg.members.get_mut(&member) {
                    m.rebalance_deadline = None;
                }
            }
            if !records.is_empty() {
                if let Err(error) = store.append(partition, &records, now) {
                    // Retried at the next tick: the members stay until stored.
                    tracing::warn!(group = %id, error = %strata_log::ErrorChain(&error), "fencing consumer group members failed");
                    continue;
                }
            }
            if let Some(g) = classic {
                self.finish_downgrade(g, now, store);
            } else if let Some(g) = self.groups.get_mut(&id) {
                g.consumer = Some(Box::new(cg));
            }
        }
    }
}

/// Remove `member_id` from `cg` (Kafka's fencing): its records' tombstones,
/// the subscription metadata without it, and a group epoch bump. Returns
/// the records to write.
pub(crate) fn remove_member(
    cg: &mut ConsumerGroup,
    group_id: &str,
    member_id: &str,
) -> Vec<StoreRecord> {
    let mut records = vec![
        persist::current_assignment_tombstone(group_id, member_id),
        persist::target_member_tombstone(group_id, member_id),
        persist::member_metadata_tombstone(group_id, member_id),
    ];
    cg.members.remove(member_id);
    cg.target.remove(member_id);
    let regexes = cg.regexes();
    let gone: Vec<String> = cg
        .resolved_regex
        .keys()
        .filter(|r| !regexes.contains(*r))
        .cloned()
        .collect();
    for r in gone {
        cg.resolved_regex.remove(&r);
        records.push(persist::regex_resolution(group_id, &r, None, 0, 0));
    }
    let mut still: BTreeSet<String> = BTreeSet::new();
    for m in cg.members.values() {
        still.extend(cg.member_topics(m));
    }
    let before = cg.subscription_metadata.len();
    cg.subscription_metadata
        .retain(|name, _| still.contains(name));
    if cg.subscription_metadata.len() != before {
        records.push(persist::subscription_metadata(
            group_id,
            &cg.subscription_metadata,
        ));
    }
    cg.group_epoch += 1;
    records.push(persist::group_epoch(group_id, cg.group_epoch));
    records
}

impl MigrationPolicy {
    /// Whether a classic group may become a consumer group online.
    pub(crate) fn allows_upgrade(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Upgrade | MigrationPolicy::Bidirectional
        )
    }

    /// Whether a consumer group may become a classic group online.
    pub(crate) fn allows_downgrade(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Downgrade | MigrationPolicy::Bidirectional
        )
    }
}
