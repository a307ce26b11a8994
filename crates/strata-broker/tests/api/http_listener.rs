//! The HTTP listener (`strata.metrics.listener`): off unless set, `/metrics`
//! in Prometheus' text format, the console at `/`, and malformed requests
//! answered with a 4xx status while the Kafka listener keeps serving.

use crate::common::{http_get, http_raw, start, Client};
use kafka_protocol::messages::ApiVersionsRequest;

#[tokio::test]
async fn off_unless_set() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    assert_eq!(broker.metrics_addr(), None);
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn serves_metrics_and_the_console_and_refuses_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("strata.metrics.listener", "127.0.0.1:0")]).await;
    let addr = broker.metrics_addr().expect("the HTTP listener is bound");

    let (status, head, body) = http_raw(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(head.contains("openmetrics-text"), "{head}");
    assert!(body.ends_with("# EOF\n"), "{body}");

    let (status, body) = http_get(addr, "/").await;
    assert_eq!(status, 200);
    assert!(body.contains("<h1>"), "{body}");

    let (status, _) = http_get(addr, "/no/such/page").await;
    assert_eq!(status, 404);
    for (raw, want) in [
        (&b"POST /metrics HTTP/1.1\r\n\r\n"[..], 405),
        (b"GET /metrics HTTP/2.0\r\n\r\n", 505),
        (b"\x00\x00\x00\x16garbage\r\n\r\n", 400),
        (b"GET metrics HTTP/1.1\r\n\r\n", 400),
    ] {
        let (status, head, _) = http_raw(addr, raw).await;
        assert_eq!(status, want, "{raw:?}: {head}");
    }
    // A head that never ends is cut off at its bound.
    let mut huge = b"GET / HTTP/1.1\r\n".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 64 * 1024));
    let (status, _, _) = http_raw(addr, &huge).await;
    assert_eq!(status, 431);

    // The Kafka listener is unaffected.
    let mut client = Client::connect(broker.local_addr()).await;
    let resp = client.call(&ApiVersionsRequest::default(), 3).await;
    assert_eq!(resp.error_code, 0);
    broker.shutdown().await.unwrap();
}
