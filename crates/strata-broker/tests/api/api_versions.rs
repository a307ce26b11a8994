//! Guards version negotiation: ApiVersions answers at every version, the
//! KIP-511 v0 UNSUPPORTED_VERSION fallback for too-new requests, and an
//! advertised table that clients can use (Produce ≥ 3 with Fetch ≥ 4, maxima
//! never above Kafka 3.9).

use crate::common::{start, Client};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};

fn range(resp: &ApiVersionsResponse, key: ApiKey) -> Option<(i16, i16)> {
    resp.api_keys
        .iter()
        .find(|k| k.api_key == key as i16)
        .map(|k| (k.min_version, k.max_version))
}

#[tokio::test]
async fn every_supported_version_answers() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    for version in 0..=4 {
        let mut req = ApiVersionsRequest::default();
        if version >= 3 {
            req.client_software_name = StrBytes::from_static_str("strata-test");
            req.client_software_version = StrBytes::from_static_str("1.0");
        }
        let resp = c.call(&req, version).await;
        assert_eq!(resp.error_code, 0, "v{version}");
        assert_eq!(range(&resp, ApiKey::ApiVersions), Some((0, 4)));
        let (pmin, pmax) = range(&resp, ApiKey::Produce).expect("produce advertised");
        let (fmin, fmax) = range(&resp, ApiKey::Fetch).expect("fetch advertised");
        assert!(pmin <= 3 && pmax >= 3, "librdkafka MsgVer2 needs Produce 3");
        assert!(fmin <= 4 && fmax >= 4, "librdkafka MsgVer2 needs Fetch 4");
        assert!(pmax <= 11 && fmax <= 17, "never above Kafka 3.9 maxima");
        assert!(
            range(&resp, ApiKey::InitProducerId).is_some(),
            "idempotent producers need it"
        );
        // KIP-848 is on by default: v1 because librdkafka 2.10+ speaks
        // only v1 (docs/differences-from-kafka.md).
        assert_eq!(range(&resp, ApiKey::ConsumerGroupHeartbeat), Some((0, 1)));
        assert_eq!(range(&resp, ApiKey::ConsumerGroupDescribe), Some((0, 1)));
        // Not implemented, so not advertised.
        assert_eq!(range(&resp, ApiKey::DescribeTopicPartitions), None);
        for k in &resp.api_keys {
            let key = ApiKey::try_from(k.api_key).unwrap();
            let crate_range = key.valid_versions();
            assert!(
                k.min_version >= crate_range.min && k.max_version <= crate_range.max,
                "{key:?}"
            );
        }
    }
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn too_new_api_versions_gets_v0_unsupported_version() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    // A v9 ApiVersions request: header v2 (flexible), body the client may
    // not even know how to encode; the broker must not parse it.
    let mut frame = Vec::new();
    let body: &[u8] = &[
        0, 18, // api key
        0, 9, // api version
        0, 0, 0, 42, // correlation id
        0, 4, b't', b'e', b's', b't', // client id
        0,    // header tagged fields
        0xde, 0xad, 0xbe, 0xef, // body the broker must not parse
    ];
    frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
    frame.extend_from_slice(body);
    c.send_raw(&frame).await;
    let mut resp = c.read_frame().await.expect("answered, not closed");
    let correlation = i32::from_be_bytes(resp[..4].try_into().unwrap());
    assert_eq!(correlation, 42);
    let _ = bytes::Buf::get_i32(&mut resp); // header v0: correlation id only
    let body = ApiVersionsResponse::decode(&mut resp, 0).unwrap();
    assert_eq!(body.error_code, 35, "UNSUPPORTED_VERSION");
    assert_eq!(range(&body, ApiKey::ApiVersions), Some((0, 4)));
    // The client retries with v3 on the same connection and succeeds.
    let resp = c.call(&ApiVersionsRequest::default(), 3).await;
    assert_eq!(resp.error_code, 0);
    assert!(resp.api_keys.len() > 5);
    broker.shutdown().await.unwrap();
}
