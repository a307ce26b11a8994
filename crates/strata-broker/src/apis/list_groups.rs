//! ListGroups (key 16), versions 0–5: every group, optionally filtered by
//! state (v4+, case-insensitive) and type (v5+: `classic` or `consumer`).

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;

pub(crate) async fn handle(ctx: &RequestContext, req: ListGroupsRequest) -> ListGroupsResponse {
    let states: Vec<String> = if ctx.version >= 4 {
        req.states_filter.iter().map(|s| s.to_string()).collect()
    } else {
        Vec::new()
    };
    let types: Vec<String> = if ctx.version >= 5 {
        req.types_filter.iter().map(|s| s.to_string()).collect()
    } else {
        Vec::new()
    };
    let (error, mut groups) = ctx.broker.groups.list(&ctx.broker, states, types).await;
    // DESCRIBE on the cluster lists every group; otherwise only the groups
    // the principal may DESCRIBE (a filter: denials are not refusals).
    if !ctx.authorize_cluster_quietly(AclOperation::Describe) {
        groups.retain(|g| {
            ctx.authorize_quietly(AclOperation::Describe, ResourceType::Group, &g.group_id)
        });
    }
    let mut resp = ListGroupsResponse::default();
    resp.error_code = code_of(error);
    resp.groups = groups
        .into_iter()
        .map(|g| {
            let mut out = ListedGroup::default();
            out.group_id = GroupId(StrBytes::from_string(g.group_id));
            out.protocol_type = StrBytes::from_string(g.protocol_type);
            if ctx.version >= 4 {
                out.group_state = StrBytes::from_static_str(g.state);
            }
            if ctx.version >= 5 {
                out.group_type = StrBytes::from_static_str(g.group_type);
            }
            out
        })
        .collect();
    resp
}
