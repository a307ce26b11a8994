//! Guards the JWKS validator with keys generated here: RS256 and ES256
//! tokens signed by the matching key pass; a wrong key, a tampered payload,
//! alg `none`, expiry, audience and issuer mismatches are refused.

use std::sync::atomic::AtomicI64;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{
    EcdsaKeyPair, KeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING, RSA_PKCS1_SHA256,
};

use super::*;
use crate::sasl::oauthbearer::tests::TestClock;
use crate::sasl::oauthbearer::RejectionStatus;

const NOW_S: i64 = 1_700_000_000;

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

struct Keys {
    rsa: RsaKeyPair,
    ec: EcdsaKeyPair,
}

impl Keys {
    fn new() -> Self {
        Keys {
            rsa: RsaKeyPair::generate(KeySize::Rsa2048).unwrap(),
            ec: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap(),
        }
    }

    fn jwks(&self) -> String {
        let public = self.rsa.public_key();
        let n = b64(public.modulus().big_endian_without_leading_zero());
        let e = b64(public.exponent().big_endian_without_leading_zero());
        let point = self.ec.public_key().as_ref();
        let (x, y) = (b64(&point[1..33]), b64(&point[33..65]));
        format!(
            r#"{{"keys":[
                {{"kty":"RSA","kid":"rsa1","use":"sig","alg":"RS256","n":"{n}","e":"{e}"}},
                {{"kty":"EC","kid":"ec1","crv":"P-256","x":"{x}","y":"{y}"}},
                {{"kty":"oct","kid":"hmac","k":"c2VjcmV0"}}
            ]}}"#
        )
    }

    fn sign(&self, header: &str, claims: &str) -> String {
        let input = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
        let signature = if header.contains("RS256") {
            let mut sig = vec![0u8; self.rsa.public_modulus_len()];
            self.rsa
                .sign(
                    &RSA_PKCS1_SHA256,
                    &SystemRandom::new(),
                    input.as_bytes(),
                    &mut sig,
                )
                .unwrap();
            sig
        } else {
            self.ec
                .sign(&SystemRandom::new(), input.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec()
        };
        format!("{input}.{}", b64(&signature))
    }
}

fn claims(extra: &str) -> String {
    format!(
        r#"{{"sub":" alice ","iat":{},"exp":{},"scope":["read","write"]{extra}}}"#,
        NOW_S - 10,
        NOW_S + 600
    )
}

fn validator(keys: &Keys, config: JwksConfig) -> JwksValidator {
    JwksValidator::new(
        &keys.jwks(),
        config,
        Arc::new(TestClock(AtomicI64::new(NOW_S * 1000))),
    )
    .unwrap()
}

#[test]
fn rs256_and_es256_tokens_validate() {
    let keys = Keys::new();
    let v = validator(&keys, JwksConfig::default());
    for header in [
        r#"{"alg":"RS256","kid":"rsa1"}"#,
        r#"{"alg":"ES256","kid":"ec1"}"#,
        r#"{"alg":"ES256"}"#,
    ] {
        let ok = v.validate(&keys.sign(header, &claims(""))).unwrap();
        assert_eq!(ok.principal, "alice", "{header}");
        assert_eq!(ok.lifetime_ms, (NOW_S + 600) * 1000);
        assert_eq!(
            ok.scope,
            BTreeSet::from(["read".to_owned(), "write".to_owned()])
        );
    }
}

