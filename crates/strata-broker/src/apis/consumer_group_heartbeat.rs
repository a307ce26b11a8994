//! ConsumerGroupHeartbeat (key 68), versions 0–1: the KIP-848 member
//! heartbeat. v1 (Kafka 4.0) has the client name itself and may subscribe
//! by regular expression; librdkafka 2.10+ speaks only v1.
//!
//! Needs READ on the group (GROUP_AUTHORIZATION_FAILED for the whole
//! request) and DESCRIBE on every topic named in the subscription
//! (TOPIC_AUTHORIZATION_FAILED), as Kafka 4.0.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::join_group::client_host;
use super::RequestContext;
use crate::error_code::code_of;
use crate::group::consumer::api::ConsumerHeartbeat;
use crate::group::consumer::assignment::TopicPartitions as Owned;

fn refused(error: ResponseError, message: Option<String>) -> ConsumerGroupHeartbeatResponse {
    let mut resp = ConsumerGroupHeartbeatResponse::default();
    resp.error_code = error.code();
    resp.error_message = message.map(StrBytes::from_string);
    resp
}

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.as_str(),
    ) {
        return refused(ResponseError::GroupAuthorizationFailed, None);
    }
    if let Some(names) = &req.subscribed_topic_names {
        let denied: Vec<&str> = names
            .iter()
            .map(|n| n.as_str())
            .filter(|n| !ctx.authorize_quietly(AclOperation::Describe, ResourceType::Topic, n))
            .collect();
        if !denied.is_empty() {
            return refused(
                ResponseError::TopicAuthorizationFailed,
                Some(format!("Unauthorized topics: {}", denied.join(", "))),
            );
        }
    }
    let topic_partitions = req.topic_partitions.as_ref().map(|tps| {
        let mut owned = Owned::new();
        for t in tps {
            if !t.partitions.is_empty() {
                owned
                    .entry(t.topic_id)
                    .or_default()
                    .extend(t.partitions.iter().copied());
            }
        }
        owned
    });
    let hb = ConsumerHeartbeat {
        version: ctx.version,
        group_id: req.group_id.to_string(),
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.map(|s| s.to_string()),
        rack_id: req.rack_id.map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topic_names: req
            .subscribed_topic_names
            .map(|v| v.iter().map(|n| n.to_string()).collect()),
        subscribed_topic_regex: if ctx.version >= 1 {
            req.subscribed_topic_regex.map(|s| s.to_string())
        } else {
            None
        },
        server_assignor: req.server_assignor.map(|s| s.to_string()),
        topic_partitions,
        client_id: ctx
            .header
            .client_id
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        client_host: client_host(ctx.peer),
    };
    let r = ctx.broker.groups.consumer_heartbeat(&ctx.broker, hb).await;
    if r.error.is_some() {
        return refused(
            r.error.unwrap_or(ResponseError::UnknownServerError),
            r.error_message,
        );
    }
    let mut resp = ConsumerGroupHeartbeatResponse::default();
    resp.error_code = code_of(None);
    resp.member_id = r.member_id.map(StrBytes::from_string);
    resp.member_epoch = r.member_epoch;
    resp.heartbeat_interval_ms = r.heartbeat_interval_ms;
    resp.assignment = r.assignment.map(|a| {
        let mut out = Assignment::default();
        out.topic_partitions = a
            .into_iter()
            .map(|(id, parts)| {
                let mut t = TopicPartitions::default();
                t.topic_id = id;
                t.partitions = parts.into_iter().collect();
                t
            })
            .collect();
        out
    });
    resp
}
