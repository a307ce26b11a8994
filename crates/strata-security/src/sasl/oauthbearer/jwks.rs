//! Signed-JWT validation against a JWK set, after Kafka's
//! `OAuthBearerValidatorCallbackHandler` / `ValidatorAccessTokenValidator`
//! (which use jose4j).
//!
//! Fetching and refreshing `sasl.oauthbearer.jwks.endpoint.url` is the
//! broker's job; it hands the JSON document to [`JwksValidator::new`] or
//! [`JwksValidator::replace_keys`].
//!
//! Checks, any failure giving `invalid_token`:
//! - header `alg` is `RS256` or `ES256` (`none` and everything else refused);
//!   the key is the one whose `kid` matches the header's (every key of the
//!   right type is tried when the header has no `kid`); RSA keys need 2048
//!   bits or more; an ES256 signature is `r || s` (RFC 7518).
//! - `exp` and `iat` are required numbers; now ≥ `exp` + skew is expired;
//!   `nbf`, if present, must be ≤ now + skew.
//! - `aud`: with `sasl.oauthbearer.expected.audience` set, the token's `aud`
//!   (string or list) must contain one of them; with it unset, a token that
//!   has an `aud` is refused (jose4j's default, which Kafka keeps).
//! - `iss` must equal `sasl.oauthbearer.expected.issuer` when that is set.
//! - the sub claim is a non-blank string (trimmed); the scope claim is a
//!   string (one item) or a list of distinct non-blank strings.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use aws_lc_rs::signature::{
    RsaPublicKeyComponents, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED, RSA_PKCS1_2048_8192_SHA256,
};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

use super::jwt::Jwt;
use super::{TokenRejection, TokenValidator, ValidatedToken};
use crate::sasl::Clock;

