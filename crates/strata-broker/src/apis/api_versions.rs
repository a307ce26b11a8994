//! ApiVersions (key 18): the advertised API ranges, and the KIP-511 fallback
//! for clients asking with a version newer than the broker's.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};

use super::{RequestContext, API_VERSIONS_MAX, SUPPORTED};
use crate::response::encode_with;
use crate::response::Response;

pub(crate) async fn handle(_ctx: &RequestContext, _req: ApiVersionsRequest) -> ApiVersionsResponse {
    // Kafka validates client_software_name/version (v3+) and answers
    // INVALID_REQUEST for odd ones; clients then retry with v0. Strata accepts
    // any value: rejecting buys nothing.
    let mut resp = ApiVersionsResponse::default();
    resp.api_keys = SUPPORTED
        .iter()
        .map(|&(api, min, max)| {
            let mut v = ApiVersion::default();
            v.api_key = api as i16;
            v.min_version = min;
            v.max_version = max;
            v
        })
        .collect();
    resp
}

/// The v0 response to an ApiVersions request above [`API_VERSIONS_MAX`]:
/// UNSUPPORTED_VERSION with the ApiVersions range, so the client retries
/// with a version it and the broker share.
pub(crate) fn unsupported_version(correlation_id: i32) -> Response {
    let mut resp = ApiVersionsResponse::default();
    resp.error_code = ResponseError::UnsupportedVersion.code();
    let mut v = ApiVersion::default();
    v.api_key = ApiKey::ApiVersions as i16;
    v.min_version = 0;
    v.max_version = API_VERSIONS_MAX;
    resp.api_keys = vec![v];
    let frame = encode_with(correlation_id, ApiKey::ApiVersions, 0, &resp)
        .expect("a v0 ApiVersions response always encodes");
    Response::from_bytes(frame)
}
