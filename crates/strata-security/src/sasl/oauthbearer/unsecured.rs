//! Kafka's default OAUTHBEARER validator,
//! `OAuthBearerUnsecuredValidatorCallbackHandler` with
//! `OAuthBearerUnsecuredJws` and `OAuthBearerValidationUtils`: unsigned
//! (alg `none`) tokens, for development and tests only.
//!
//! Checks, in Kafka's order: the token parses (three parts, empty
//! signature, header `alg` = `none`); the scope claim is a string (one scope
//! item, not split) or a list; `exp` is a number; the principal claim is a
//! non-blank string; `iat`, if present, is not after now + skew; now − skew
//! is before `exp`; `exp` is after `iat`; every required scope item is
//! present (else `insufficient_scope`). Times are seconds, possibly
//! fractional.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::jwt::{seconds_to_ms, Jwt};
use super::{RejectionStatus, TokenRejection, TokenValidator, ValidatedToken};
use crate::sasl::{Clock, JaasConfig};

const PRINCIPAL_CLAIM_NAME_OPTION: &str = "unsecuredValidatorPrincipalClaimName";
const SCOPE_CLAIM_NAME_OPTION: &str = "unsecuredValidatorScopeClaimName";
const REQUIRED_SCOPE_OPTION: &str = "unsecuredValidatorRequiredScope";
const ALLOWABLE_CLOCK_SKEW_MS_OPTION: &str = "unsecuredValidatorAllowableClockSkewMs";

/// The `unsecuredValidator*` options of the OAuthBearerLoginModule entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidatorConfig {
    /// `unsecuredValidatorPrincipalClaimName` (default `sub`).
    pub principal_claim_name: String,
    /// `unsecuredValidatorScopeClaimName` (default `scope`).
    pub scope_claim_name: String,
    /// `unsecuredValidatorRequiredScope`, space-delimited (default none).
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (default 0, never negative).
    pub allowable_clock_skew_ms: i32,
}

impl Default for UnsecuredValidatorConfig {
    fn default() -> Self {
        UnsecuredValidatorConfig {
            principal_claim_name: "sub".to_owned(),
            scope_claim_name: "scope".to_owned(),
            required_scope: Vec::new(),
            allowable_clock_skew_ms: 0,
        }
    }
}

/// Errors reading the validator's options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthConfigError {
    /// Kafka needs exactly one login module in the listener's JAAS entry.
    #[error("must supply exactly 1 JAAS login module for OAUTHBEARER, got {count}")]
    ModuleCount {
        /// How many modules the entry has.
        count: usize,
    },
    /// The clock skew is not an integer.
    #[error("{ALLOWABLE_CLOCK_SKEW_MS_OPTION} is not an integer: {value:?}")]
    InvalidClockSkew {
        /// The option value.
        value: String,
    },
    /// The clock skew is negative.
    #[error("Allowable clock skew millis must not be negative: {value}")]
    NegativeClockSkew {
        /// The option value.
        value: i32,
    },
    /// A required scope item has characters RFC 6749 does not allow.
    #[error("Invalid scope value: {item}")]
    InvalidScope {
        /// The scope item.
        item: String,
    },
}

impl UnsecuredValidatorConfig {
    /// Reads the options (blank values mean the default, values are trimmed).
    ///
    /// # Errors
    /// A malformed or negative clock skew, or an invalid scope item.
    pub fn from_options(options: &BTreeMap<String, String>) -> Result<Self, OAuthConfigError> {
        let option = |key: &str| options.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
        let defaults = Self::default();
        let allowable_clock_skew_ms = match option(ALLOWABLE_CLOCK_SKEW_MS_OPTION) {
            None => 0,
            Some(v) => v
                .parse::<i32>()
                .map_err(|_| OAuthConfigError::InvalidClockSkew {
                    value: v.to_owned(),
                })?,
        };
        if allowable_clock_skew_ms < 0 {
            return Err(OAuthConfigError::NegativeClockSkew {
                value: allowable_clock_skew_ms,
            });
        }
        Ok(UnsecuredValidatorConfig {
            principal_claim_name: option(PRINCIPAL_CLAIM_NAME_OPTION)
                .map_or(defaults.principal_claim_name, str::to_owned),
            scope_claim_name: option(SCOPE_CLAIM_NAME_OPTION)
                .map_or(defaults.scope_claim_name, str::to_owned),
            required_scope: option(REQUIRED_SCOPE_OPTION).map_or(Ok(Vec::new()), parse_scope)?,
            allowable_clock_skew_ms,
        })
    }

