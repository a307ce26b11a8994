//! OffsetDelete (key 47), version 0: remove committed offsets of a group
//! that is empty or no longer subscribed to the topics
//! (GROUP_SUBSCRIBED_TO_TOPIC otherwise, NON_EMPTY_GROUP for non-consumer
//! groups with members).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;

pub(crate) async fn handle(ctx: &RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let mut resp = OffsetDeleteResponse::default();
    if !ctx.authorize(
        AclOperation::Delete,
        ResourceType::Group,
        req.group_id.as_str(),
    ) {
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    // Partitions of topics without READ are answered here and never reach
    // the coordinator.
    let readable = ctx.authorized_names(
        AclOperation::Read,
        ResourceType::Topic,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    let partitions: Vec<(String, i32)> = req
        .topics
        .iter()
        .filter(|t| readable.contains(t.name.as_str()))
        .flat_map(|t| {
            let name = t.name.to_string();
            t.partitions
                .iter()
                .map(move |p| (name.clone(), p.partition_index))
        })
        .collect();
    let result = ctx
        .broker
        .groups
        .delete_offsets(&ctx.broker, req.group_id.to_string(), partitions)
        .await;
    match result {
        Err(e) => resp.error_code = e.code(),
        Ok(errors) => {
            let mut errors = errors.into_iter();
            for t in req.topics {
                let allowed = readable.contains(t.name.as_str());
                let mut out = OffsetDeleteResponseTopic::default();
                out.name = t.name;
                for p in t.partitions {
                    let mut rp = OffsetDeleteResponsePartition::default();
                    rp.partition_index = p.partition_index;
                    rp.error_code = if allowed {
                        code_of(errors.next().flatten())
                    } else {
                        ResponseError::TopicAuthorizationFailed.code()
                    };
                    out.partitions.push(rp);
                }
                resp.topics.push(out);
            }
        }
    }
    resp
}
