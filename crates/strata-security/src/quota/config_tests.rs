//! Ports of Kafka's ClientQuotaControlManagerTest and the alter half of
//! ClientQuotasRequestTest, the precedence table and the JSON form.

use super::*;

/// One side of an entity in a test table: absent, `<default>` (`Some(None)`) or a name.
type Side = Option<Option<&'static str>>;

fn ent(pairs: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    pairs
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_owned)))
        .collect()
}

fn ops(pairs: &[(&str, Option<f64>)]) -> Vec<(String, Option<f64>)> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn quotas_of(c: &QuotaConfigs, entity: &[(&str, Option<&str>)]) -> Option<BTreeMap<String, f64>> {
    let stored = validate_entity(&ent(entity)).ok()?;
    c.entities.get(&stored).cloned()
}

fn alter_err(entity: &[(&str, Option<&str>)], o: &[(&str, Option<f64>)]) -> String {
    let mut c = QuotaConfigs::new();
    let err = c
        .alter(&ent(entity), &ops(o), false)
        .expect_err("must be refused");
    assert!(c.is_empty(), "a refused entry changes nothing");
    err.to_string()
}

#[test]
fn precedence_table_and_sensor_keys() {
    use EntityName::{Absent, Default as D};
    let n = |s: &str| EntityName::Named(s.to_owned());
    let mut c = QuotaConfigs::new();
    let levels: [(Side, Side, f64); 8] = [
        (Some(Some("U")), Some(Some("C")), 1.0),
        (Some(Some("U")), Some(None), 2.0),
        (Some(Some("U")), None, 3.0),
        (Some(None), Some(Some("C")), 4.0),
        (Some(None), Some(None), 5.0),
        (Some(None), None, 6.0),
        (None, Some(Some("C")), 7.0),
        (None, Some(None), 8.0),
    ];
    let expected_keys = [
        (n("U"), n("C")),
        (n("U"), n("C")),
        (n("U"), Absent),
        (n("U"), n("C")),
        (n("U"), n("C")),
        (n("U"), Absent),
        (Absent, n("C")),
        (Absent, n("C")),
    ];
    for (user, client, v) in levels {
        let mut e = Vec::new();
        if let Some(u) = user {
            e.push(("user", u));
        }
        if let Some(cl) = client {
            e.push(("client-id", cl));
        }
        c.alter(&ent(&e), &ops(&[("request_percentage", Some(v))]), false)
            .expect("valid");
    }
    // Remove levels from the most specific down; each time the next applies.
    for (i, (user, client, v)) in levels.iter().enumerate() {
        let r = c
            .resolve(QuotaType::Request, "U", "C")
            .expect("a level applies");
        assert_eq!(r.limit, *v);
        let (ku, kc) = &expected_keys[i];
        assert_eq!(
            r.sensor_key,
            QuotaEntity::new(ku.clone(), kc.clone()),
            "level {}",
            i + 1
        );
        let side = |s: &Side| match s {
            None => Absent,
            Some(None) => D,
            Some(Some(x)) => n(x),
        };
        assert_eq!(r.source, QuotaEntity::new(side(user), side(client)));
        // Other types are resolved on their own.
        assert_eq!(c.quota_for(QuotaType::Produce, "U", "C"), None);
        let mut e = Vec::new();
        if let Some(u) = user {
            e.push(("user", *u));
        }
        if let Some(cl) = client {
            e.push(("client-id", *cl));
        }
        c.alter(&ent(&e), &ops(&[("request_percentage", None)]), false)
            .expect("valid");
    }
    assert_eq!(c.quota_for(QuotaType::Request, "U", "C"), None);
    assert!(c.is_empty());
}

#[test]
fn a_client_id_spelled_default_is_a_name() {
    let mut c = QuotaConfigs::new();
    c.alter(
        &ent(&[("client-id", Some("<default>"))]),
        &ops(&[("producer_byte_rate", Some(20000.0))]),
        false,
    )
    .expect("valid");
    assert_eq!(c.quota_for(QuotaType::Produce, "u", "other"), None);
    assert_eq!(
        c.quota_for(QuotaType::Produce, "u", "<default>")
            .map(|q| q.0),
        Some(20000.0)
    );
}

