//! [`GroupManager`]: every group this coordinator owns, the partition
//! loading state, and the entry points the runtime calls. Pure: time comes
//! in as `now`, writes go to an [`OffsetsStore`], parked requests are
//! answered through [`Reply`]s collected in the manager and drained with
//! [`GroupManager::take_replies`].
//!
//! Kafka's `GroupCoordinator.scala` (the classic coordinator of 3.9) is the
//! model; its purgatories become deadlines on the group and its members,
//! fired by [`GroupManager::poll_timers`].

use std::collections::{BTreeSet, HashMap, HashSet};

use kafka_protocol::error::ResponseError;

use super::api::Reply;
use super::classic::{Group, GroupState};
use super::config::GroupConfig;
use super::member::Ticket;
use super::partition_for;
use super::store::OffsetsStore;

/// Whether an API accepts the empty group id (Kafka `isValidGroupId`:
/// offset and admin APIs do, for backwards compatibility).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupIdRule {
    AllowEmpty,
    NonEmpty,
}

/// The coordinator's state.
#[derive(Debug)]
pub(crate) struct GroupManager {
    pub(crate) config: GroupConfig,
    pub(crate) groups: HashMap<String, Group>,
    /// Partitions of `__consumer_offsets` still being loaded.
    loading: HashSet<i32>,
    /// Cluster mode: the partitions this broker leads, whose groups it
    /// coordinates; `None` (single node) is every partition.
    owned: Option<BTreeSet<i32>>,
    active: bool,
    replies: Vec<Reply>,
    /// The topics as last seen by the runtime (set before each operation):
    /// classic members of consumer groups name topics, the group ids.
    pub(crate) image: std::sync::Arc<super::consumer::image::TopicImage>,
}

/// One operation on one group: the borrowed pieces the protocol logic in
/// `membership` and `offsets` needs.
pub(crate) struct Ops<'a> {
    pub group: &'a mut Group,
    pub config: &'a GroupConfig,
    pub replies: &'a mut Vec<Reply>,
    pub store: &'a mut dyn OffsetsStore,
    pub now: i64,
    pub partition: i32,
}

impl GroupManager {
    /// An active coordinator owning every partition, with no groups.
    pub(crate) fn new(config: GroupConfig) -> GroupManager {
        GroupManager {
            config,
            groups: HashMap::new(),
            loading: HashSet::new(),
            owned: None,
            active: true,
            replies: Vec::new(),
            image: std::sync::Arc::default(),
        }
    }

    pub(crate) fn partition_for(&self, group_id: &str) -> i32 {
        partition_for(group_id, self.config.offsets_topic_num_partitions)
    }