#[test]
fn wrong_key_tampering_and_alg_none_are_refused() {
    let keys = Keys::new();
    let other = Keys::new();
    let v = validator(&keys, JwksConfig::default());
    let foreign = other.sign(r#"{"alg":"ES256","kid":"ec1"}"#, &claims(""));
    assert_eq!(
        v.validate(&foreign).unwrap_err().status,
        RejectionStatus::InvalidToken
    );

    let good = keys.sign(r#"{"alg":"RS256","kid":"rsa1"}"#, &claims(""));
    let mut parts: Vec<&str> = good.split('.').collect();
    let forged_claims = b64(claims(r#","admin":true"#).as_bytes());
    parts[1] = &forged_claims;
    assert!(v.validate(&parts.join(".")).is_err(), "tampered payload");

    let unknown_kid = keys.sign(r#"{"alg":"RS256","kid":"nope"}"#, &claims(""));
    assert!(v.validate(&unknown_kid).is_err());
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none"}"#),
        b64(claims("").as_bytes())
    );
    assert!(v.validate(&none).is_err());
    let hs = format!(
        "{}.{}.c2ln",
        b64(br#"{"alg":"HS256","kid":"hmac"}"#),
        b64(claims("").as_bytes())
    );
    assert!(v.validate(&hs).is_err());
}

#[test]
fn claims_are_checked_like_jose4j() {
    let keys = Keys::new();
    let sign = |claims: &str| keys.sign(r#"{"alg":"ES256","kid":"ec1"}"#, claims);
    let v = validator(&keys, JwksConfig::default());
    // expired beyond the 30 s skew, within it, no iat, not yet valid, blank sub
    let expired = format!(
        r#"{{"sub":"a","iat":{},"exp":{}}}"#,
        NOW_S - 100,
        NOW_S - 30
    );
    assert!(v.validate(&sign(&expired)).is_err());
    let in_skew = format!(
        r#"{{"sub":"a","iat":{},"exp":{}}}"#,
        NOW_S - 100,
        NOW_S - 29
    );
    assert!(v.validate(&sign(&in_skew)).is_ok());
    assert!(v
        .validate(&sign(&format!(r#"{{"sub":"a","exp":{}}}"#, NOW_S + 60)))
        .is_err());
    let nbf = format!(
        r#"{{"sub":"a","iat":{},"exp":{},"nbf":{}}}"#,
        NOW_S,
        NOW_S + 600,
        NOW_S + 31
    );
    assert!(v.validate(&sign(&nbf)).is_err());
    let blank = format!(r#"{{"sub":"  ","iat":{},"exp":{}}}"#, NOW_S, NOW_S + 600);
    assert!(v.validate(&sign(&blank)).is_err());
    let dup = format!(
        r#"{{"sub":"a","iat":{},"exp":{},"scope":["x","x "]}}"#,
        NOW_S,
        NOW_S + 600
    );
    assert!(v.validate(&sign(&dup)).is_err());
    // aud present but none expected: refused, as jose4j does by default
    assert!(v.validate(&sign(&claims(r#","aud":"kafka""#))).is_err());
}

#[test]
fn audience_and_issuer() {
    let keys = Keys::new();
    let sign = |claims: &str| keys.sign(r#"{"alg":"RS256","kid":"rsa1"}"#, claims);
    let config = JwksConfig {
        expected_audience: vec!["kafka".into(), "strata".into()],
        expected_issuer: Some("https://idp.example".into()),
        sub_claim_name: "client_id".into(),
        ..Default::default()
    };
    let v = validator(&keys, config);
    let ok = claims(r#","aud":["other","strata"],"iss":"https://idp.example","client_id":"svc""#);
    assert_eq!(v.validate(&sign(&ok)).unwrap().principal, "svc");
    let wrong_aud = claims(r#","aud":"other","iss":"https://idp.example","client_id":"svc""#);
    assert!(v.validate(&sign(&wrong_aud)).is_err());
    let no_aud = claims(r#","iss":"https://idp.example","client_id":"svc""#);
    assert!(v.validate(&sign(&no_aud)).is_err());
    let wrong_iss = claims(r#","aud":"kafka","iss":"https://evil.example","client_id":"svc""#);
    assert!(v.validate(&sign(&wrong_iss)).is_err());
}

#[test]
fn key_sets_are_parsed_and_replaced() {
    let keys = Keys::new();
    let clock = Arc::new(TestClock(AtomicI64::new(NOW_S * 1000)));
    assert_eq!(
        JwksValidator::new("[]", JwksConfig::default(), clock.clone()).unwrap_err(),
        JwksError::NotAKeySet
    );
    let bad = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"AAAA","y":"AAAA"}]}"#;
    assert!(matches!(
        JwksValidator::new(bad, JwksConfig::default(), clock.clone()),
        Err(JwksError::InvalidKey { index: 0, .. })
    ));
    let v = JwksValidator::new(r#"{"keys":[]}"#, JwksConfig::default(), clock).unwrap();
    let token = keys.sign(r#"{"alg":"ES256","kid":"ec1"}"#, &claims(""));
    assert!(v.validate(&token).is_err(), "no keys yet");
    v.replace_keys(&keys.jwks()).unwrap();
    assert!(v.validate(&token).is_ok(), "after the refresh");
    assert!(v.replace_keys("not json").is_err());
    assert!(
        v.validate(&token).is_ok(),
        "a failed refresh keeps the old keys"
    );
}

#[test]
fn jwks_validator_drives_the_sasl_exchange() {
    use crate::sasl::oauthbearer::OAuthBearerValidator;
    use crate::sasl::{new_server, Mechanism, Step};
    struct NoUsers;
    impl crate::sasl::CredentialStore for NoUsers {
        fn plain_password_matches(&self, _: &str, _: &[u8]) -> Option<bool> {
            None
        }
        fn scram_credential(
            &self,
            _: crate::sasl::ScramMechanism,
            _: &str,
        ) -> Option<crate::sasl::ScramCredential> {
            None
        }
    }
    let keys = Keys::new();
    let oauth = OAuthBearerValidator::jwks(Arc::new(validator(&keys, JwksConfig::default())));
    let mut server = new_server(Mechanism::OAuthBearer, Arc::new(NoUsers), &oauth);
    let token = keys.sign(r#"{"alg":"RS256","kid":"rsa1"}"#, &claims(""));
    let step = server
        .step(format!("n,,\x01auth=Bearer {token}\x01\x01").as_bytes())
        .unwrap();
    assert!(
        matches!(step, Step::Complete { ref authorization_id, .. } if authorization_id == "alice")
    );
}
