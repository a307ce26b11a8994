//! Cluster mode over the wire with a real etcd: a change made through one
//! broker — a cluster-default broker config, a topic config — is applied by
//! the others from etcd, without a restart, and survives restarts there
//! instead of in a file.

use std::time::{Duration, Instant};

use crate::broker_configs::{describe, value};
use crate::common::*;
use crate::etcd::Etcd;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const SET: i8 = 0;
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;

fn cluster_settings<'a>(endpoint: &'a str, id: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("node.id", id),
        ("strata.metadata.etcd.endpoints", endpoint),
        ("strata.metadata.etcd.prefix", "/api-test"),
        ("broker.session.timeout.ms", "2000"),
        ("broker.heartbeat.interval.ms", "300"),
    ]
}

/// Poll `check` for up to 10 s (another broker applies etcd's change
/// within a watch round trip).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_changed_through_one_broker_apply_on_the_others() {
    let etcd = tokio::task::spawn_blocking(Etcd::start).await.unwrap();
    let endpoint = etcd.endpoint();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b1 = start(d1.path(), &cluster_settings(&endpoint, "1")).await;
    let b2 = start(d2.path(), &cluster_settings(&endpoint, "2")).await;
    let mut c1 = Client::connect(b1.local_addr()).await;
    let mut c2 = Client::connect(b2.local_addr()).await;

    // The cluster default, set through broker 1, is in force on broker 2.
    let r = incremental_alter(
        &mut c1,
        BROKER,
        "",
        &[("log.retention.ms", SET, Some("7200000"))],
        false,
    )
    .await;
    assert_eq!(r.0, 0, "{r:?}");
    eventually("broker 2 to apply the cluster default", || async {
        let d = describe(&mut Client::connect(b2.local_addr()).await, BROKER, "2").await;
        value(&d, "log.retention.ms") == (Some("7200000".into()), DYNAMIC_DEFAULT_BROKER_CONFIG)
    })
    .await;

    // A topic created through broker 2 and reconfigured through broker 1.
    assert_eq!(create_topic_with(&mut c2, "shared", 2, &[]).await, 0);
    let r = incremental_alter(
        &mut c1,
        TOPIC,
        "shared",
        &[("retention.ms", SET, Some("60000"))],
        false,
    )
    .await;
    assert_eq!(r.0, 0, "{r:?}");
    let d = describe(&mut c2, TOPIC, "shared").await;
    assert_eq!(
        value(&d, "retention.ms"),
        (Some("60000".into()), DYNAMIC_TOPIC_CONFIG)
    );

    // Nothing of it is in a file: cluster mode keeps single-node's stores out.
    for dir in [d1.path(), d2.path()] {
        assert!(!dir.join("strata-topics.json").exists());
        assert!(!dir.join("strata-broker-configs.json").exists());
    }

    // Broker 2 restarted reads both back from etcd.
    b2.shutdown().await.unwrap();
    let b2 = start(d2.path(), &cluster_settings(&endpoint, "2")).await;
    let mut c2 = Client::connect(b2.local_addr()).await;
    let d = describe(&mut c2, BROKER, "2").await;
    assert_eq!(
        value(&d, "log.retention.ms"),
        (Some("7200000".into()), DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
    let d = describe(&mut c2, TOPIC, "shared").await;
    assert_eq!(
        value(&d, "retention.ms"),
        (Some("60000".into()), DYNAMIC_TOPIC_CONFIG)
    );
    b2.shutdown().await.unwrap();
    b1.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_and_scram_users_created_through_one_broker_apply_on_the_others() {
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    use kafka_protocol::messages::create_acls_request::AclCreation;
    use kafka_protocol::messages::{
        AlterUserScramCredentialsRequest, CreateAclsRequest, DescribeAclsRequest,
        DescribeUserScramCredentialsRequest,
    };
    use kafka_protocol::protocol::StrBytes;

    let etcd = tokio::task::spawn_blocking(Etcd::start).await.unwrap();
    let endpoint = etcd.endpoint();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b1 = start(d1.path(), &cluster_settings(&endpoint, "1")).await;
    let b2 = start(d2.path(), &cluster_settings(&endpoint, "2")).await;
    let mut c1 = Client::connect(b1.local_addr()).await;

    let mut acl = AclCreation::default();
    acl.resource_type = 2; // TOPIC
    acl.resource_name = StrBytes::from_static_str("orders-");
    acl.resource_pattern_type = 4; // PREFIXED
    acl.principal = StrBytes::from_static_str("User:alice");
    acl.host = StrBytes::from_static_str("*");
    acl.operation = 3; // READ
    acl.permission_type = 3; // ALLOW
    let mut create = CreateAclsRequest::default();
    create.creations = vec![acl];
    let r = c1.call(&create, 3).await;
    assert_eq!(r.results[0].error_code, 0, "{r:?}");

    let mut user = ScramCredentialUpsertion::default();
    user.name = StrBytes::from_static_str("alice");
    user.mechanism = 2; // SCRAM-SHA-512
    user.iterations = 8192;
    user.salt = bytes::Bytes::from_static(b"0123456789abcdef");
    user.salted_password = bytes::Bytes::from(vec![7u8; 64]);
    let mut alter = AlterUserScramCredentialsRequest::default();
    alter.upsertions = vec![user];
    let r = c1.call(&alter, 0).await;
    assert_eq!(r.results[0].error_code, 0, "{r:?}");

    let acls_on = |addr| async move {
        let mut describe = DescribeAclsRequest::default();
        describe.resource_type_filter = 1; // ANY
        describe.pattern_type_filter = 1; // ANY
        describe.operation = 1; // ANY
        describe.permission_type = 1; // ANY
                                      // Null filters match anything (the crate's defaults are empty strings).
        describe.resource_name_filter = None;
        describe.principal_filter = None;
        describe.host_filter = None;
        let r = Client::connect(addr).await.call(&describe, 3).await;
        assert_eq!(r.error_code, 0, "{r:?}");
        r.resources
            .iter()
            .flat_map(|res| {
                res.acls.iter().map(move |a| {
                    (
                        res.resource_name.to_string(),
                        res.pattern_type,
                        a.principal.to_string(),
                        a.operation,
                    )
                })
            })
            .collect::<Vec<_>>()
    };
    let want = vec![("orders-".to_string(), 4i8, "User:alice".to_string(), 3i8)];
    eventually("broker 2 to see the ACL", || async {
        acls_on(b2.local_addr()).await == want
    })
    .await;
    let users_on = |addr| async move {
        let r = Client::connect(addr)
            .await
            .call(&DescribeUserScramCredentialsRequest::default(), 0)
            .await;
        r.results
            .iter()
            .map(|u| {
                (
                    u.user.to_string(),
                    u.credential_infos
                        .iter()
                        .map(|c| (c.mechanism, c.iterations))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    let want_users = vec![("alice".to_string(), vec![(2i8, 8192)])];
    eventually("broker 2 to see the SCRAM user", || async {
        users_on(b2.local_addr()).await == want_users
    })
    .await;
    // Kept in etcd, not in a file of either broker.
    for dir in [d1.path(), d2.path()] {
        assert!(!dir.join("strata-security.json").exists());
    }
    // A restarted broker reads them back from etcd.
    b2.shutdown().await.unwrap();
    let b2 = start(d2.path(), &cluster_settings(&endpoint, "2")).await;
    assert_eq!(acls_on(b2.local_addr()).await, want);
    assert_eq!(users_on(b2.local_addr()).await, want_users);
    b2.shutdown().await.unwrap();
    b1.shutdown().await.unwrap();
}
