//! The OAUTHBEARER client initial response (RFC 7628 section 3.1), with the
//! grammar of Kafka's `OAuthBearerClientInitialResponse`:
//!
//! ```text
//! response = "n," ["a=" saslname] "," %x01 *(key "=" value %x01) %x01
//! key      = 1*ALPHA
//! value    = 1*( %x21-7E | " " | "\t" | "\r" | "\n" )
//! auth     = scheme 1*" " token       ; scheme "bearer", any case
//! token    = 1*( ALPHA | DIGIT | "-" | "." | "_" | "~" | "+" | "/" ) *"="
//! ```
//!
//! `auth` is required; the other pairs are SASL extensions (a later key
//! replaces an earlier one, as in Kafka's map).

use std::collections::BTreeMap;

use crate::sasl::scram::decode_saslname;
use crate::sasl::FailureReason;

/// A parsed client initial response. Its `Debug` leaves the token out.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct InitialResponse {
    /// The decoded authorization id, empty if none.
    pub authorization_id: String,
    /// The bearer token.
    pub token: String,
    /// SASL extensions other than `auth`.
    pub extensions: BTreeMap<String, String>,
}

impl std::fmt::Debug for InitialResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitialResponse")
            .field("authorization_id", &self.authorization_id)
            .field("token", &"<redacted>")
            .field("extensions", &self.extensions)
            .finish()
    }
}

const SEPARATOR: char = '\u{1}';

fn malformed(detail: &'static str) -> FailureReason {
    FailureReason::MalformedOAuthBearerResponse { detail }
}

/// Parses a client initial response.
pub(crate) fn parse(bytes: &[u8]) -> Result<InitialResponse, FailureReason> {
    if !bytes.is_ascii() {
        return Err(malformed("not ASCII"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| malformed("not ASCII"))?;
    let rest = text
        .strip_prefix("n,")
        .ok_or(malformed("gs2 header does not start with 'n,'"))?;
    let (authzid, rest) = rest
        .split_once(',')
        .ok_or(malformed("unterminated gs2 header"))?;
    let authorization_id = match authzid {
        "" => String::new(),
        field => field
            .strip_prefix("a=")
            .and_then(decode_saslname)
            .ok_or(malformed("invalid authorization id"))?,
    };
    let pairs = rest
        .strip_prefix(SEPARATOR)
        .and_then(|r| r.strip_suffix(SEPARATOR))
        .ok_or(malformed("key-value pairs are not framed by 0x01"))?;
    let mut map = BTreeMap::new();
    if !pairs.is_empty() {
        let pairs = pairs
            .strip_suffix(SEPARATOR)
            .ok_or(malformed("unterminated key-value pair"))?;
        for pair in pairs.split(SEPARATOR) {
            let (key, value) = pair
                .split_once('=')
                .ok_or(malformed("key-value pair without '='"))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(malformed("invalid extension name"));
            }
            let value_ok = !value.is_empty()
                && value
                    .bytes()
                    .all(|b| matches!(b, 0x21..=0x7e | b' ' | b'\t' | b'\r' | b'\n'));
            if !value_ok {
                return Err(malformed("invalid extension value"));
            }
            map.insert(key.to_owned(), value.to_owned());
        }
    }
    let auth = map
        .remove("auth")
        .ok_or(malformed("'auth' not specified"))?;
    let token = parse_auth(&auth)?;
    Ok(InitialResponse {
        authorization_id,
        token,
        extensions: map,
    })
}

fn parse_auth(auth: &str) -> Result<String, FailureReason> {
    let (scheme, token) = auth
        .split_once(' ')
        .ok_or(malformed("invalid 'auth' format"))?;
    let token = token.trim_start_matches(' ');
    let scheme_ok = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let body = token.trim_end_matches('=');
    let token_ok = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if !scheme_ok || !token_ok {
        return Err(malformed("invalid 'auth' format"));
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(malformed("scheme is not 'Bearer'"));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from Kafka's OAuthBearerClientInitialResponseTest.
    #[test]
    fn builds_and_parses_kafka_messages() {
        let r = parse(b"n,,\x01auth=Bearer 123.345.567\x01nineteen=42\x01\x01").unwrap();
        assert_eq!(r.token, "123.345.567");
        assert_eq!(r.authorization_id, "");
        assert_eq!(r.extensions.get("nineteen").map(String::as_str), Some("42"));

        let r = parse(b"n,a=myuser,\x01auth=Bearer 123.345.567\x01\x01").unwrap();
        assert_eq!(r.authorization_id, "myuser");
        assert!(r.extensions.is_empty());

        // RFC 7628 section 4.1 example, with host and port.
        let r = parse(b"n,a=user@example.com,\x01host=server.example.com\x01port=143\x01auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==\x01\x01").unwrap();
        assert_eq!(r.token, "vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==");
        assert_eq!(r.authorization_id, "user@example.com");
        assert_eq!(r.extensions.len(), 2);

        let r = parse(b"n,,\x01auth=bearer   abc\x01\x01").unwrap();
        assert_eq!(r.token, "abc");
    }

    #[test]
    fn malformed_responses_are_refused() {
        for bad in [
            &b""[..],
            b"n,,",
            b"n,,\x01\x01",
            b"y,,\x01auth=Bearer abc\x01\x01",
            b"n,,\x01auth=Bearer abc\x01",
            b"n,,auth=Bearer abc\x01\x01",
            b"n,,\x01auth=Basic abc\x01\x01",
            b"n,,\x01auth=Bearer\x01\x01",
            b"n,,\x01auth=Bearer a b\x01\x01",
            b"n,,\x01auth=Bearer abc\x01ext1=x\x01\x01",
            b"n,,\x01auth=Bearer abc\x01ext=\x01\x01",
            b"n,,\x01auth=Bearer abc\x01=x\x01\x01",
            b"n,x=y,\x01auth=Bearer abc\x01\x01",
            b"n,,\x01auth=Bearer ab\xc3\xa9\x01\x01",
            b"\x01",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn debug_hides_the_token() {
        let r = parse(b"n,,\x01auth=Bearer sekrit.token.\x01\x01").unwrap();
        assert!(!format!("{r:?}").contains("sekrit"));
    }
}