#[test]
fn controller_mutation_rate_uses_the_same_precedence() {
    let mut c = QuotaConfigs::new();
    c.alter(
        &ent(&[("user", None)]),
        &ops(&[("controller_mutation_rate", Some(5.5))]),
        false,
    )
    .expect("valid");
    let r = c
        .controller_mutation_rate_for("alice", "x")
        .expect("default user applies");
    assert_eq!(r.limit, 5.5);
    assert_eq!(
        r.sensor_key,
        QuotaEntity::new(EntityName::Named("alice".into()), EntityName::Absent)
    );
}

#[test]
fn ip_connection_rate_falls_back_to_the_default_ip() {
    let mut c = QuotaConfigs::new();
    let rate = |v| ops(&[("connection_creation_rate", Some(v))]);
    c.alter(&ent(&[("ip", Some("1.2.3.4"))]), &rate(100.0), false)
        .expect("valid");
    c.alter(&ent(&[("ip", Some("0:0:0:0:0:0:0:1"))]), &rate(7.0), false)
        .expect("valid");
    assert_eq!(
        c.ip_connection_rate("1.2.3.4".parse().expect("ip")),
        Some(100.0)
    );
    assert_eq!(c.ip_connection_rate("::1".parse().expect("ip")), Some(7.0));
    assert_eq!(c.ip_connection_rate("2.3.4.5".parse().expect("ip")), None);
    c.alter(&ent(&[("ip", None)]), &rate(200.0), false)
        .expect("valid");
    assert_eq!(
        c.ip_connection_rate("2.3.4.5".parse().expect("ip")),
        Some(200.0)
    );
}

// ClientQuotaControlManagerTest.testAlterAndRemove and
// ClientQuotasRequestTest.testAlterClientQuotasRequest.
#[test]
fn alter_and_remove() {
    let mut c = QuotaConfigs::new();
    let user = [("user", Some("user-1"))];
    let mut alter =
        |o: &[(&str, Option<f64>)]| c.alter(&ent(&user), &ops(o), false).expect("valid");
    alter(&[("producer_byte_rate", Some(10000.0))]);
    alter(&[
        ("producer_byte_rate", Some(10001.0)),
        ("consumer_byte_rate", Some(20000.0)),
    ]);
    alter(&[("producer_byte_rate", None)]);
    alter(&[("request_percentage", None)]); // absent: no change
    assert_eq!(
        quotas_of(&c, &user),
        Some(BTreeMap::from([("consumer_byte_rate".to_owned(), 20000.0)]))
    );
    c.alter(&ent(&user), &ops(&[("consumer_byte_rate", None)]), false)
        .expect("valid");
    assert_eq!(
        quotas_of(&c, &user),
        None,
        "an entity without quotas is dropped"
    );
    c.alter(&ent(&user), &ops(&[("consumer_byte_rate", None)]), false)
        .expect("valid");
    assert!(c.is_empty());
    c.alter(
        &ent(&user),
        &ops(&[
            ("request_percentage", Some(99.0)),
            ("controller_mutation_rate", None),
            ("producer_byte_rate", Some(10002.0)),
            ("consumer_byte_rate", Some(20001.0)),
        ]),
        false,
    )
    .expect("valid");
    assert_eq!(
        quotas_of(&c, &user),
        Some(BTreeMap::from([
            ("consumer_byte_rate".to_owned(), 20001.0),
            ("producer_byte_rate".to_owned(), 10002.0),
            ("request_percentage".to_owned(), 99.0),
        ]))
    );
}

// ClientQuotasRequestTest.testAlterClientQuotasRequestValidateOnly.
#[test]
fn validate_only_changes_nothing() {
    let mut c = QuotaConfigs::new();
    let user = ent(&[("user", Some("user"))]);
    c.alter(
        &user,
        &ops(&[
            ("producer_byte_rate", Some(20000.0)),
            ("request_percentage", Some(23.45)),
        ]),
        false,
    )
    .expect("valid");
    let before = c.clone();
    for o in [
        vec![("consumer_byte_rate", Some(50000.0))],
        vec![("producer_byte_rate", Some(10000.0))],
        vec![("request_percentage", None)],
        vec![
            ("producer_byte_rate", Some(10000.0)),
            ("consumer_byte_rate", Some(50000.0)),
            ("request_percentage", None),
        ],
    ] {
        c.alter(&user, &ops(&o), true).expect("valid");
        assert_eq!(c, before);
    }
    // Validation still runs.
    assert!(c.alter(&user, &ops(&[("bad", Some(1.0))]), true).is_err());
}

