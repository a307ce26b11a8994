//! Heartbeat (key 12), versions 0–4: keeps a member's session alive and
//! tells it to rejoin (REBALANCE_IN_PROGRESS) when a rebalance started.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api;

pub(crate) async fn handle(ctx: &RequestContext, req: HeartbeatRequest) -> HeartbeatResponse {
    if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.as_str(),
    ) {
        let mut resp = HeartbeatResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let hb = api::HeartbeatRequest {
        group_id: req.group_id.to_string(),
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.map(|s| s.to_string()),
    };
    let error = ctx.broker.groups.heartbeat(&ctx.broker, hb).await;
    let mut resp = HeartbeatResponse::default();
    resp.error_code = code_of(error);
    resp
}
