//! OffsetCommit (key 8), versions 2–9. Partitions of topics this broker
//! does not have get UNKNOWN_TOPIC_OR_PARTITION (Kafka checks its metadata
//! cache first); the rest go to the coordinator in one write.
//! v2–v4 carry a retention time (-1 = `offsets.retention.minutes`); v6+ the
//! committed leader epoch; v7+ the group instance id.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api::{CommitPartition, CommitRequest};

pub(crate) async fn handle(ctx: &RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let broker = &ctx.broker;
    if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.as_str(),
    ) {
        // Kafka's error response: every partition carries the group error.
        let mut resp = OffsetCommitResponse::default();
        resp.topics = error_topics(&req, ResponseError::GroupAuthorizationFailed);
        return resp;
    }
    let readable = ctx.authorized_names(
        AclOperation::Read,
        ResourceType::Topic,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    // (topic index, partition index, Ok or why it is not committed):
    // READ on the topic first, then its existence (Kafka's order).
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    for (ti, t) in req.topics.iter().enumerate() {
        let topic = t.name.to_string();
        let allowed = readable.contains(&topic);
        let count = broker.topics.get(&topic).map_or(0, |info| info.partitions);
        for (pi, p) in t.partitions.iter().enumerate() {
            let slot = if !allowed {
                Err(ResponseError::TopicAuthorizationFailed)
            } else if (0..count).contains(&p.partition_index) {
                Ok(())
            } else {
                Err(ResponseError::UnknownTopicOrPartition)
            };
            let known = slot.is_ok();
            slots.push((ti, pi, slot));
            if known {
                partitions.push(CommitPartition {
                    topic: topic.clone(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if ctx.version >= 6 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                    commit_timestamp: -1,
                });
            }
        }
    }
    let commit = CommitRequest {
        group_id: req.group_id.to_string(),
        generation_id: req.generation_id_or_member_epoch,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.as_ref().map(|s| s.to_string()),
        retention_time_ms: if (2..=4).contains(&ctx.version) {
            req.retention_time_ms
        } else {
            -1
        },
        partitions,
        txn: None,
    };
    let mut results = if commit.partitions.is_empty() {
        Vec::new()
    } else {
        broker.groups.commit(broker, commit).await
    }
    .into_iter();
    let mut topics: Vec<OffsetCommitResponseTopic> = req
        .topics
        .iter()
        .map(|t| {
            let mut out = OffsetCommitResponseTopic::default();
            out.name = t.name.clone();
            out
        })
        .collect();
    for (ti, pi, slot) in slots {
        let error = match slot {
            Ok(()) => results.next().flatten(),
            Err(e) => Some(e),
        };
        let mut p = OffsetCommitResponsePartition::default();
        p.partition_index = req.topics[ti].partitions[pi].partition_index;
        p.error_code = code_of(error);
        topics[ti].partitions.push(p);
    }
    let mut resp = OffsetCommitResponse::default();
    resp.topics = topics;
    resp
}

/// Every requested partition answered with `error`.
fn error_topics(req: &OffsetCommitRequest, error: ResponseError) -> Vec<OffsetCommitResponseTopic> {
    req.topics
        .iter()
        .map(|t| {
            let mut out = OffsetCommitResponseTopic::default();
            out.name = t.name.clone();
            out.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut r = OffsetCommitResponsePartition::default();
                    r.partition_index = p.partition_index;
                    r.error_code = error.code();
                    r
                })
                .collect();
            out
        })
        .collect()
}
