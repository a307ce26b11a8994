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

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api::{CommitPartition, CommitRequest};

pub(crate) async fn handle(ctx: &RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let broker = &ctx.broker;
    // (topic index, partition index, known?)
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    for (ti, t) in req.topics.iter().enumerate() {
        let topic = t.name.to_string();
        let count = broker.topics.get(&topic).map_or(0, |info| info.partitions);
        for (pi, p) in t.partitions.iter().enumerate() {
            let known = (0..count).contains(&p.partition_index);
            slots.push((ti, pi, known));
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
    for (ti, pi, known) in slots {
        let error = if known {
            results.next().flatten()
        } else {
            Some(ResponseError::UnknownTopicOrPartition)
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
