//! DescribeGroups (key 15), versions 0–5: state, protocol and members; a
//! Stable group also shows each member's subscription and assignment. An
//! unknown group is described as Dead with no error, as Kafka does.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut resp = DescribeGroupsResponse::default();
    for group_id in req.groups {
        if !ctx.authorize(
            AclOperation::Describe,
            ResourceType::Group,
            group_id.as_str(),
        ) {
            let mut g = DescribedGroup::default();
            g.group_id = group_id;
            g.error_code = ResponseError::GroupAuthorizationFailed.code();
            resp.groups.push(g);
            continue;
        }
        let s = ctx
            .broker
            .groups
            .describe(&ctx.broker, group_id.as_str())
            .await;
        let mut g = DescribedGroup::default();
        g.group_id = group_id;
        g.error_code = code_of(s.error);
        g.group_state = StrBytes::from_static_str(s.state);
        g.protocol_type = StrBytes::from_string(s.protocol_type);
        g.protocol_data = StrBytes::from_string(s.protocol);
        g.members = s
            .members
            .into_iter()
            .map(|m| {
                let mut out = DescribedGroupMember::default();
                out.member_id = StrBytes::from_string(m.member_id);
                if ctx.version >= 4 {
                    out.group_instance_id = m.group_instance_id.map(StrBytes::from_string);
                }
                out.client_id = StrBytes::from_string(m.client_id);
                out.client_host = StrBytes::from_string(m.client_host);
                out.member_metadata = m.metadata;
                out.member_assignment = m.assignment;
                out
            })
            .collect();
        if ctx.version >= 3 && req.include_authorized_operations {
            g.authorized_operations =
                ctx.authorized_operations(ResourceType::Group, g.group_id.as_str());
        }
        resp.groups.push(g);
    }
    resp
}