// ClientQuotaControlManagerTest.testInvalidEntityTypes and
// ClientQuotasRequestTest.testAlterClientQuotasInvalidRequests, with messages.
#[test]
fn invalid_entities_are_refused_with_kafkas_messages() {
    let p = [("producer_byte_rate", Some(10000.0))];
    assert_eq!(
        alter_err(&[("foo", Some("bar"))], &p),
        "Unhandled client quota entity type: foo"
    );
    assert_eq!(
        alter_err(&[("user", Some("user-1")), ("foo", Some("bar"))], &p),
        "Unhandled client quota entity type: foo"
    );
    assert_eq!(
        alter_err(&[("", Some("name"))], &p),
        "Unhandled client quota entity type: "
    );
    assert_eq!(alter_err(&[], &p), "Invalid empty client quota entity");
    assert_eq!(
        alter_err(&[("user", Some("a")), ("user", Some("b"))], &p),
        "Invalid client quota entity, duplicate entity entry user"
    );
    assert_eq!(
        alter_err(&[("user", Some(""))], &p),
        "Empty user not supported"
    );
    assert_eq!(
        alter_err(&[("client-id", Some(""))], &p),
        "Empty client-id not supported"
    );
    for other in ["user", "client-id"] {
        let msg = alter_err(&[(other, Some("x")), ("ip", Some("1.2.3.4"))], &p);
        assert!(msg.starts_with("Invalid quota entity combination"), "{msg}");
    }
    let r = [("connection_creation_rate", Some(50.0))];
    for bad in [
        "not a valid host because it has spaces",
        "RFC2606.invalid",
        "example.invalid",
    ] {
        assert_eq!(
            alter_err(&[("ip", Some(bad))], &r),
            format!("{bad} is not a valid IP or resolvable host.")
        );
    }
}

// ClientQuotaControlManagerTest.testValidateQuotaKeyValue* and testInvalidQuotaKeys.
#[test]
fn invalid_keys_and_values_are_refused_with_kafkas_messages() {
    let client = [("client-id", Some("c"))];
    let cases: [(&str, f64, &str); 7] = [
        ("foobar", 1.0, "Invalid configuration key foobar"),
        (
            "producer_byte_rate",
            0.0,
            "Quota producer_byte_rate must be greater than 0",
        ),
        (
            "consumer_byte_rate",
            -2.0,
            "Quota consumer_byte_rate must be greater than 0",
        ),
        (
            "consumer_byte_rate",
            36893488147419103232.4,
            "Proposed value for consumer_byte_rate is too large for a LONG.",
        ),
        (
            "consumer_byte_rate",
            2.245,
            "consumer_byte_rate cannot be a fractional value.",
        ),
        (
            "request_percentage",
            f64::NAN,
            "Quota request_percentage must be a finite number",
        ),
        (
            "connection_creation_rate",
            1.0,
            "Invalid configuration key connection_creation_rate",
        ),
    ];
    for (key, value, msg) in cases {
        assert_eq!(
            alter_err(&client, &[(key, Some(value))]),
            msg,
            "{key}={value}"
        );
    }
    let ip = [("ip", Some("10.0.0.1"))];
    assert_eq!(
        alter_err(&ip, &[("connection_creation_rate", Some(3e9))]),
        "Proposed value for connection_creation_rate is too large for an INT."
    );
    assert_eq!(
        alter_err(&ip, &[("producer_byte_rate", Some(1.0))]),
        "Invalid configuration key producer_byte_rate"
    );
    // Invalid key before or after a valid one refuses the whole entry.
    let user = [("user", Some("user-1"))];
    alter_err(
        &user,
        &[
            ("not.a.quota.key", Some(0.0)),
            ("request_percentage", Some(99.9)),
        ],
    );
    alter_err(
        &user,
        &[
            ("request_percentage", Some(99.9)),
            ("not.a.quota.key", Some(0.0)),
        ],
    );
    assert_eq!(
        alter_err(
            &user,
            &[
                ("request_percentage", Some(1.0)),
                ("request_percentage", None)
            ]
        ),
        "Duplicate quota key request_percentage not updating quota for this entity user=user-1"
    );
    // Accepted edge values.
    let mut c = QuotaConfigs::new();
    for (key, value) in [
        ("consumer_byte_rate", 1234.0),
        ("consumer_byte_rate", 1235.0000001),
        ("request_percentage", 56.62367),
    ] {
        c.alter(&ent(&client), &ops(&[(key, Some(value))]), false)
            .expect("valid");
    }
}

