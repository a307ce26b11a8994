//! DeleteGroups (key 42), versions 0–2: delete empty groups with their
//! offsets (tombstones in `__consumer_offsets`); NON_EMPTY_GROUP while
//! members remain, GROUP_ID_NOT_FOUND for unknown groups.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;

pub(crate) async fn handle(ctx: &RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let allowed: Vec<bool> = req
        .groups_names
        .iter()
        .map(|g| ctx.authorize(AclOperation::Delete, ResourceType::Group, g.as_str()))
        .collect();
    // Only the groups the principal may DELETE reach the coordinator.
    let ids: Vec<String> = req
        .groups_names
        .iter()
        .zip(&allowed)
        .filter(|(_, ok)| **ok)
        .map(|(g, _)| g.to_string())
        .collect();
    let mut deleted = if ids.is_empty() {
        Vec::new()
    } else {
        ctx.broker.groups.delete_groups(&ctx.broker, ids).await
    }
    .into_iter();
    let errors = allowed.into_iter().map(|ok| {
        if ok {
            deleted.next().flatten()
        } else {
            Some(ResponseError::GroupAuthorizationFailed)
        }
    });
    let mut resp = DeleteGroupsResponse::default();
    resp.results = req
        .groups_names
        .into_iter()
        .zip(errors)
        .map(|(id, e)| {
            let mut r = DeletableGroupResult::default();
            r.group_id = id;
            r.error_code = code_of(e);
            r
        })
        .collect();
    resp
}
