//! OffsetFetch (key 9), versions 1–9: v1 one group and listed partitions;
//! v2+ a null topic list means every committed partition and a top-level
//! error; v7 `require_stable`; v8+ several groups per request.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api::FetchedOffset;

pub(crate) async fn handle(ctx: &RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse {
    let require_stable = ctx.version >= 7 && req.require_stable;
    let mut resp = OffsetFetchResponse::default();
    if ctx.version >= 8 {
        for g in req.groups {
            let wanted = g.topics.map(|ts| {
                ts.into_iter()
                    .flat_map(|t| {
                        let name = t.name.to_string();
                        t.partition_indexes
                            .into_iter()
                            .map(move |p| (name.clone(), p))
                    })
                    .collect::<Vec<_>>()
            });
            // v9 (KIP-848): a member of a consumer group names itself.
            let member = g
                .member_id
                .as_ref()
                .map(|m| (m.to_string(), g.member_epoch));
            let checked = match member {
                Some((id, epoch)) if ctx.version >= 9 => {
                    ctx.broker
                        .groups
                        .check_fetching_member(g.group_id.as_str(), &id, epoch)
                }
                _ => None,
            };
            let result = match checked {
                Some(e) => Err(e),
                None => fetch_authorized(ctx, g.group_id.as_str(), wanted, require_stable).await,
            };
            let mut out = OffsetFetchResponseGroup::default();
            out.group_id = g.group_id;
            match result {
                Ok(offsets) => {
                    for (name, parts) in by_topic(offsets) {
                        let mut t = OffsetFetchResponseTopics::default();
                        t.name = TopicName(StrBytes::from_string(name));
                        t.partitions = parts
                            .into_iter()
                            .map(|o| {
                                let mut p = OffsetFetchResponsePartitions::default();
                                p.partition_index = o.partition;
                                p.committed_offset = o.offset;
                                p.committed_leader_epoch = o.leader_epoch;
                                p.metadata = Some(StrBytes::from_string(o.metadata));
                                p.error_code = code_of(o.error);
                                p
                            })
                            .collect();
                        out.topics.push(t);
                    }
                }
                Err(e) => out.error_code = e.code(),
            }
            resp.groups.push(out);
        }
        return resp;
    }
    let wanted = req.topics.map(|ts| {
        ts.into_iter()
            .flat_map(|t| {
                let name = t.name.to_string();
                t.partition_indexes
                    .into_iter()
                    .map(move |p| (name.clone(), p))
            })
            .collect::<Vec<_>>()
    });
    let requested = wanted.clone();
    match fetch_authorized(ctx, req.group_id.as_str(), wanted, require_stable).await {
        Ok(offsets) => resp.topics = v1_topics(offsets),
        Err(e) if ctx.version >= 2 => resp.error_code = e.code(),
        Err(e) => {
            // v1 has no top-level error: report it on every partition.
            let failed = requested
                .unwrap_or_default()
                .into_iter()
                .map(|(topic, partition)| FetchedOffset {
                    topic,
                    partition,
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error: Some(e),
                })
                .collect();
            resp.topics = v1_topics(failed);
        }
    }
    resp
}

/// Group offsets by topic, keeping first-seen topic order.
/// One group's offsets as the principal may see them (Kafka's order):
/// DESCRIBE on the group or GROUP_AUTHORIZATION_FAILED; named topics
/// without DESCRIBE are answered TOPIC_AUTHORIZATION_FAILED (offset -1)
/// without asking the coordinator; an all-topics fetch leaves them out.
async fn fetch_authorized(
    ctx: &RequestContext,
    group_id: &str,
    wanted: Option<Vec<(String, i32)>>,
    require_stable: bool,
) -> Result<Vec<FetchedOffset>, ResponseError> {
    if !ctx.authorize(AclOperation::Describe, ResourceType::Group, group_id) {
        return Err(ResponseError::GroupAuthorizationFailed);
    }
    let broker = &ctx.broker;
    let Some(wanted) = wanted else {
        let mut offsets = broker
            .groups
            .fetch(broker, group_id, None, require_stable)
            .await?;
        let describable = ctx.authorized_names(
            AclOperation::Describe,
            ResourceType::Topic,
            offsets.iter().map(|o| o.topic.as_str()),
        );
        offsets.retain(|o| describable.contains(&o.topic));
        return Ok(offsets);
    };
    let describable = ctx.authorized_names(
        AclOperation::Describe,
        ResourceType::Topic,
        wanted.iter().map(|(t, _)| t.as_str()),
    );
    let (allowed, denied): (Vec<_>, Vec<_>) = wanted
        .into_iter()
        .partition(|(t, _)| describable.contains(t));
    let mut offsets = broker
        .groups
        .fetch(broker, group_id, Some(allowed), require_stable)
        .await?;
    offsets.extend(denied.into_iter().map(|(topic, partition)| FetchedOffset {
        topic,
        partition,
        offset: -1,
        leader_epoch: -1,
        metadata: String::new(),
        error: Some(ResponseError::TopicAuthorizationFailed),
    }));
    Ok(offsets)
}

fn by_topic(offsets: Vec<FetchedOffset>) -> Vec<(String, Vec<FetchedOffset>)> {
    let mut out: Vec<(String, Vec<FetchedOffset>)> = Vec::new();
    for o in offsets {
        match out.iter_mut().find(|(t, _)| *t == o.topic) {
            Some((_, v)) => v.push(o),
            None => out.push((o.topic.clone(), vec![o])),
        }
    }
    out
}

/// Pre-v8 topics.
fn v1_topics(offsets: Vec<FetchedOffset>) -> Vec<OffsetFetchResponseTopic> {
    by_topic(offsets)
        .into_iter()
        .map(|(name, parts)| {
            let mut t = OffsetFetchResponseTopic::default();
            t.name = TopicName(StrBytes::from_string(name));
            t.partitions = parts
                .into_iter()
                .map(|o| {
                    let mut p = OffsetFetchResponsePartition::default();
                    p.partition_index = o.partition;
                    p.committed_offset = o.offset;
                    p.committed_leader_epoch = o.leader_epoch;
                    p.metadata = Some(StrBytes::from_string(o.metadata));
                    p.error_code = code_of(o.error);
                    p
                })
                .collect();
            t
        })
        .collect()
}
