//! Test driver for [`GroupManager`]: a clock that only moves when told,
//! tickets, and the replies collected per ticket. No runtime, no sleeps.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::api::{
    CommitPartition, CommitRequest, HeartbeatRequest, JoinRequest, JoinResult, LeaveMember,
    LeaveResult, Reply, SyncRequest, SyncResult,
};
use super::config::GroupConfig;
use super::manager::GroupManager;
use super::member::{Protocol, Ticket};
use super::store::MemoryStore;

pub(crate) const SESSION: i32 = 10_000;
pub(crate) const REBALANCE: i32 = 30_000;

/// A ConsumerProtocolSubscription v0 for `topics` (null user data).
pub(crate) fn subscription(topics: &[&str]) -> Bytes {
    let mut b = vec![0, 0];
    b.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for t in topics {
        b.extend_from_slice(&(t.len() as i16).to_be_bytes());
        b.extend_from_slice(t.as_bytes());
    }
    b.extend_from_slice(&(-1i32).to_be_bytes());
    Bytes::from(b)
}

pub(crate) fn protocols(names: &[&str], topics: &[&str]) -> Vec<Protocol> {
    names
        .iter()
        .map(|n| Protocol {
            name: n.to_string(),
            metadata: subscription(topics),
        })
        .collect()
}

pub(crate) struct Harness {
    pub m: GroupManager,
    pub store: MemoryStore,
    pub now: i64,
    next_ticket: u64,
    joins: HashMap<Ticket, JoinResult>,
    syncs: HashMap<Ticket, SyncResult>,
}

impl Harness {
    pub(crate) fn new(initial_delay_ms: i32) -> Harness {
        let config = GroupConfig {
            initial_rebalance_delay_ms: initial_delay_ms,
            ..GroupConfig::default()
        };
        Harness::with_config(config)
    }

    pub(crate) fn with_config(config: GroupConfig) -> Harness {
        Harness {
            m: GroupManager::new(config),
            store: MemoryStore::default(),
            now: 1_000_000,
            next_ticket: 0,
            joins: HashMap::new(),
            syncs: HashMap::new(),
        }
    }

    fn drain(&mut self) {
        for r in self.m.take_replies() {
            match r {
                Reply::Join(t, j) => assert!(
                    self.joins.insert(t, j).is_none(),
                    "two join replies for {t:?}"
                ),
                Reply::Sync(t, s) => assert!(
                    self.syncs.insert(t, s).is_none(),
                    "two sync replies for {t:?}"
                ),
            }
        }
    }

    fn ticket(&mut self) -> Ticket {
        self.next_ticket += 1;
        Ticket(self.next_ticket)
    }

    pub(crate) fn join_request(
        &self,
        group: &str,
        member: &str,
        instance: Option<&str>,
    ) -> JoinRequest {
        JoinRequest {
            group_id: group.into(),
            member_id: member.into(),
            group_instance_id: instance.map(str::to_string),
            require_known_member_id: true,
            supports_skip_assignment: true,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: REBALANCE,
            session_timeout_ms: SESSION,
            protocol_type: "consumer".into(),
            protocols: protocols(&["range"], &["t"]),
        }
    }

    pub(crate) fn join_with(&mut self, req: JoinRequest) -> Ticket {
        let t = self.ticket();
        self.m.join(req, t, self.now, &mut self.store);
        self.drain();
        t
    }

    pub(crate) fn join(&mut self, group: &str, member: &str) -> Ticket {
        let req = self.join_request(group, member, None);
        self.join_with(req)
    }

    /// A new dynamic member: MEMBER_ID_REQUIRED, then the rejoin ticket.
    pub(crate) fn join_new(&mut self, group: &str) -> (String, Ticket) {
        let t = self.join(group, "");
        let r = self.take_join(t).expect("MEMBER_ID_REQUIRED is immediate");
        assert_eq!(r.error, Some(ResponseError::MemberIdRequired));
        assert!(r.member_id.starts_with("client-"));
        let t2 = self.join(group, &r.member_id);
        (r.member_id, t2)
    }

    pub(crate) fn take_join(&mut self, t: Ticket) -> Option<JoinResult> {
        self.joins.remove(&t)
    }

    pub(crate) fn sync(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        assignments: &[(&str, &[u8])],
    ) -> Ticket {
        let t = self.ticket();
        let req = SyncRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: None,
            assignments: assignments
                .iter()
                .map(|(m, a)| (m.to_string(), Bytes::copy_from_slice(a)))
                .collect(),
        };
        self.m.sync(req, t, self.now, &mut self.store);
        self.drain();
        t
    }

    pub(crate) fn take_sync(&mut self, t: Ticket) -> Option<SyncResult> {
        self.syncs.remove(&t)
    }

    pub(crate) fn heartbeat(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
    ) -> Option<ResponseError> {
        self.heartbeat_static(group, member, None, generation)
    }

    pub(crate) fn heartbeat_static(
        &mut self,
        group: &str,
        member: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> Option<ResponseError> {
        let req = HeartbeatRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: instance.map(str::to_string),
        };
        let r = self.m.heartbeat(req, self.now, &mut self.store);
        self.drain();
        r
    }

    /// LeaveGroup of one dynamic member.
    pub(crate) fn leave(&mut self, group: &str, member: &str) -> LeaveResult {
        let leaving = LeaveMember {
            member_id: member.to_string(),
            group_instance_id: None,
        };
        let r = self
            .m
            .leave(group, vec![leaving], self.now, &mut self.store);
        self.drain();
        r
    }

    pub(crate) fn advance(&mut self, ms: i64) {
        self.now += ms;
        self.m.poll_timers(self.now, &mut self.store);
        self.drain();
    }

    pub(crate) fn commit(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        parts: &[(&str, i32, i64)],
    ) -> Vec<Option<ResponseError>> {
        let req = CommitRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
            retention_time_ms: -1,
            partitions: parts
                .iter()
                .map(|(t, p, o)| CommitPartition {
                    topic: t.to_string(),
                    partition: *p,
                    offset: *o,
                    leader_epoch: 3,
                    metadata: Some("m".into()),
                    commit_timestamp: -1,
                })
                .collect(),
            txn: None,
        };
        let r = self.m.commit_offsets(&req, self.now, &mut self.store);
        self.drain();
        r
    }

    pub(crate) fn state(&self, group: &str) -> &'static str {
        self.m.group(group).map_or("absent", |g| g.state().name())
    }

    pub(crate) fn generation(&self, group: &str) -> i32 {
        self.m.group(group).map_or(-1, |g| g.generation_id)
    }

    /// A one-member group in Stable state (delay 0): returns the member id.
    pub(crate) fn stable_single(&mut self, group: &str) -> String {
        let (id, t) = self.join_new(group);
        self.advance(0);
        let r = self
            .take_join(t)
            .expect("join completes after the zero delay");
        assert_eq!(r.error, None);
        let s = self.sync(group, &id, r.generation_id, &[(&id, b"a1")]);
        assert_eq!(self.take_sync(s).unwrap().assignment.as_ref(), b"a1");
        id
    }
}
