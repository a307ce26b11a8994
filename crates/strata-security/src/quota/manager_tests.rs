//! Ports of Kafka's ClientQuotaManagerTest and ClientRequestQuotaManagerTest,
//! plus expiry and a simulated producer.

use super::*;
use crate::quota::QuotaEntity;
use crate::quota::{EntityName, QuotaConfigs, QuotaType, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE};

/// One side of an entity in a test table: absent, `<default>` (`Some(None)`) or a name.
type Side = Option<Option<&'static str>>;

const SAMPLES: u32 = 11;

fn set(
    configs: &mut QuotaConfigs,
    user: Option<Option<&str>>,
    client: Option<Option<&str>>,
    key: &str,
    v: Option<f64>,
) {
    let mut entity = Vec::new();
    if let Some(u) = user {
        entity.push(("user".to_owned(), u.map(str::to_owned)));
    }
    if let Some(c) = client {
        entity.push(("client-id".to_owned(), c.map(str::to_owned)));
    }
    configs
        .alter(&entity, &[(key.to_owned(), v)], false)
        .expect("valid alteration");
}

fn produce(
    configs: &mut QuotaConfigs,
    user: Option<Option<&str>>,
    client: Option<Option<&str>>,
    v: Option<f64>,
) {
    set(configs, user, client, PRODUCER_BYTE_RATE, v);
}

/// Kafka's `checkQuota`: the bound, the max value in the window, and whether
/// recording `value * samples` at once throttles.
fn check_quota(
    m: &mut QuotaManager,
    c: &QuotaConfigs,
    user: &str,
    client: &str,
    bound: Option<f64>,
    value: f64,
    expect_throttle: bool,
) {
    let t = QuotaType::Produce;
    assert_eq!(
        c.quota_for(t, user, client).map(|q| q.0),
        bound,
        "bound of {user}/{client}"
    );
    let expected_max = bound.map_or(f64::MAX, |b| b * f64::from(SAMPLES - 1));
    assert_eq!(
        m.max_value_in_quota_window(c, t, user, client),
        expected_max
    );
    let throttle = m.record(c, t, user, client, value * f64::from(SAMPLES), 0);
    if expect_throttle {
        assert!(throttle > 0, "{user}/{client} should be throttled");
    } else {
        assert_eq!(throttle, 0, "{user}/{client} should not be throttled");
    }
}