    /// Reads the options of the listener's OAUTHBEARER JAAS entry, which
    /// must hold exactly one login module (as Kafka's handler requires).
    ///
    /// # Errors
    /// As [`UnsecuredValidatorConfig::from_options`], or
    /// [`OAuthConfigError::ModuleCount`].
    pub fn from_jaas(jaas: &JaasConfig) -> Result<Self, OAuthConfigError> {
        match jaas.modules.as_slice() {
            [module] => Self::from_options(&module.options),
            modules => Err(OAuthConfigError::ModuleCount {
                count: modules.len(),
            }),
        }
    }
}

/// Kafka's `OAuthBearerScopeUtils.parseScope`: space-delimited items of
/// `%x21 / %x23-5B / %x5D-7E`.
fn parse_scope(spaced: &str) -> Result<Vec<String>, OAuthConfigError> {
    spaced
        .split(' ')
        .filter(|item| !item.is_empty())
        .map(|item| {
            let valid = item
                .bytes()
                .all(|b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e));
            if valid {
                Ok(item.to_owned())
            } else {
                Err(OAuthConfigError::InvalidScope {
                    item: item.to_owned(),
                })
            }
        })
        .collect()
}

/// The unsecured validator.
pub(crate) struct UnsecuredValidator {
    config: UnsecuredValidatorConfig,
    clock: Arc<dyn Clock>,
}

impl UnsecuredValidator {
    pub(crate) fn new(config: UnsecuredValidatorConfig, clock: Arc<dyn Clock>) -> Self {
        UnsecuredValidator { config, clock }
    }
}

impl TokenValidator for UnsecuredValidator {
    fn validate(&self, token: &str) -> Result<ValidatedToken, TokenRejection> {
        let jwt = Jwt::parse(token)?;
        match jwt.header.get("alg") {
            Some(Value::String(alg)) if alg == "none" => {}
            Some(_) => {
                return Err(TokenRejection::invalid(
                    "Unsecured JWS must have 'none' for an algorithm",
                ))
            }
            None => {
                return Err(TokenRejection::invalid(
                    "JWS header must have an Algorithm value",
                ))
            }
        }
        if !jwt.signature.is_empty() {
            return Err(TokenRejection::invalid(
                "Unsecured JWS must not contain a digital signature",
            ));
        }
        let scope = token_scope(&jwt, &self.config.scope_claim_name)?;
        let exp = jwt
            .number_claim("exp")?
            .ok_or_else(|| TokenRejection::invalid("No expiration time in JWT"))?;
        let principal_claim = &self.config.principal_claim_name;
        let principal = match jwt.string_claim(principal_claim)? {
            Some(p) if !p.trim().is_empty() => p.to_owned(),
            _ => {
                return Err(TokenRejection::invalid(format!(
                    "No principal name in JWT claim: {principal_claim}"
                )))
            }
        };
        let iat = jwt.number_claim("iat")?;
        let now = self.clock.now_ms() as f64;
        let skew = f64::from(self.config.allowable_clock_skew_ms);
        if let Some(iat) = iat {
            if 1000.0 * iat > now + skew {
                return Err(TokenRejection::invalid(format!(
                    "The Issued At value ({iat} seconds) was after the indicated time ({now} ms) plus allowable clock skew ({skew} ms)"
                )));
            }
        }
        if now - skew >= 1000.0 * exp {
            return Err(TokenRejection::invalid(format!(
                "The indicated time ({now} ms) minus allowable clock skew ({skew} ms) was on or after the Expiration Time value ({exp} seconds)"
            )));
        }
        if let Some(iat) = iat {
            if exp <= iat {
                return Err(TokenRejection::invalid(format!(
                    "The Expiration Time time ({exp} seconds) was not after the Issued At time ({iat} seconds)"
                )));
            }
        }
        let required = &self.config.required_scope;
        if let Some(missing) = required.iter().find(|s| !scope.contains(*s)) {
            return Err(TokenRejection {
                status: RejectionStatus::InsufficientScope {
                    scope: java_list(required),
                },
                reason: format!("The provided scope was missing a required scope ({missing})"),
            });
        }
        Ok(ValidatedToken {
            principal,
            lifetime_ms: seconds_to_ms(exp),
            start_time_ms: iat.map(seconds_to_ms),
            scope,
        })
    }
}

