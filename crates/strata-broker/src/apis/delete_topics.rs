//! DeleteTopics (key 20), versions 1–6: by name (v1–5 `topic_names`, v6
//! `topics` with a name or an id). Partition directories are renamed
//! `<tp>.<uuid>-delete` at once and removed after `file.delete.delay.ms`.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::RequestContext;
use crate::api_error::ApiError;

pub(crate) async fn handle(ctx: &RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let targets: Vec<(Option<String>, Uuid)> = if ctx.version >= 6 {
        req.topics
            .into_iter()
            .map(|t| (t.name.map(|n| n.to_string()), t.topic_id))
            .collect()
    } else {
        req.topic_names
            .into_iter()
            .map(|n| (Some(n.to_string()), Uuid::nil()))
            .collect()
    };
    let version = ctx.version;
    let resp = ctx
        .broker
        .blocking(move |b| {
            let mut resp = DeleteTopicsResponse::default();
            for (name, id) in targets {
                let resolved = match (&name, id.is_nil()) {
                    (Some(n), _) => b.topics.get(n).ok_or(ApiError::UnknownTopicOrPartition),
                    (None, false) => b.topics.get_by_id(id).ok_or(ApiError::UnknownTopicId),
                    (None, true) => Err(ApiError::InvalidRequest {
                        reason: "topic without name or id",
                    }),
                };
                let result = resolved.and_then(|info| b.delete_topic(&info.name));
                let mut r = DeletableTopicResult::default();
                r.name = name.clone().map(|n| TopicName(StrBytes::from_string(n)));
                if version >= 6 {
                    r.topic_id = id;
                }
                match result {
                    Ok(info) => {
                        r.name = Some(TopicName(StrBytes::from_string(info.name)));
                        if version >= 6 {
                            r.topic_id = info.id;
                        }
                    }
                    Err(e) => {
                        r.error_code = e.code();
                        if version >= 5 {
                            r.error_message = Some(StrBytes::from_string(e.message()));
                        }
                    }
                }
                resp.responses.push(r);
            }
            resp
        })
        .await;
    resp
}