/// The claim checks of the secured validator (Kafka's broker settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksConfig {
    /// `sasl.oauthbearer.expected.audience` (any one must match; empty = none
    /// expected, and tokens carrying `aud` are refused).
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name` (default `sub`).
    pub sub_claim_name: String,
    /// `sasl.oauthbearer.scope.claim.name` (default `scope`).
    pub scope_claim_name: String,
    /// `sasl.oauthbearer.clock.skew.seconds` (default 30).
    pub clock_skew_seconds: i64,
}

impl Default for JwksConfig {
    fn default() -> Self {
        JwksConfig {
            expected_audience: Vec::new(),
            expected_issuer: None,
            sub_claim_name: "sub".to_owned(),
            scope_claim_name: "scope".to_owned(),
            clock_skew_seconds: 30,
        }
    }
}

/// Errors reading a JWK set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// Not JSON, or no `keys` array.
    #[error("JWK set is not a JSON object with a \"keys\" array")]
    NotAKeySet,
    /// A key of a supported type is missing a member or has a bad one.
    #[error("JWK {index} (kid {kid:?}) is invalid: {detail}")]
    InvalidKey {
        /// Position in `keys`.
        index: usize,
        /// Its `kid`, if any.
        kid: Option<String>,
        /// What is wrong.
        detail: &'static str,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Rsa,
    P256,
}

/// One usable verification key.
#[derive(Debug, Clone)]
struct Jwk {
    kid: Option<String>,
    kind: KeyType,
    /// RSA: (n, e); P-256: the uncompressed point in `n`, `e` empty.
    n: Vec<u8>,
    e: Vec<u8>,
}

/// Validates RS256/ES256 JWTs against a JWK set.
pub struct JwksValidator {
    keys: RwLock<Arc<Vec<Jwk>>>,
    config: JwksConfig,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for JwksValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksValidator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl JwksValidator {
    /// A validator over the JWK set `jwks_json`.
    ///
    /// # Errors
    /// The document is not a JWK set, or an RSA/EC key in it is malformed.
    /// Keys of other types (or curves) are skipped, as jose4j does.
    pub fn new(
        jwks_json: &str,
        config: JwksConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, JwksError> {
        let keys = parse_jwks(jwks_json)?;
        Ok(JwksValidator {
            keys: RwLock::new(Arc::new(keys)),
            config,
            clock,
        })
    }

    /// Swaps in a refreshed JWK set; on error the old keys stay.
    ///
    /// # Errors
    /// As [`JwksValidator::new`].
    pub fn replace_keys(&self, jwks_json: &str) -> Result<(), JwksError> {
        let keys = Arc::new(parse_jwks(jwks_json)?);
        // A poisoned lock only means a writer panicked between two plain
        // assignments; the Arc inside is still whole.
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
        Ok(())
    }

    fn current_keys(&self) -> Arc<Vec<Jwk>> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn verify_signature(&self, jwt: &Jwt<'_>) -> Result<(), TokenRejection> {
        let kind = match jwt.header.get("alg").and_then(Value::as_str) {
            Some("RS256") => KeyType::Rsa,
            Some("ES256") => KeyType::P256,
            Some(other) => {
                return Err(TokenRejection::invalid(format!(
                    "algorithm {other:?} is not allowed"
                )))
            }
            None => return Err(TokenRejection::invalid("JWS header has no algorithm")),
        };
        let kid = jwt.header.get("kid").and_then(Value::as_str);
        let signature = jwt
            .signature_bytes()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| TokenRejection::invalid("missing or malformed signature"))?;
        let message = jwt.signing_input.as_bytes();
        let keys = self.current_keys();
        let mut candidates = keys
            .iter()
            .filter(|k| k.kind == kind && (kid.is_none() || k.kid.as_deref() == kid))
            .peekable();
        if candidates.peek().is_none() {
            return Err(TokenRejection::invalid(format!(
                "no JWK for kid {kid:?} and {kind:?}"
            )));
        }
        let verified = candidates.any(|key| match key.kind {
            KeyType::Rsa => RsaPublicKeyComponents {
                n: &key.n,
                e: &key.e,
            }
            .verify(&RSA_PKCS1_2048_8192_SHA256, message, &signature)
            .is_ok(),
            KeyType::P256 => UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &key.n)
                .verify(message, &signature)
                .is_ok(),
        });
        if verified {
            Ok(())
        } else {
            Err(TokenRejection::invalid("signature verification failed"))
        }
    }

    fn check_claims(&self, jwt: &Jwt<'_>) -> Result<ValidatedToken, TokenRejection> {
        let c = &self.config;
        let now_ms = self.clock.now_ms();
        let skew_ms = c.clock_skew_seconds.saturating_mul(1000);
        // jose4j reads NumericDate claims as whole seconds.
        let seconds = |name: &str| -> Result<Option<i64>, TokenRejection> {
            Ok(jwt.number_claim(name)?.map(|s| s.trunc() as i64))
        };
        let exp = seconds("exp")?
            .ok_or_else(|| TokenRejection::invalid("No Expiration Time (exp) claim"))?;
        let iat =
            seconds("iat")?.ok_or_else(|| TokenRejection::invalid("No Issued At (iat) claim"))?;
        if exp < 0 || iat < 0 {
            return Err(TokenRejection::invalid("exp and iat must be non-negative"));
        }
        let exp_ms = exp.saturating_mul(1000);
        if now_ms >= exp_ms.saturating_add(skew_ms) {
            return Err(TokenRejection::invalid(format!(
                "token expired at {exp} (now {now_ms} ms)"
            )));
        }
        if let Some(nbf) = seconds("nbf")? {
            if now_ms.saturating_add(skew_ms) < nbf.saturating_mul(1000) {
                return Err(TokenRejection::invalid(format!(
                    "token not valid before {nbf}"
                )));
            }
        }
        self.check_audience(jwt)?;
        if let Some(issuer) = &c.expected_issuer {
            if jwt.string_claim("iss")? != Some(issuer.as_str()) {
                return Err(TokenRejection::invalid("issuer (iss) does not match"));
            }
        }
        let principal = match jwt.string_claim(&c.sub_claim_name)? {
            Some(sub) if !sub.trim().is_empty() => sub.trim().to_owned(),
            _ => {
                return Err(TokenRejection::invalid(format!(
                    "{} value must be a non-blank string",
                    c.sub_claim_name
                )))
            }
        };
        Ok(ValidatedToken {
            principal,
            lifetime_ms: exp_ms,
            start_time_ms: Some(iat.saturating_mul(1000)),
            scope: self.scope(jwt)?,
        })
    }

    fn check_audience(&self, jwt: &Jwt<'_>) -> Result<(), TokenRejection> {
        let audiences: Vec<&str> = match jwt.claims.get("aud") {
            None => Vec::new(),
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| TokenRejection::invalid("aud is not a string list"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(TokenRejection::invalid("aud is not a string or list")),
        };
        let expected = &self.config.expected_audience;
        if expected.is_empty() {
            if audiences.is_empty() {
                return Ok(());
            }
            return Err(TokenRejection::invalid(
                "token has an aud claim but no audience is expected",
            ));
        }
        if audiences.iter().any(|a| expected.iter().any(|e| e == a)) {
            Ok(())
        } else {
            Err(TokenRejection::invalid("audience (aud) does not match"))
        }
    }

    fn scope(&self, jwt: &Jwt<'_>) -> Result<BTreeSet<String>, TokenRejection> {
        let name = &self.config.scope_claim_name;
        let raw: Vec<&Value> = match jwt.claims.get(name) {
            Some(v @ Value::String(_)) => vec![v],
            Some(Value::Array(items)) => items.iter().collect(),
            _ => Vec::new(),
        };
        let mut scope = BTreeSet::new();
        for value in raw {
            let item = value
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    TokenRejection::invalid(format!("{name} values must be non-blank strings"))
                })?;
            if !scope.insert(item.to_owned()) {
                return Err(TokenRejection::invalid(format!(
                    "{name} value must not contain duplicates"
                )));
            }
        }
        Ok(scope)
    }
}

impl TokenValidator for JwksValidator {
    fn validate(&self, token: &str) -> Result<ValidatedToken, TokenRejection> {
        let jwt = Jwt::parse(token)?;
        self.verify_signature(&jwt)?;
        self.check_claims(&jwt)
    }
}

fn parse_jwks(json: &str) -> Result<Vec<Jwk>, JwksError> {
    let doc: Value = serde_json::from_str(json).map_err(|_| JwksError::NotAKeySet)?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or(JwksError::NotAKeySet)?;
    let mut out = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        let member = |name: &str| key.get(name).and_then(Value::as_str);
        let kid = member("kid").map(str::to_owned);
        let invalid = |detail| JwksError::InvalidKey {
            index,
            kid: kid.clone(),
            detail,
        };
        // Encryption keys are never used to verify.
        if member("use").is_some_and(|u| u != "sig") {
            continue;
        }
        let b64 = |name: &str| -> Result<Vec<u8>, JwksError> {
            let text = member(name).ok_or_else(|| invalid("missing key member"))?;
            URL_SAFE_NO_PAD
                .decode(text.trim_end_matches('='))
                .map_err(|_| invalid("key member is not base64url"))
        };
        match (member("kty"), member("crv")) {
            (Some("RSA"), _) => {
                if member("alg").is_some_and(|a| a != "RS256") {
                    continue;
                }
                let n = b64("n")?;
                let e = b64("e")?;
                out.push(Jwk {
                    kid,
                    kind: KeyType::Rsa,
                    n: strip_zeros(n),
                    e: strip_zeros(e),
                });
            }
            (Some("EC"), Some("P-256")) => {
                if member("alg").is_some_and(|a| a != "ES256") {
                    continue;
                }
                let (x, y) = (b64("x")?, b64("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return Err(invalid("P-256 coordinates must be 32 bytes"));
                }
                let mut point = Vec::with_capacity(65);
                point.push(0x04);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                out.push(Jwk {
                    kid,
                    kind: KeyType::P256,
                    n: point,
                    e: Vec::new(),
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Big-endian integers without leading zero bytes, as aws-lc wants them.
fn strip_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    bytes.drain(..zeros);
    bytes
}

#[cfg(test)]
mod tests;