/// Kafka's `calculateScope`: a string claim is one item (trimmed, none if
/// blank); a list claim gives its non-blank items; absent is empty; any
/// other type is an error.
fn token_scope(jwt: &Jwt<'_>, claim: &str) -> Result<BTreeSet<String>, TokenRejection> {
    let non_blank = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
    match jwt.claims.get(claim) {
        None | Some(Value::Null) => Ok(BTreeSet::new()),
        Some(Value::String(s)) => Ok(non_blank(s).into_iter().collect()),
        Some(Value::Array(items)) => Ok(items
            .iter()
            .filter_map(|item| match item {
                // Jackson's asText(): scalars as text, containers as "".
                Value::String(s) => non_blank(s),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                Value::Null => Some("null".to_owned()),
                Value::Array(_) | Value::Object(_) => None,
            })
            .collect()),
        Some(_) => Err(TokenRejection::invalid(format!(
            "The '{claim}' claim was not of type List"
        ))),
    }
}

/// Java's `List.toString()`: `[a, b]`.
fn java_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_default_and_trim_like_kafka() {
        assert_eq!(
            UnsecuredValidatorConfig::from_options(&BTreeMap::new()).unwrap(),
            UnsecuredValidatorConfig::default()
        );
        let options: BTreeMap<String, String> = [
            (PRINCIPAL_CLAIM_NAME_OPTION, " principal "),
            (SCOPE_CLAIM_NAME_OPTION, "  "),
            (REQUIRED_SCOPE_OPTION, " test1  test2 "),
            (ALLOWABLE_CLOCK_SKEW_MS_OPTION, " 1000 "),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let config = UnsecuredValidatorConfig::from_options(&options).unwrap();
        assert_eq!(config.principal_claim_name, "principal");
        assert_eq!(config.scope_claim_name, "scope");
        assert_eq!(config.required_scope, ["test1", "test2"]);
        assert_eq!(config.allowable_clock_skew_ms, 1000);
    }

    #[test]
    fn bad_options_are_refused() {
        let one = |k: &str, v: &str| {
            UnsecuredValidatorConfig::from_options(&BTreeMap::from([(k.to_owned(), v.to_owned())]))
        };
        assert!(matches!(
            one(ALLOWABLE_CLOCK_SKEW_MS_OPTION, "-1"),
            Err(OAuthConfigError::NegativeClockSkew { value: -1 })
        ));
        assert!(matches!(
            one(ALLOWABLE_CLOCK_SKEW_MS_OPTION, "soon"),
            Err(OAuthConfigError::InvalidClockSkew { .. })
        ));
        assert!(matches!(
            one(REQUIRED_SCOPE_OPTION, "ok \"quoted\""),
            Err(OAuthConfigError::InvalidScope { .. })
        ));
    }

    #[test]
    fn java_list_rendering() {
        assert_eq!(java_list(&["a".into(), "b".into()]), "[a, b]");
        assert_eq!(java_list(&[]), "[]");
    }
}
