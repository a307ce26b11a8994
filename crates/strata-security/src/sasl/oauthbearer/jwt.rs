//! JWT compact serialization (RFC 7515/7519) as the validators read it:
//! three dot-separated base64url parts, the first two JSON objects.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use serde_json::{Map, Value};

use super::TokenRejection;

/// Base64url with or without padding and lenient trailing bits. Kafka's
/// unsecured validator decodes with Java's basic (`+/`) decoder, which
/// refuses the `-_` that base64url output contains for some claims; this
/// accepts both alphabets so every token Kafka accepts is accepted.
fn decode_lenient(part: &str) -> Option<Vec<u8>> {
    const CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const URL: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);
    let normalized: String = part
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            other => other,
        })
        .collect();
    URL.decode(normalized).ok()
}

/// A token split into its parts, header and claims parsed.
pub(crate) struct Jwt<'a> {
    /// `header.payload`, the signed input.
    pub signing_input: &'a str,
    /// The third part, still encoded.
    pub signature: &'a str,
    pub header: Map<String, Value>,
    pub claims: Map<String, Value>,
}

impl<'a> Jwt<'a> {
    /// Splits and parses `token`. The signature is not checked here.
    pub fn parse(token: &'a str) -> Result<Self, TokenRejection> {
        if token.contains("..") {
            return Err(TokenRejection::invalid(
                "Malformed compact serialization contains '..'",
            ));
        }
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenRejection::invalid(
                "compact serializations must have 3 dot-separated Base64URL-encoded values",
            ));
        };
        let signing_input = &token[..header.len() + 1 + payload.len()];
        Ok(Jwt {
            signing_input,
            signature,
            header: object(header)?,
            claims: object(payload)?,
        })
    }

    /// The decoded signature.
    pub fn signature_bytes(&self) -> Option<Vec<u8>> {
        decode_lenient(self.signature)
    }

    /// A claim that must be a JSON number, if present.
    pub fn number_claim(&self, name: &str) -> Result<Option<f64>, TokenRejection> {
        match self.claims.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| {
                TokenRejection::invalid(format!("The '{name}' claim is not a finite number"))
            }),
            Some(_) => Err(TokenRejection::invalid(format!(
                "The '{name}' claim was not of type Number"
            ))),
        }
    }

    /// A claim that must be a JSON string, if present.
    pub fn string_claim(&self, name: &str) -> Result<Option<&str>, TokenRejection> {
        match self.claims.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(TokenRejection::invalid(format!(
                "The '{name}' claim was not of type String"
            ))),
        }
    }
}

fn object(part: &str) -> Result<Map<String, Value>, TokenRejection> {
    let bytes = decode_lenient(part)
        .ok_or_else(|| TokenRejection::invalid("malformed Base64 URL encoded value"))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(TokenRejection::invalid("malformed JSON")),
    }
}

/// Seconds (possibly fractional) to milliseconds, rounded like Java's
/// `Math.round(seconds * 1000)`, saturating.
pub(crate) fn seconds_to_ms(seconds: f64) -> i64 {
    // `as` saturates for floats; NaN cannot occur (JSON numbers are finite).
    (seconds * 1000.0 + 0.5).floor() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_decodes_both_alphabets() {
        // {"alg":"none"} . {"sub":"me?>"} - the claims encode with '_' / '/'
        let url = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtZT8-In0.";
        let jwt = Jwt::parse(url).unwrap();
        assert_eq!(jwt.header["alg"], "none");
        assert_eq!(jwt.string_claim("sub").unwrap(), Some("me?>"));
        assert_eq!(jwt.signing_input, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtZT8-In0");
        let std = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtZT8+In0=.";
        assert_eq!(
            Jwt::parse(std).unwrap().string_claim("sub").unwrap(),
            Some("me?>")
        );
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        for bad in [
            "",
            "a.b",
            "a..b",
            "a.b.c.d",
            "!!!.e30.",
            "e30.bm90IGpzb24.",
            "WzFd.e30.",
        ] {
            assert!(Jwt::parse(bad).is_err(), "{bad}");
        }
        assert!(Jwt::parse("e30.e30.").is_ok());
    }

    #[test]
    fn claim_types_are_checked() {
        // {"exp":"soon","iat":1.5,"sub":7}
        let jwt = Jwt::parse("e30.eyJleHAiOiJzb29uIiwiaWF0IjoxLjUsInN1YiI6N30.").unwrap();
        assert!(jwt.number_claim("exp").is_err());
        assert_eq!(jwt.number_claim("iat").unwrap(), Some(1.5));
        assert!(jwt.string_claim("sub").is_err());
        assert_eq!(jwt.number_claim("nbf").unwrap(), None);
    }

    #[test]
    fn seconds_round_like_java() {
        assert_eq!(seconds_to_ms(1.0), 1000);
        assert_eq!(seconds_to_ms(1.25), 1250);
        assert_eq!(seconds_to_ms(1_700_000_000.123_4), 1_700_000_000_123);
        assert_eq!(seconds_to_ms(1e300), i64::MAX);
    }
}
