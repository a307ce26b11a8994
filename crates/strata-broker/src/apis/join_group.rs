//! JoinGroup (key 11), versions 0–9: translate to the coordinator's
//! [`JoinRequest`], wait for the rebalance, translate back.
//!
//! v0 has no rebalance timeout (Kafka uses the session timeout); v4+ new
//! members get MEMBER_ID_REQUIRED first; v5+ carry `group_instance_id`;
//! v7+ answer with the protocol type; v9 `skip_assignment`. The member's
//! client host is the connection's peer address written as Java's
//! `InetAddress.toString()` writes it (`/127.0.0.1`), as Kafka records it.

use std::net::{IpAddr, SocketAddr};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api::JoinRequest;
use crate::group::member::Protocol;

/// Client host recorded when the connection's peer address is unknown.
pub(crate) const UNKNOWN_CLIENT_HOST: &str = "/unknown";

/// The member host Kafka records: `InetAddress.toString()` of the client
/// address, an empty host name, `/`, then the literal address; Java writes
/// IPv6 as eight uncompressed lower-case hex groups and an IPv4-mapped IPv6
/// address as IPv4.
pub(crate) fn client_host(peer: Option<SocketAddr>) -> String {
    let Some(peer) = peer else {
        return UNKNOWN_CLIENT_HOST.to_string();
    };
    match peer.ip() {
        IpAddr::V4(v4) => format!("/{v4}"),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("/{v4}"),
            None => {
                let groups: Vec<String> = v6.segments().iter().map(|g| format!("{g:x}")).collect();
                format!("/{}", groups.join(":"))
            }
        },
    }
}

pub(crate) async fn handle(ctx: &RequestContext, req: JoinGroupRequest) -> JoinGroupResponse {
    if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.as_str(),
    ) {
        let mut resp = JoinGroupResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        resp.generation_id = -1;
        resp.protocol_name = (ctx.version < 7).then(StrBytes::default);
        return resp;
    }
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
        client_host: client_host(ctx.peer),
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
    resp.error_code = code_of(r.error);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_host_is_written_as_java_writes_an_inet_address() {
        let host = |s: &str| client_host(Some(s.parse().unwrap()));
        assert_eq!(host("127.0.0.1:40312"), "/127.0.0.1");
        assert_eq!(host("[::1]:9092"), "/0:0:0:0:0:0:0:1");
        assert_eq!(host("[fe80::1:abcd]:9092"), "/fe80:0:0:0:0:0:1:abcd");
        assert_eq!(host("[::ffff:10.1.2.3]:9092"), "/10.1.2.3");
        assert_eq!(client_host(None), UNKNOWN_CLIENT_HOST);
    }
}
