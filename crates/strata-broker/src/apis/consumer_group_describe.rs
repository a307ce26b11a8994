//! ConsumerGroupDescribe (key 69), versions 0–1: KIP-848 groups with their
//! epochs, assignor and members' current and target assignments. Needs
//! DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for that group).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::consumer::api::DescribedTopic;

/// `MemberType` of v1: 1 = a member of the consumer protocol.
const CONSUMER_MEMBER_TYPE: i8 = 1;

fn assignment(topics: Vec<DescribedTopic>) -> Assignment {
    let mut out = Assignment::default();
    out.topic_partitions = topics
        .into_iter()
        .map(|t| {
            let mut tp = TopicPartitions::default();
            tp.topic_id = t.topic_id;
            tp.topic_name = TopicName(StrBytes::from_string(t.topic_name));
            tp.partitions = t.partitions;
            tp
        })
        .collect();
    out
}

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let mut resp = ConsumerGroupDescribeResponse::default();
    let mut allowed = Vec::new();
    let mut order = Vec::new();
    for id in &req.group_ids {
        let id = id.to_string();
        let ok = ctx.authorize(AclOperation::Describe, ResourceType::Group, &id);
        if ok {
            allowed.push(id.clone());
        }
        order.push((id, ok));
    }
    let mut described = ctx
        .broker
        .groups
        .consumer_describe(&ctx.broker, allowed)
        .await
        .into_iter();
    for (id, ok) in order {
        let mut g = DescribedGroup::default();
        g.group_id = GroupId(StrBytes::from_string(id.clone()));
        if !ok {
            g.error_code = ResponseError::GroupAuthorizationFailed.code();
            resp.groups.push(g);
            continue;
        }
        let Some(d) = described.next() else { break };
        g.error_code = code_of(d.error);
        g.error_message = d.error_message.map(StrBytes::from_string);
        g.group_state = StrBytes::from_static_str(d.state);
        g.group_epoch = d.group_epoch;
        g.assignment_epoch = d.assignment_epoch;
        g.assignor_name = StrBytes::from_string(d.assignor_name);
        g.members = d
            .members
            .into_iter()
            .map(|m| {
                let mut out = Member::default();
                out.member_id = StrBytes::from_string(m.member_id);
                out.instance_id = m.instance_id.map(StrBytes::from_string);
                out.rack_id = m.rack_id.map(StrBytes::from_string);
                out.member_epoch = m.member_epoch;
                out.client_id = StrBytes::from_string(m.client_id);
                out.client_host = StrBytes::from_string(m.client_host);
                out.subscribed_topic_names = m
                    .subscribed_topic_names
                    .into_iter()
                    .map(|n| TopicName(StrBytes::from_string(n)))
                    .collect();
                out.subscribed_topic_regex = m.subscribed_topic_regex.map(StrBytes::from_string);
                out.assignment = assignment(m.assignment);
                out.target_assignment = assignment(m.target_assignment);
                out.member_type = CONSUMER_MEMBER_TYPE;
                out
            })
            .collect();
        if d.error.is_none() && req.include_authorized_operations {
            g.authorized_operations = ctx.authorized_operations(ResourceType::Group, &id);
        }
        resp.groups.push(g);
    }
    resp
}