// ClientQuotaControlManagerTest.testEntityTypes: every entity shape is
// stored under its own key.
#[test]
fn every_entity_shape_is_stored_separately() {
    let mut c = QuotaConfigs::new();
    type Entity = &'static [(&'static str, Option<&'static str>)];
    let entities: [(Entity, f64); 11] = [
        (
            &[("user", Some("user-1")), ("client-id", Some("client-id-1"))],
            50.50,
        ),
        (
            &[("user", Some("user-2")), ("client-id", Some("client-id-1"))],
            51.51,
        ),
        (
            &[("user", Some("user-3")), ("client-id", Some("client-id-2"))],
            52.52,
        ),
        (&[("user", None), ("client-id", Some("client-id-1"))], 53.53),
        (&[("user", Some("user-1")), ("client-id", None)], 54.54),
        (&[("user", Some("user-3")), ("client-id", None)], 55.55),
        (&[("user", Some("user-1"))], 56.56),
        (&[("user", Some("user-2"))], 57.57),
        (&[("user", Some("user-3"))], 58.58),
        (&[("user", None)], 59.59),
        (&[("client-id", Some("client-id-2"))], 60.60),
    ];
    for (e, v) in entities {
        c.alter(&ent(e), &ops(&[("request_percentage", Some(v))]), false)
            .expect("valid");
    }
    assert_eq!(c.entities.len(), 11);
    for (e, v) in entities {
        assert_eq!(
            quotas_of(&c, e),
            Some(BTreeMap::from([("request_percentage".to_owned(), v)]))
        );
    }
    // Component order in the request does not matter.
    assert_eq!(
        quotas_of(
            &c,
            &[("client-id", Some("client-id-1")), ("user", Some("user-1"))]
        ),
        Some(BTreeMap::from([("request_percentage".to_owned(), 50.50)]))
    );
}

#[test]
fn json_round_trip_keeps_defaults_apart_from_names() {
    let mut c = QuotaConfigs::new();
    c.alter(
        &ent(&[("user", Some("alice")), ("client-id", None)]),
        &ops(&[("producer_byte_rate", Some(1024.0))]),
        false,
    )
    .expect("valid");
    c.alter(
        &ent(&[("client-id", Some("<default>"))]),
        &ops(&[("request_percentage", Some(12.5))]),
        false,
    )
    .expect("valid");
    c.alter(
        &ent(&[("ip", None)]),
        &ops(&[("connection_creation_rate", Some(10.0))]),
        false,
    )
    .expect("valid");
    let json = serde_json::to_string(&c).expect("serializes");
    assert!(
        json.contains(r#"{"entity_type":"client-id","entity_name":null}"#),
        "{json}"
    );
    let back: QuotaConfigs = serde_json::from_str(&json).expect("loads");
    assert_eq!(back, c);
}

#[test]
fn json_with_an_invalid_entry_is_refused() {
    let bad = r#"{"entries":[
        {"entity":[{"entity_type":"user","entity_name":"a"}],"quotas":{"producer_byte_rate":1.0}},
        {"entity":[{"entity_type":"user","entity_name":"b"}],"quotas":{"producer_byte_rate":1.5}}]}"#;
    let err = serde_json::from_str::<QuotaConfigs>(bad).expect_err("fractional byte rate");
    assert!(
        err.to_string()
            .contains("quota entry 1 is invalid: producer_byte_rate cannot be a fractional value."),
        "{err}"
    );
    assert!(
        serde_json::from_str::<QuotaConfigs>(r#"{"entries":[{"entity":[],"quotas":{}}]}"#).is_err()
    );
    assert!(serde_json::from_str::<QuotaConfigs>("[1,2]").is_err());
}