#[test]
fn quota_config_precedence() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let mut c = QuotaConfigs::new();
    produce(&mut c, Some(None), None, Some(1000.0));
    produce(&mut c, None, Some(None), Some(2000.0));
    produce(&mut c, Some(None), Some(None), Some(3000.0));
    produce(&mut c, Some(Some("userA")), None, Some(4000.0));
    produce(
        &mut c,
        Some(Some("userA")),
        Some(Some("client1")),
        Some(5000.0),
    );
    produce(&mut c, Some(Some("userB")), None, Some(6000.0));
    produce(
        &mut c,
        Some(Some("userB")),
        Some(Some("client1")),
        Some(7000.0),
    );
    produce(&mut c, Some(Some("userB")), Some(None), Some(8000.0));
    produce(&mut c, Some(Some("userC")), None, Some(10000.0));
    produce(&mut c, None, Some(Some("client1")), Some(9000.0));

    let mut check = |c: &QuotaConfigs, u: &str, cl: &str, b: f64, v: f64, e: bool| {
        check_quota(&mut m, c, u, cl, Some(b), v, e)
    };
    check(&c, "userA", "client1", 5000.0, 4500.0, false); // <user, client> over <user>
    check(&c, "userA", "client2", 4000.0, 4500.0, true); // <user> over <client> and defaults
    check(&c, "userA", "client3", 4000.0, 0.0, true); // <user> shared across the user's clients
    check(&c, "userA", "client1", 5000.0, 0.0, false); // <user, client> is exclusive

    check(&c, "userB", "client1", 7000.0, 8000.0, true);
    check(&c, "userB", "client2", 8000.0, 7000.0, false); // default client of a user: per client
    check(&c, "userB", "client3", 8000.0, 7000.0, false);

    check(&c, "userD", "client1", 3000.0, 3500.0, true); // default <user, client>
    check(&c, "userD", "client2", 3000.0, 2500.0, false);
    check(&c, "userE", "client1", 3000.0, 2500.0, false);

    // Remove the default <user, client>: back to the <user> default.
    produce(&mut c, Some(None), Some(None), None);
    check(&c, "userD", "client1", 1000.0, 0.0, false); // new sensor key, fresh counter
    check(&c, "userE", "client4", 1000.0, 1500.0, true);
    check(&c, "userF", "client4", 1000.0, 800.0, false); // default <user> shared by its clients
    check(&c, "userF", "client5", 1000.0, 800.0, true);

    // Remove the default <user>: back to the <client-id> default.
    produce(&mut c, Some(None), None, None);
    check(&c, "userF", "client4", 2000.0, 0.0, false); // per client id, across users
    check(&c, "userF", "client5", 2000.0, 0.0, false);
    check(&c, "userF", "client5", 2000.0, 2500.0, true);
    check(&c, "userG", "client5", 2000.0, 0.0, true);

    // Update quotas; sensors keep their history.
    produce(&mut c, Some(Some("userA")), None, Some(8000.0));
    produce(
        &mut c,
        Some(Some("userA")),
        Some(Some("client1")),
        Some(10000.0),
    );
    check(&c, "userA", "client2", 8000.0, 0.0, false);
    check(&c, "userA", "client2", 8000.0, 4500.0, true); // sum of new and earlier values
    check(&c, "userA", "client1", 10000.0, 0.0, false);
    check(&c, "userA", "client1", 10000.0, 6000.0, true);
    produce(&mut c, Some(Some("userA")), Some(Some("client1")), None);
    check(&c, "userA", "client6", 8000.0, 0.0, true); // shared user quota
    produce(
        &mut c,
        Some(Some("userA")),
        Some(Some("client6")),
        Some(11000.0),
    );
    check(&c, "userA", "client6", 11000.0, 8500.0, false);
    produce(&mut c, Some(Some("userA")), Some(None), Some(12000.0));
    produce(&mut c, Some(Some("userA")), Some(Some("client6")), None);
    check(&c, "userA", "client6", 12000.0, 4000.0, true); // same (userA, client6) sensor
}

#[test]
fn set_and_remove_quotas_at_each_level() {
    let cases: [(Side, Side); 3] = [
        (Some(None), None),
        (Some(Some("userA")), None),
        (Some(Some("userA")), Some(Some("client1"))),
    ];
    for (user, client) in cases {
        let mut m = QuotaManager::new(SAMPLES, 1000);
        let mut c = QuotaConfigs::new();
        check_quota(&mut m, &c, "userA", "client1", None, 1000.0, false);
        produce(&mut c, user, client, Some(10.0));
        check_quota(&mut m, &c, "userA", "client1", Some(10.0), 1000.0, true);
        produce(&mut c, user, client, None);
        check_quota(&mut m, &c, "userA", "client1", None, 1000.0, false);
    }
}

