//! JoinGroup (key 11), versions 0–9: translate to the coordinator's
//! [`JoinRequest`], wait for the rebalance, translate back.
//!
//! v0 has no rebalance timeout (Kafka uses the session timeout); v4+ new
//! members get MEMBER_ID_REQUIRED first; v5+ carry `group_instance_id`;
//! v7+ answer with the protocol type; v9 `skip_assignment`. The client
//! host is not known to handlers (the request context carries no peer
//! address), so it is reported as `/unknown`.

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::RequestContext;
use crate::group::api::JoinRequest;
use crate::group::member::Protocol;

/// Client host shown by DescribeGroups until the context knows the peer.
pub(crate) const UNKNOWN_CLIENT_HOST: &str = "/unknown";

pub(crate) async fn handle(ctx: &RequestContext, req: JoinGroupRequest) -> JoinGroupResponse {
    let client_id = ctx
        .header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let join = JoinRequest {
        group_id: req.group_id.to_string(),
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.map(|s| s.to_string()),
        require_known_member_id: ctx.version >= 4,
        supports_skip_assignment: ctx.version >= 9,
        client_id,
        client_host: UNKNOWN_CLIENT_HOST.to_string(),
        rebalance_timeout_ms: if ctx.version == 0 {
            req.session_timeout_ms
        } else {
            req.rebalance_timeout_ms
        },
        session_timeout_ms: req.session_timeout_ms,
        protocol_type: req.protocol_type.to_string(),
        protocols: req
            .protocols
            .into_iter()
            .map(|p| Protocol {
                name: p.name.to_string(),
                metadata: p.metadata,
            })
            .collect(),
    };
    let r = ctx.broker.groups.join(&ctx.broker, join).await;
    let mut resp = JoinGroupResponse::default();
    resp.error_code = r.error.map_or(0, |e| e.code());
    resp.generation_id = r.generation_id;
    if ctx.version >= 7 {
        resp.protocol_type = r.protocol_type.map(StrBytes::from_string);
        resp.protocol_name = r.protocol_name.map(StrBytes::from_string);
    } else {
        // Not nullable before v7.
        resp.protocol_name = Some(StrBytes::from_string(r.protocol_name.unwrap_or_default()));
    }
    resp.leader = StrBytes::from_string(r.leader_id);
    resp.skip_assignment = ctx.version >= 9 && r.skip_assignment;
    resp.member_id = StrBytes::from_string(r.member_id);
    resp.members = r
        .members
        .into_iter()
        .map(|m| {
            let mut out = JoinGroupResponseMember::default();
            out.member_id = StrBytes::from_string(m.member_id);
            if ctx.version >= 5 {
                out.group_instance_id = m.group_instance_id.map(StrBytes::from_string);
            }
            out.metadata = m.metadata;
            out
        })
        .collect();
    resp
}
