//! Guards the OAUTHBEARER exchange with Kafka's unsecured validator: tokens
//! shaped like `OAuthBearerUnsecuredLoginCallbackHandler` makes them, the
//! two-step failure (JSON challenge, `0x01`, error), expiry against an
//! injected clock, scope, and authorization ids.

use std::sync::atomic::{AtomicI64, Ordering};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::*;
use crate::sasl::{new_server, CredentialStore, ScramCredential, ScramMechanism};

/// A clock the test sets.
pub(crate) struct TestClock(pub AtomicI64);

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

struct NoUsers;

impl CredentialStore for NoUsers {
    fn plain_password_matches(&self, _: &str, _: &[u8]) -> Option<bool> {
        None
    }

    fn scram_credential(&self, _: ScramMechanism, _: &str) -> Option<ScramCredential> {
        None
    }
}

const NOW_MS: i64 = 1_700_000_000_000;

/// What Kafka's unsecured login handler makes: `{"alg":"none"}`, claims with
/// fractional `iat`/`exp` seconds, base64url without padding, empty signature.
fn unsecured_token(claims: &str) -> String {
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

fn default_claims() -> String {
    let now = NOW_MS as f64 / 1000.0;
    format!(r#"{{"exp":{},"iat":{},"sub":"user"}}"#, now + 3600.0, now)
}

fn initial_response(authzid: &str, token: &str) -> Vec<u8> {
    let a = if authzid.is_empty() {
        String::new()
    } else {
        format!("a={authzid}")
    };
    format!("n,{a},\x01auth=Bearer {token}\x01\x01").into_bytes()
}

fn validator(config: UnsecuredValidatorConfig) -> OAuthBearerValidator {
    OAuthBearerValidator::unsecured(config, Arc::new(TestClock(AtomicI64::new(NOW_MS))))
}

fn server(config: UnsecuredValidatorConfig) -> Box<dyn SaslServer> {
    new_server(
        Mechanism::OAuthBearer,
        Arc::new(NoUsers),
        &validator(config),
    )
}

#[test]
fn kafka_unsecured_login_token_authenticates() {
    let mut server = server(UnsecuredValidatorConfig::default());
    let step = server
        .step(&initial_response("", &unsecured_token(&default_claims())))
        .unwrap();
    assert_eq!(
        step,
        Step::Complete {
            authorization_id: "user".into(),
            final_token: vec![],
            lifetime_ms: Some(NOW_MS + 3_600_000),
        }
    );
}

#[test]
fn matching_authorization_id_and_extensions_are_accepted() {
    let mut server = server(UnsecuredValidatorConfig::default());
    let token = unsecured_token(&default_claims());
    let response = format!("n,a=user,\x01auth=Bearer {token}\x01traceId=abc\x01\x01");
    assert!(matches!(
        server.step(response.as_bytes()),
        Ok(Step::Complete { .. })
    ));
}

/// Sends `token`, expects the JSON challenge, acknowledges, returns the error.
fn two_step_failure(server: &mut dyn SaslServer, token: &str, expected_json: &str) -> SaslError {
    let challenge = server.step(&initial_response("", token)).unwrap();
    assert_eq!(
        challenge,
        Step::Challenge(expected_json.as_bytes().to_vec())
    );
    let err = server.step(&[0x01]).unwrap_err();
    assert_eq!(err.client_message(), expected_json);
    assert!(server.step(&[0x01]).is_err(), "the exchange stays failed");
    err
}

#[test]
fn expired_token_fails_in_two_steps() {
    let now = NOW_MS as f64 / 1000.0;
    let claims = format!(
        r#"{{"exp":{},"iat":{},"sub":"user"}}"#,
        now - 1.0,
        now - 3600.0
    );
    let mut server = server(UnsecuredValidatorConfig::default());
    let err = two_step_failure(
        &mut *server,
        &unsecured_token(&claims),
        r#"{"status":"invalid_token"}"#,
    );
    assert!(err.to_string().contains("Expiration Time"), "{err}");
    assert!(!err.to_string().contains(&unsecured_token(&claims)));
}

#[test]
fn clock_skew_is_honoured_and_expiry_follows_the_clock() {
    let clock = Arc::new(TestClock(AtomicI64::new(NOW_MS)));
    let config = UnsecuredValidatorConfig {
        allowable_clock_skew_ms: 5000,
        ..Default::default()
    };
    let v = OAuthBearerValidator::unsecured(config, clock.clone());
    let exp = NOW_MS / 1000 + 10;
    let token = unsecured_token(&format!(r#"{{"exp":{exp},"sub":"user"}}"#));
    assert!(v.validate(&token).is_ok());
    clock.0.store(exp * 1000 + 4999, Ordering::SeqCst);
    assert!(v.validate(&token).is_ok(), "within the skew");
    clock.0.store(exp * 1000 + 5000, Ordering::SeqCst);
    assert!(v.validate(&token).is_err(), "past the skew");
    // iat in the future beyond the skew
    clock.0.store(NOW_MS, Ordering::SeqCst);
    let future = unsecured_token(&format!(
        r#"{{"exp":{},"iat":{},"sub":"user"}}"#,
        NOW_MS / 1000 + 100,
        NOW_MS / 1000 + 6
    ));
    assert!(v.validate(&future).is_err());
}

#[test]
fn missing_scope_is_insufficient_scope() {
    let config = UnsecuredValidatorConfig {
        required_scope: vec!["test".into(), "test2".into()],
        ..Default::default()
    };
    let now = NOW_MS as f64 / 1000.0;
    let claims = format!(r#"{{"exp":{},"sub":"user","scope":["test"]}}"#, now + 60.0);
    let mut s = server(config.clone());
    two_step_failure(
        &mut *s,
        &unsecured_token(&claims),
        r#"{"status":"insufficient_scope", "scope":"[test, test2]"}"#,
    );
    let claims = format!(
        r#"{{"exp":{},"sub":"user","scope":["test2"," test "]}}"#,
        now + 60.0
    );
    let mut s = server(config);
    assert!(matches!(
        s.step(&initial_response("", &unsecured_token(&claims))),
        Ok(Step::Complete { .. })
    ));
}

#[test]
fn a_new_response_after_a_challenge_is_evaluated_afresh() {
    let mut s = server(UnsecuredValidatorConfig::default());
    let bad = unsecured_token(r#"{"sub":"user"}"#);
    assert!(matches!(
        s.step(&initial_response("", &bad)),
        Ok(Step::Challenge(_))
    ));
    let good = unsecured_token(&default_claims());
    assert!(matches!(
        s.step(&initial_response("", &good)),
        Ok(Step::Complete { .. })
    ));
}

#[test]
fn wrong_authorization_id_is_refused_explicitly() {
    let mut s = server(UnsecuredValidatorConfig::default());
    let err = s
        .step(&initial_response(
            "admin",
            &unsecured_token(&default_claims()),
        ))
        .unwrap_err();
    assert_eq!(
        err.client_message(),
        "Authentication failed: Client requested an authorization id (admin) that is different from the token's principal name (user)"
    );
}

#[test]
fn malformed_initial_response_fails_at_once() {
    let mut s = server(UnsecuredValidatorConfig::default());
    let err = s.step(b"n,,\x01auth=Bearer\x01\x01").unwrap_err();
    assert!(matches!(
        err.reason,
        FailureReason::MalformedOAuthBearerResponse { .. }
    ));
    assert_eq!(
        err.client_message(),
        "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
    );
    let mut s = server(UnsecuredValidatorConfig::default());
    assert!(
        s.step(&[0x01]).is_err(),
        "0x01 without a pending error is malformed"
    );
}

#[test]
fn unsecured_validator_rejections() {
    let v = validator(UnsecuredValidatorConfig {
        principal_claim_name: "principal".into(),
        ..Default::default()
    });
    let exp = NOW_MS / 1000 + 60;
    let none = |claims: &str| unsecured_token(claims);
    for (why, token) in [
        (
            "signed",
            format!(
                "{}sig",
                none(&format!(r#"{{"exp":{exp},"principal":"p"}}"#))
            ),
        ),
        (
            "alg not none",
            format!(
                "{}.{}.",
                URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256"}"#),
                URL_SAFE_NO_PAD.encode(format!(r#"{{"exp":{exp},"principal":"p"}}"#))
            ),
        ),
        (
            "no alg",
            format!(
                "{}.{}.",
                URL_SAFE_NO_PAD.encode("{}"),
                URL_SAFE_NO_PAD.encode("{}")
            ),
        ),
        ("no exp", none(r#"{"principal":"p"}"#)),
        ("string exp", none(r#"{"exp":"tomorrow","principal":"p"}"#)),
        (
            "no principal",
            none(&format!(r#"{{"exp":{exp},"sub":"p"}}"#)),
        ),
        (
            "blank principal",
            none(&format!(r#"{{"exp":{exp},"principal":"  "}}"#)),
        ),
        (
            "numeric principal",
            none(&format!(r#"{{"exp":{exp},"principal":5}}"#)),
        ),
        (
            "scope object",
            none(&format!(r#"{{"exp":{exp},"principal":"p","scope":5}}"#)),
        ),
        (
            "exp before iat",
            none(&format!(r#"{{"exp":{exp},"iat":{exp},"principal":"p"}}"#)),
        ),
        ("not a jwt", "abc".to_owned()),
    ] {
        let rejection = v.validate(&token).unwrap_err();
        assert_eq!(rejection.status, RejectionStatus::InvalidToken, "{why}");
    }
    let ok = v.validate(&none(&format!(
        r#"{{"exp":{exp}.25,"iat":1.5,"principal":"p","scope":"a b"}}"#
    )));
    let ok = ok.unwrap();
    assert_eq!(ok.principal, "p");
    assert_eq!(ok.lifetime_ms, exp * 1000 + 250);
    assert_eq!(ok.start_time_ms, Some(1500));
    assert_eq!(
        ok.scope,
        BTreeSet::from(["a b".to_owned()]),
        "a string scope is one item, as in Kafka"
    );
}