// ClientQuotaManagerTest.testQuotaParsing for the client-id, user and
// user+client-id levels.
#[test]
fn quota_parsing_cases() {
    type Level = fn(&str) -> (Option<Option<String>>, Option<Option<String>>);
    let levels: [(Level, (Side, Side)); 3] = [
        (|n| (None, Some(Some(format!("p{n}")))), (None, Some(None))),
        (
            |n| (Some(Some(format!("User{n}"))), None),
            (Some(None), None),
        ),
        (
            |n| (Some(Some(format!("User{n}"))), Some(Some(format!("p{n}")))),
            (Some(None), Some(None)),
        ),
    ];
    for (level, default) in levels {
        let mut m = QuotaManager::new(SAMPLES, 1000);
        let mut c = QuotaConfigs::new();
        let alter = |c: &mut QuotaConfigs, n: &str, v: Option<f64>| {
            let (u, cl) = level(n);
            produce(
                c,
                u.as_ref().map(|o| o.as_deref()),
                cl.as_ref().map(|o| o.as_deref()),
                v,
            );
        };
        alter(&mut c, "1", Some(2000.0));
        alter(&mut c, "2", Some(4000.0));
        assert_eq!(
            c.quota_for(QuotaType::Produce, "RandomUser", "random-client-id"),
            None
        );
        assert_eq!(
            c.quota_for(QuotaType::Produce, "User1", "p1").map(|q| q.0),
            Some(2000.0)
        );
        assert_eq!(
            c.quota_for(QuotaType::Produce, "User2", "p2").map(|q| q.0),
            Some(4000.0)
        );
        // User1/p1 is throttled at 2000 ...
        assert!(m.record(&c, QuotaType::Produce, "User1", "p1", 2500.0 * 11.0, 0) > 0);
        // ... not after raising it to 3000 (27500 / 10 s = 2750) ...
        alter(&mut c, "1", Some(3000.0));
        assert_eq!(m.record(&c, QuotaType::Produce, "User1", "p1", 0.0, 0), 0);
        // ... again at 500 ...
        alter(&mut c, "1", Some(500.0));
        assert!(m.record(&c, QuotaType::Produce, "User1", "p1", 0.0, 0) > 0);
        // ... and under a 4000 default once the override is gone.
        alter(&mut c, "1", None);
        produce(&mut c, default.0, default.1, Some(4000.0));
        assert_eq!(
            c.quota_for(QuotaType::Produce, "User1", "p1").map(|q| q.0),
            Some(4000.0)
        );
        assert_eq!(
            m.record(&c, QuotaType::Produce, "User1", "p1", 1000.0 * 11.0, 0),
            0
        );
    }
}

#[test]
fn max_value_in_quota_window_follows_the_window_count() {
    // testGetMaxValueInQuotaWindowWithNonDefaultQuotaWindow: 4 samples.
    let m = QuotaManager::new(4, 1000);
    let mut c = QuotaConfigs::new();
    assert_eq!(
        m.max_value_in_quota_window(&c, QuotaType::Fetch, "userA", "client1"),
        f64::MAX
    );
    set(&mut c, Some(None), None, "consumer_byte_rate", Some(10.0));
    assert_eq!(
        m.max_value_in_quota_window(&c, QuotaType::Fetch, "userA", "client1"),
        30.0
    );
}

// testQuotaViolation through the manager with a clients/<default> quota.
#[test]
fn quota_violation_through_the_manager() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let mut c = QuotaConfigs::new();
    produce(&mut c, None, Some(None), Some(500.0));
    let mut now = 1_000_000;
    for _ in 0..10 {
        assert_eq!(
            m.record(&c, QuotaType::Produce, "ANONYMOUS", "unknown", 400.0, now),
            0
        );
        now += 1000;
    }
    now += 500;
    let throttle = m.record(&c, QuotaType::Produce, "ANONYMOUS", "unknown", 2300.0, now);
    assert_eq!(throttle, 2100);
    // Other client ids have their own sensor under a default quota.
    assert_eq!(
        m.record(&c, QuotaType::Produce, "ANONYMOUS", "other", 400.0, now),
        0
    );
    let key = QuotaEntity::new(EntityName::Absent, EntityName::Named("unknown".into()));
    assert!((m.rate(QuotaType::Produce, &key, now).unwrap_or(0.0) - 600.0).abs() < 1e-9);
}

// ClientRequestQuotaManagerTest.testRequestPercentageQuotaViolation.
#[test]
fn request_percentage_quota_violation() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let mut c = QuotaConfigs::new();
    set(
        &mut c,
        Some(Some("ANONYMOUS")),
        Some(Some("test-client")),
        REQUEST_PERCENTAGE,
        Some(1.0),
    );
    let ms = |millis: f64| nanos_to_percentage((millis * 1_000_000.0) as i64);
    let mut rec =
        |v: f64, now: i64| m.record(&c, QuotaType::Request, "ANONYMOUS", "test-client", v, now);
    let mut now = 0;
    for _ in 0..10 {
        assert_eq!(rec(ms(4.0), now), 0);
        now += 1000;
    }
    // 4 * 10 + 67.1 = 107.1 ms over 10.5 s = 10.2 ms/s against 10 ms/s:
    // (10.2 - 10) / 10 * 10500 = 210.
    now += 500;
    let throttle = rec(ms(67.1), now);
    assert_eq!(throttle, 210);
    now += throttle;
    for _ in 0..11 {
        rec(ms(4.0), now);
        now += 1000;
    }
    assert_eq!(rec(0.0, now), 0, "the burst has rolled over");
    // A spike needing more than one window is capped at one window.
    assert_eq!(rec(ms(500.0), now), 1000);
    for _ in 0..10 {
        now += 1000;
        assert_eq!(rec(0.0, now), 1000);
    }
    now += 1000;
    assert_eq!(rec(0.0, now), 0, "the burst has rolled over");
}

