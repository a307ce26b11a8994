//! OffsetForLeaderEpoch (key 23), versions 2–4: the end offset of a leader
//! epoch, from the partition's leader-epoch cache, with current-epoch fencing.

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use strata_log::LeaderEpoch;
use strata_security::acl::{AclOperation, ResourceType};

use super::list_offsets::check_epoch;
use super::RequestContext;
use crate::api_error::ApiError;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    // KIP-320: consumers use this API too, so DESCRIBE on the topic is
    // enough when CLUSTER_ACTION (a follower's right) is missing.
    let cluster_action = ctx.authorize_cluster_quietly(AclOperation::ClusterAction);
    let describable = if cluster_action {
        None
    } else {
        Some(ctx.authorized_names(
            AclOperation::Describe,
            ResourceType::Topic,
            req.topics.iter().map(|t| t.topic.as_str()),
        ))
    };
    let broker = ctx.broker.clone();
    broker
        .clone()
        .blocking(move |b| {
            let mut resp = OffsetForLeaderEpochResponse::default();
            for t in req.topics {
                let mut out = OffsetForLeaderTopicResult::default();
                out.topic = t.topic.clone();
                let allowed = describable
                    .as_ref()
                    .is_none_or(|d| d.contains(t.topic.as_str()));
                let info = b.topics.get(t.topic.as_str());
                for p in t.partitions {
                    let mut e = EpochEndOffset::default();
                    e.partition = p.partition;
                    let result = allowed
                        .then_some(info.as_ref())
                        .ok_or(ApiError::TopicAuthorizationFailed)
                        .and_then(|info| info.ok_or(ApiError::UnknownTopicOrPartition))
                        .and_then(|info| {
                            check_epoch(b.leader_epoch(info, p.partition), p.current_leader_epoch)?;
                            b.partition_log(info, p.partition)
                        });
                    match result {
                        Ok(log) => match log.end_offset_for_epoch(LeaderEpoch(p.leader_epoch)) {
                            Some((epoch, offset)) => {
                                e.leader_epoch = epoch.0;
                                e.end_offset = offset.0;
                            }
                            None => {
                                e.leader_epoch = -1;
                                e.end_offset = -1;
                            }
                        },
                        Err(err) => {
                            e.error_code = err.code();
                            e.leader_epoch = -1;
                            e.end_offset = -1;
                        }
                    }
                    out.partitions.push(e);
                }
                resp.topics.push(out);
            }
            resp
        })
        .await
}
