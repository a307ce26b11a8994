//! DeleteGroups (key 42), versions 0–2: delete empty groups with their
//! offsets (tombstones in `__consumer_offsets`); NON_EMPTY_GROUP while
//! members remain, GROUP_ID_NOT_FOUND for unknown groups.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use super::RequestContext;
use crate::error_code::code_of;

pub(crate) async fn handle(ctx: &RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let ids: Vec<String> = req.groups_names.iter().map(|g| g.to_string()).collect();
    let errors = ctx.broker.groups.delete_groups(&ctx.broker, ids).await;
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
