//! Ports of Kafka's ClientQuotasRequestTest describe cases.

use super::*;
use crate::quota::QuotaConfigs;

/// One side of an entity in a test table: absent, `<default>` (`Some(None)`) or a name.
type Side = Option<Option<&'static str>>;

/// The entities of testDescribeClientQuotasMatch*: 11 user/client-id
/// entities with `request_percentage` and 2 ip entities.
fn setup() -> QuotaConfigs {
    let mut c = QuotaConfigs::new();
    let users: [(Side, Side, f64); 11] = [
        (Some(Some("user-1")), Some(Some("client-id-1")), 50.50),
        (Some(Some("user-2")), Some(Some("client-id-1")), 51.51),
        (Some(Some("user-3")), Some(Some("client-id-2")), 52.52),
        (Some(None), Some(Some("client-id-1")), 53.53),
        (Some(Some("user-1")), Some(None), 54.54),
        (Some(Some("user-3")), Some(None), 55.55),
        (Some(Some("user-1")), None, 56.56),
        (Some(Some("user-2")), None, 57.57),
        (Some(Some("user-3")), None, 58.58),
        (Some(None), None, 59.59),
        (None, Some(Some("client-id-2")), 60.60),
    ];
    for (u, cl, v) in users {
        let mut e = Vec::new();
        if let Some(u) = u {
            e.push(("user".to_owned(), u.map(str::to_owned)));
        }
        if let Some(cl) = cl {
            e.push(("client-id".to_owned(), cl.map(str::to_owned)));
        }
        c.alter(&e, &[("request_percentage".to_owned(), Some(v))], false)
            .expect("valid");
    }
    for (ip, v) in [("1.2.3.4", 10.0), ("2.3.4.5", 20.0)] {
        c.alter(
            &[("ip".to_owned(), Some(ip.to_owned()))],
            &[("connection_creation_rate".to_owned(), Some(v))],
            false,
        )
        .expect("valid");
    }
    c
}

fn count(c: &QuotaConfigs, filter: &[FilterComponent], strict: bool) -> usize {
    c.describe(filter, strict).expect("valid filter").len()
}

#[test]
fn exact_matches_find_one_entity_each() {
    let c = setup();
    let found = c
        .describe(
            &[
                FilterComponent::exact("user", "user-1"),
                FilterComponent::default_entity("client-id"),
            ],
            true,
        )
        .expect("valid filter");
    assert_eq!(found.len(), 1);
    let (entity, values) = &found[0];
    assert_eq!(
        entity,
        &vec![
            ("user".to_owned(), Some("user-1".to_owned())),
            ("client-id".to_owned(), None)
        ]
    );
    assert_eq!(values.get("request_percentage"), Some(&54.54));
    // Not configured: nothing.
    for filter in [
        vec![
            FilterComponent::exact("user", "user-1"),
            FilterComponent::exact("client-id", "client-id-2"),
        ],
        vec![
            FilterComponent::exact("user", "user-3"),
            FilterComponent::exact("client-id", "client-id-1"),
        ],
        vec![
            FilterComponent::exact("user", "user-2"),
            FilterComponent::default_entity("client-id"),
        ],
        vec![FilterComponent::exact("user", "user-4")],
        vec![
            FilterComponent::default_entity("user"),
            FilterComponent::exact("client-id", "client-id-2"),
        ],
        vec![FilterComponent::exact("client-id", "client-id-1")],
        vec![FilterComponent::exact("client-id", "client-id-3")],
    ] {
        assert_eq!(count(&c, &filter, true), 0, "{filter:?}");
    }
}

