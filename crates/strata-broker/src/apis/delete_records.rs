//! DeleteRecords (key 21), versions 0–2: raise a partition's log start
//! offset (low watermark); -1 means "up to the high watermark"; an offset
//! above the high watermark is OFFSET_OUT_OF_RANGE.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use strata_log::Offset;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::api_error::ApiError;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    // DELETE on each topic, before its existence.
    let deletable = ctx.authorized_names(
        AclOperation::Delete,
        ResourceType::Topic,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    let resp = ctx
        .broker
        .blocking(move |b| {
            let mut resp = DeleteRecordsResponse::default();
            for t in req.topics {
                let mut out = DeleteRecordsTopicResult::default();
                out.name = t.name.clone();
                let allowed = deletable.contains(t.name.as_str());
                for p in t.partitions {
                    let mut r = DeleteRecordsPartitionResult::default();
                    r.partition_index = p.partition_index;
                    let result = allowed
                        .then(|| b.topics.get(t.name.as_str()))
                        .ok_or(ApiError::TopicAuthorizationFailed)
                        .and_then(|info| info.ok_or(ApiError::UnknownTopicOrPartition))
                        .and_then(|info| b.partition_log(&info, p.partition_index))
                        .and_then(|log| {
                            let hw = log.high_watermark();
                            let target = if p.offset == -1 { hw } else { Offset(p.offset) };
                            if target > hw || target.0 < 0 {
                                return Err(ApiError::OffsetAboveHighWatermark {
                                    requested: p.offset,
                                    high_watermark: hw.0,
                                });
                            }
                            log.maybe_increment_log_start_offset(target)
                                .map_err(ApiError::Log)
                        });
                    match result {
                        Ok(low) => r.low_watermark = low.0,
                        Err(e) => {
                            r.error_code = e.code();
                            r.low_watermark = -1;
                        }
                    }
                    out.partitions.push(r);
                }
                resp.topics.push(out);
            }
            resp
        })
        .await;
    ctx.broker.notify_appended();
    resp
}