#[test]
fn byte_rate_throttles_are_not_capped() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let mut c = QuotaConfigs::new();
    produce(&mut c, Some(Some("u")), None, Some(100.0));
    // 100000 / 10 s = 10000/s: (10000 - 100) / 100 * 10000 = 990000.
    assert_eq!(
        m.record(&c, QuotaType::Produce, "u", "c", 100_000.0, 0),
        990_000
    );
}

#[test]
fn unlimited_clients_are_not_recorded() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let c = QuotaConfigs::new();
    assert_eq!(m.record(&c, QuotaType::Produce, "u", "c", 1e12, 0), 0);
    assert_eq!(m.sensor_count(), 0);
}

#[test]
fn unrecord_takes_bytes_back() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let mut c = QuotaConfigs::new();
    set(
        &mut c,
        Some(Some("u")),
        None,
        "consumer_byte_rate",
        Some(100.0),
    );
    assert!(m.record(&c, QuotaType::Fetch, "u", "c", 5000.0, 0) > 0);
    m.unrecord(&c, QuotaType::Fetch, "u", "c", 5000.0, 0);
    assert_eq!(m.record(&c, QuotaType::Fetch, "u", "c", 900.0, 0), 0);
}

#[test]
fn sensors_expire_after_an_hour_without_records() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let mut c = QuotaConfigs::new();
    produce(&mut c, None, Some(None), Some(500.0));
    m.record(&c, QuotaType::Produce, "u", "client1", 100.0, 0);
    m.record(&c, QuotaType::Produce, "u", "client2", 100.0, 1);
    assert_eq!(m.expire_inactive(INACTIVE_SENSOR_EXPIRATION_MS), 0);
    assert_eq!(m.expire_inactive(INACTIVE_SENSOR_EXPIRATION_MS + 1), 1);
    assert_eq!(m.sensor_count(), 1);
    // A reused but expired sensor starts afresh: a 10000-byte burst is
    // exactly 500/s over a fresh 10 s window and fits.
    let later = 2 * INACTIVE_SENSOR_EXPIRATION_MS;
    assert_eq!(
        m.record(&c, QuotaType::Produce, "u", "client2", 5000.0, later),
        0
    );
}

/// A producer that sends 100-byte batches as fast as allowed and waits out
/// every throttle stays at its 1000 bytes/s quota.
///
/// Kafka's rate assumes 10 windows of history, so a new client may burst
/// quota × 10 s at once; afterwards the pattern repeats every ~11 s (a burst
/// when the previous burst's sample expires, then about one batch a second).
/// So 10-second spans after the first one see at most 10% over the quota,
/// and the long-run average is within 2%.
#[test]
fn simulated_producer_stays_within_quota() {
    let mut m = QuotaManager::new(SAMPLES, 1000);
    let mut c = QuotaConfigs::new();
    produce(&mut c, Some(Some("p")), None, Some(1000.0));
    let mut now = 0;
    let mut sends: Vec<i64> = Vec::new();
    while now < 120_000 {
        let throttle = m.record(&c, QuotaType::Produce, "p", "c", 100.0, now);
        sends.push(now);
        // A real client needs at least a millisecond per round trip.
        now += throttle.max(1);
    }
    let bytes_between =
        |from: i64, to: i64| sends.iter().filter(|&&t| t >= from && t < to).count() as f64 * 100.0;
    for start in (10_000..110_000).step_by(1000) {
        let rate = bytes_between(start, start + 10_000) / 10.0;
        assert!(rate <= 1100.0, "rate {rate} in [{start} ms, +10 s)");
    }
    let average = bytes_between(10_000, 120_000) / 110.0;
    assert!(
        (average - 1000.0).abs() <= 20.0,
        "long-run average {average}"
    );
    // Without throttling the loop would have sent 100 bytes every ms.
    assert!(sends.len() < 2000);
}