// testDescribeClientQuotasMatchPartial.
#[test]
fn partial_matches() {
    let c = setup();
    assert_eq!(
        count(&c, &[FilterComponent::exact("user", "user-1")], false),
        3
    );
    assert_eq!(
        count(&c, &[FilterComponent::exact("user", "unknown")], false),
        0
    );
    assert_eq!(
        count(
            &c,
            &[FilterComponent::exact("client-id", "client-id-2")],
            false
        ),
        2
    );
    assert_eq!(
        count(&c, &[FilterComponent::default_entity("user")], false),
        2
    );
    assert_eq!(
        count(&c, &[FilterComponent::exact("user", "user-2")], true),
        1
    );
    assert_eq!(
        count(
            &c,
            &[FilterComponent::exact("client-id", "client-id-1")],
            true
        ),
        0
    );
    assert_eq!(count(&c, &[FilterComponent::any("user")], true), 4);
    assert_eq!(count(&c, &[FilterComponent::any("user")], false), 10);
    assert_eq!(count(&c, &[FilterComponent::any("client-id")], true), 1);
    assert_eq!(count(&c, &[FilterComponent::any("client-id")], false), 7);
    assert_eq!(count(&c, &[FilterComponent::any("ip")], false), 2);
    assert_eq!(count(&c, &[], false), 13);
    assert_eq!(count(&c, &[], true), 0);
    // Any-match includes the default entity.
    assert_eq!(
        count(
            &c,
            &[
                FilterComponent::any("user"),
                FilterComponent::exact("client-id", "client-id-1")
            ],
            true
        ),
        3
    );
}

#[test]
fn ip_filters() {
    let c = setup();
    let found = c
        .describe(&[FilterComponent::exact("ip", "1.2.3.4")], true)
        .expect("valid filter");
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].0,
        vec![("ip".to_owned(), Some("1.2.3.4".to_owned()))]
    );
    assert_eq!(found[0].1.get("connection_creation_rate"), Some(&10.0));
    assert_eq!(count(&c, &[FilterComponent::default_entity("ip")], true), 0);
}

#[test]
fn a_client_id_spelled_default_does_not_match_the_default_filter() {
    let mut c = QuotaConfigs::new();
    c.alter(
        &[("client-id".to_owned(), Some("<default>".to_owned()))],
        &[("producer_byte_rate".to_owned(), Some(20000.0))],
        false,
    )
    .expect("valid");
    assert_eq!(
        count(&c, &[FilterComponent::default_entity("client-id")], true),
        0
    );
    assert_eq!(
        count(
            &c,
            &[FilterComponent::exact("client-id", "<default>")],
            true
        ),
        1
    );
}

#[test]
fn invalid_filters_are_refused_with_kafkas_messages() {
    let c = setup();
    let err =
        |filter: &[FilterComponent]| c.describe(filter, false).expect_err("invalid").to_string();
    let comp = |t: &str, m: i8, n: Option<&str>| FilterComponent {
        entity_type: t.to_owned(),
        match_type: m,
        match_name: n.map(str::to_owned),
    };
    assert_eq!(err(&[comp("", 2, None)]), "Invalid empty entity type.");
    assert_eq!(
        err(&[
            FilterComponent::any("user"),
            FilterComponent::exact("user", "x")
        ]),
        "Entity type user cannot appear more than once in the filter."
    );
    assert_eq!(
        c.describe(&[FilterComponent::exact("other", "name")], true),
        Err(DescribeQuotaError::UnsupportedEntityType {
            entity_type: "other".to_owned()
        })
    );
    assert_eq!(
        err(&[comp("user", 0, None)]),
        "Request specified MATCH_TYPE_EXACT, but set match string to null."
    );
    assert_eq!(
        err(&[comp("user", 1, Some("x"))]),
        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
    );
    assert_eq!(
        err(&[comp("user", 2, Some("x"))]),
        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
    );
    assert_eq!(err(&[comp("user", 3, None)]), "Unknown match type 3");
    for other in ["user", "client-id"] {
        let msg = err(&[FilterComponent::any("ip"), FilterComponent::any(other)]);
        assert!(
            msg.starts_with("Invalid entity filter component combination"),
            "{msg}"
        );
    }
}
