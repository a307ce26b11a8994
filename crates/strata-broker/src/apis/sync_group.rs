//! SyncGroup (key 14), versions 0–5: the leader's assignment in, each
//! member's assignment out once the leader's SyncGroup is stored. v5 checks
//! and returns the protocol type and name.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api::SyncRequest;

pub(crate) async fn handle(ctx: &RequestContext, req: SyncGroupRequest) -> SyncGroupResponse {
    if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.as_str(),
    ) {
        let mut resp = SyncGroupResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let sync = SyncRequest {
        group_id: req.group_id.to_string(),
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.map(|s| s.to_string()),
        protocol_type: req.protocol_type.map(|s| s.to_string()),
        protocol_name: req.protocol_name.map(|s| s.to_string()),
        assignments: req
            .assignments
            .into_iter()
            .map(|a| (a.member_id.to_string(), a.assignment))
            .collect(),
    };
    let r = ctx.broker.groups.sync(&ctx.broker, sync).await;
    let mut resp = SyncGroupResponse::default();
    resp.error_code = code_of(r.error);
    if ctx.version >= 5 {
        resp.protocol_type = r.protocol_type.map(StrBytes::from_string);
        resp.protocol_name = r.protocol_name.map(StrBytes::from_string);
    }
    resp.assignment = r.assignment;
    resp
}
