//! LeaveGroup (key 13), versions 0–5: v0–2 name one member; v3+ a batch of
//! members, each with an optional `group_instance_id` (an empty member id
//! with an instance id removes a static member administratively).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api::LeaveMember;

pub(crate) async fn handle(ctx: &RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse {
    if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.as_str(),
    ) {
        let mut resp = LeaveGroupResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let members: Vec<LeaveMember> = if ctx.version >= 3 {
        req.members
            .into_iter()
            .map(|m| LeaveMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.map(|s| s.to_string()),
            })
            .collect()
    } else {
        vec![LeaveMember {
            member_id: req.member_id.to_string(),
            group_instance_id: None,
        }]
    };
    let r = ctx
        .broker
        .groups
        .leave(&ctx.broker, req.group_id.to_string(), members)
        .await;
    let mut resp = LeaveGroupResponse::default();
    if ctx.version >= 3 {
        resp.error_code = code_of(r.error);
        resp.members = r
            .members
            .into_iter()
            .map(|(m, e)| {
                let mut out = MemberResponse::default();
                out.member_id = StrBytes::from_string(m.member_id);
                out.group_instance_id = m.group_instance_id.map(StrBytes::from_string);
                out.error_code = code_of(e);
                out
            })
            .collect();
    } else {
        // One member: its error is the answer.
        let member_error = r.members.first().and_then(|(_, e)| *e);
        resp.error_code = code_of(r.error.or(member_error));
    }
    resp
}