    /// Stop serving (shutdown): every later request gets
    /// COORDINATOR_NOT_AVAILABLE, parked requests are answered NOT_COORDINATOR.
    pub(crate) fn deactivate(&mut self) {
        self.active = false;
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            if let Some(group) = self.groups.get_mut(&id) {
                super::timers::unload(group, &mut self.replies);
            }
        }
        self.groups.clear();
    }

    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    /// Cluster mode: coordinate only the groups of `partitions` from now
    /// on. Groups of partitions no longer owned are unloaded (their parked
    /// requests answered NOT_COORDINATOR); returns the partitions newly
    /// owned, which the caller loads (they stay loading until then).
    pub(crate) fn set_owned(&mut self, partitions: &BTreeSet<i32>) -> Vec<i32> {
        let before = self.owned.clone().unwrap_or_default();
        let lost: Vec<i32> = before.difference(partitions).copied().collect();
        let gained: Vec<i32> = partitions.difference(&before).copied().collect();
        if !lost.is_empty() {
            let n = self.config.offsets_topic_num_partitions;
            let ids: Vec<String> = self
                .groups
                .keys()
                .filter(|g| lost.contains(&partition_for(g, n)))
                .cloned()
                .collect();
            for id in ids {
                if let Some(mut group) = self.groups.remove(&id) {
                    super::timers::unload(&mut group, &mut self.replies);
                }
            }
        }
        for p in &gained {
            self.loading.insert(*p);
        }
        self.owned = Some(partitions.clone());
        gained
    }

    /// The partitions owned in cluster mode (`None`: all).
    pub(crate) fn owned(&self) -> Option<&BTreeSet<i32>> {
        self.owned.as_ref()
    }

    /// Mark a partition as loading (requests for its groups get
    /// COORDINATOR_LOAD_IN_PROGRESS until [`Self::finish_loading`]).
    pub(crate) fn begin_loading(&mut self, partition: i32) {
        self.loading.insert(partition);
    }

    pub(crate) fn finish_loading(&mut self, partition: i32) {
        self.loading.remove(&partition);
    }

    pub(crate) fn is_loading_any(&self) -> bool {
        !self.loading.is_empty()
    }

    /// Kafka `validateGroupStatus`.
    pub(crate) fn validate(&self, group_id: &str, rule: GroupIdRule) -> Option<ResponseError> {
        if rule == GroupIdRule::NonEmpty && group_id.is_empty() {
            Some(ResponseError::InvalidGroupId)
        } else if !self.active {
            Some(ResponseError::CoordinatorNotAvailable)
        } else if self
            .owned
            .as_ref()
            .is_some_and(|o| !o.contains(&self.partition_for(group_id)))
        {
            Some(ResponseError::NotCoordinator)
        } else if self.loading.contains(&self.partition_for(group_id)) {
            Some(ResponseError::CoordinatorLoadInProgress)
        } else {
            None
        }
    }

    /// Answers to parked requests produced since the last call.
    pub(crate) fn take_replies(&mut self) -> Vec<Reply> {
        std::mem::take(&mut self.replies)
    }

    /// Queue an answer to a parked request.
    pub(crate) fn push_reply(&mut self, reply: Reply) {
        self.replies.push(reply);
    }

    pub(crate) fn group(&self, group_id: &str) -> Option<&Group> {
        self.groups.get(group_id)
    }

    /// Run `f` on `group_id`'s group (if present), then fire its due timers.
    pub(crate) fn with_group<T>(
        &mut self,
        group_id: &str,
        now: i64,
        store: &mut dyn OffsetsStore,
        f: impl FnOnce(&mut Ops<'_>) -> T,
    ) -> Option<T> {
        let partition = self.partition_for(group_id);
        let group = self.groups.get_mut(group_id)?;
        let mut ops = Ops {
            group,
            config: &self.config,
            replies: &mut self.replies,
            store,
            now,
            partition,
        };
        let out = f(&mut ops);
        ops.poll_timers();
        Some(out)
    }

    /// Create an Empty group if absent.
    pub(crate) fn get_or_create(&mut self, group_id: &str, now: i64) {
        self.groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id, GroupState::Empty, now));
    }

    /// Fire every deadline that is due at `now`, in every group.
    pub(crate) fn poll_timers(&mut self, now: i64, store: &mut dyn OffsetsStore) {
        let due: Vec<String> = self
            .groups
            .values()
            .filter(|g| g.next_deadline().is_some_and(|d| d <= now))
            .map(|g| g.id.clone())
            .collect();
        for id in due {
            self.with_group(&id, now, store, |_| ());
        }
        self.consumer_poll_timers(now, store);
    }

    /// The earliest deadline of any group.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.groups.values().filter_map(Group::next_deadline).min()
    }
}

impl Group {
    /// The earliest of the group's timers and its members' deadlines.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        let members = self.members.values().filter_map(|m| m.heartbeat_deadline);
        let pending = self.pending_members.values().copied();
        let join = self.join_timer.map(|t| t.deadline());
        let sync = self.sync_timer.map(|t| t.deadline);
        let consumer = self
            .consumer
            .as_deref()
            .and_then(|cg| cg.members.values().filter_map(|m| m.next_deadline()).min());
        members
            .chain(pending)
            .chain(join)
            .chain(sync)
            .chain(consumer)
            .min()
    }
}

impl Ops<'_> {
    /// Answer the JoinGroup `member_id` is parked on, if any.
    pub(crate) fn invoke_join(&mut self, member_id: &str, result: super::api::JoinResult) {
        if let Some(ticket) = self
            .group
            .members
            .get_mut(member_id)
            .and_then(|m| m.awaiting_join.take())
        {
            self.replies.push(Reply::Join(ticket, result));
        }
    }

    /// Answer the SyncGroup `member_id` is parked on; `true` if there was one.
    pub(crate) fn invoke_sync(&mut self, member_id: &str, result: super::api::SyncResult) -> bool {
        match self
            .group
            .members
            .get_mut(member_id)
            .and_then(|m| m.awaiting_sync.take())
        {
            Some(ticket) => {
                self.replies.push(Reply::Sync(ticket, result));
                true
            }
            None => false,
        }
    }

    pub(crate) fn reply_join(&mut self, ticket: Ticket, result: super::api::JoinResult) {
        self.replies.push(Reply::Join(ticket, result));
    }

    pub(crate) fn reply_sync(&mut self, ticket: Ticket, result: super::api::SyncResult) {
        self.replies.push(Reply::Sync(ticket, result));
    }

    /// Kafka `completeAndScheduleNextHeartbeatExpiration`.
    pub(crate) fn schedule_heartbeat(&mut self, member_id: &str) {
        let now = self.now;
        if let Some(m) = self.group.members.get_mut(member_id) {
            m.heartbeat_deadline = Some(now + i64::from(m.session_timeout_ms));
        }
    }
}
