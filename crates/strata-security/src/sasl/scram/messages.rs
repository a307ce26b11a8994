//! The SCRAM messages the server reads and writes, following the grammar of
//! Kafka's `ScramMessages` (RFC 5802 section 7, ASCII only):
//!
//! ```text
//! client-first = "n," ["a=" saslname] "," ["m=" value ","] "n=" saslname ",r=" nonce ("," alpha "=" value)*
//! server-first = "r=" client-nonce server-nonce ",s=" base64(salt) ",i=" iterations
//! client-final = "c=" base64 ",r=" nonce ("," alpha "=" value)* ",p=" base64(proof)
//! server-final = "v=" base64(server-signature)
//!
//! saslname = 1*( %x01-7F except "=" and "," | "=2C" | "=3D" )
//! value    = 1*( %x01-7F except "," )
//! nonce    = 1*( %x21-7E except "," )
//! ```
//!
//! Where Kafka rebuilds the signed texts from parsed fields, this module keeps
//! the bytes the client sent (RFC 5802's definition); the two agree for every
//! message a Kafka client or librdkafka produces.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::sasl::FailureReason;

/// A parsed client-first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientFirst {
    /// The gs2 header as sent, e.g. `n,,` or `n,a=alice,`.
    pub gs2_header: String,
    /// The decoded authorization id, empty if none.
    pub authorization_id: String,
    /// The decoded user name.
    pub user: String,
    /// The client nonce.
    pub nonce: String,
    /// Extensions in order (`tokenauth=true` is Kafka's only known one).
    pub extensions: Vec<(String, String)>,
    /// The message after the gs2 header: the `client-first-message-bare` of
    /// the AuthMessage.
    pub bare: String,
}

impl ClientFirst {
    /// Whether the client asked for delegation-token credentials
    /// (`tokenauth` parsed like Java's `Boolean.parseBoolean`).
    pub fn token_auth(&self) -> bool {
        self.extensions
            .iter()
            .any(|(k, v)| k == "tokenauth" && v.eq_ignore_ascii_case("true"))
    }
}

fn malformed(message: &'static str, detail: &'static str) -> FailureReason {
    FailureReason::MalformedScramMessage { message, detail }
}

/// Parses a client-first message.
pub(crate) fn parse_client_first(bytes: &[u8]) -> Result<ClientFirst, FailureReason> {
    const MSG: &str = "client-first";
    let text = ascii(bytes).ok_or(malformed(MSG, "not ASCII"))?;
    let mut parts = text.split(',');
    match parts.next() {
        Some("n") => {}
        Some("y") => return Err(FailureReason::ChannelBindingUnsupported),
        Some(flag) if flag.starts_with("p=") => {
            return Err(FailureReason::ChannelBindingUnsupported)
        }
        _ => return Err(malformed(MSG, "gs2 channel binding flag is not 'n'")),
    }
    let authzid_field = parts.next().ok_or(malformed(MSG, "no gs2 header"))?;
    let authorization_id = match authzid_field {
        "" => String::new(),
        field => {
            let raw = field
                .strip_prefix("a=")
                .ok_or(malformed(MSG, "invalid gs2 header"))?;
            decode_saslname(raw).ok_or(malformed(MSG, "invalid authorization id"))?
        }
    };
    let gs2_header_len = 2 + authzid_field.len() + 1;
    let mut field = parts.next().ok_or(malformed(MSG, "no user name"))?;
    // Kafka leaves a reserved `m=` attribute out of the signed bare message.
    let mut bare_start = gs2_header_len;
    if let Some(reserved) = field.strip_prefix("m=") {
        if !is_value(reserved) {
            return Err(malformed(MSG, "invalid reserved attribute"));
        }
        bare_start += field.len() + 1;
        field = parts.next().ok_or(malformed(MSG, "no user name"))?;
    }
    let user = field
        .strip_prefix("n=")
        .and_then(decode_saslname)
        .ok_or(malformed(MSG, "invalid user name"))?;
    let nonce = parts
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .filter(|n| is_nonce(n))
        .ok_or(malformed(MSG, "invalid nonce"))?;
    let extensions = parts
        .map(|f| parse_extension(f).ok_or(malformed(MSG, "invalid extension")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ClientFirst {
        gs2_header: text[..gs2_header_len].to_owned(),
        authorization_id,
        user,
        nonce: nonce.to_owned(),
        extensions,
        bare: text[bare_start..].to_owned(),
    })
}

/// A parsed client-final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientFinal {
    /// The decoded `c=` attribute (gs2 header plus channel binding data).
    pub channel_binding: Vec<u8>,
    /// The full nonce (client nonce followed by server nonce).
    pub nonce: String,
    /// The decoded client proof.
    pub proof: Vec<u8>,
    /// The message up to, not including, `,p=`: the
    /// `client-final-message-without-proof` of the AuthMessage.
    pub without_proof: String,
}

/// Parses a client-final message.
pub(crate) fn parse_client_final(bytes: &[u8]) -> Result<ClientFinal, FailureReason> {
    const MSG: &str = "client-final";
    let text = ascii(bytes).ok_or(malformed(MSG, "not ASCII"))?;
    let (without_proof, proof) = text.rsplit_once(",p=").ok_or(malformed(MSG, "no proof"))?;
    let proof = decode_base64(proof).ok_or(malformed(MSG, "proof is not base64"))?;
    let mut parts = without_proof.split(',');
    let channel_binding = parts
        .next()
        .and_then(|f| f.strip_prefix("c="))
        .and_then(decode_base64)
        .ok_or(malformed(MSG, "invalid channel binding"))?;
    let nonce = parts
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .filter(|n| is_nonce(n))
        .ok_or(malformed(MSG, "invalid nonce"))?;
    if !parts.all(|f| parse_extension(f).is_some()) {
        return Err(malformed(MSG, "invalid extension"));
    }
    Ok(ClientFinal {
        channel_binding,
        nonce: nonce.to_owned(),
        proof,
        without_proof: without_proof.to_owned(),
    })
}

/// Formats a server-first message.
pub(crate) fn server_first(nonce: &str, salt: &[u8], iterations: i32) -> String {
    format!("r={nonce},s={},i={iterations}", STANDARD.encode(salt))
}

/// Formats a server-final message.
pub(crate) fn server_final(signature: &[u8]) -> String {
    format!("v={}", STANDARD.encode(signature))
}

fn ascii(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        std::str::from_utf8(bytes).ok()
    } else {
        None
    }
}

/// Kafka's `ScramFormatter.username`: `=2C` is `,`, `=3D` is `=`, any other
/// `=` is an error. Empty names are refused (the grammar needs one character).
pub(crate) fn decode_saslname(name: &str) -> Option<String> {
    if name.is_empty() || name.contains('\0') {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(eq) = rest.find('=') {
        out.push_str(&rest[..eq]);
        let escape = rest.get(eq..eq + 3)?;
        match escape {
            "=2C" => out.push(','),
            "=3D" => out.push('='),
            _ => return None,
        }
        rest = &rest[eq + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// Kafka's `ScramFormatter.saslName`: escapes `=` then `,`.
#[cfg(test)]
pub(crate) fn encode_saslname(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

/// `value`: one or more of %x01-7F except `,` (the caller split on commas).
fn is_value(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x01..=0x7f).contains(&b) && b != b',')
}

/// `nonce`: one or more printable characters except `,`.
fn is_nonce(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

fn parse_extension(field: &str) -> Option<(String, String)> {
    let (key, value) = field.split_once('=')?;
    let key_ok = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphabetic());
    (key_ok && is_value(value)).then(|| (key.to_owned(), value.to_owned()))
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    STANDARD.decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Kafka's ScramMessagesTest vectors.
    const VALID_EXTENSIONS: [&str; 3] = [
        "ext=val1",
        "anotherext=name1=value1 name2=another test value \"'!$[]()",
        "first=val1,second=name1 = value ,third=123",
    ];
    const INVALID_EXTENSIONS: [&str; 5] = [
        "ext1=value",
        "ext",
        "ext=value1,value2",
        "ext=,",
        "ext =value",
    ];
    const VALID_RESERVED: [&str; 2] = [
        "m=reserved-value",
        "m=name1=value1 name2=another test value \"'!$[]()",
    ];
    const INVALID_RESERVED: [&str; 3] = ["m", "m=name,value", "m=,"];
    const NONCE: &str = "1xzqbzp6t9ncp1lzwi03wdlzgv";

    fn first(s: &str) -> Result<ClientFirst, FailureReason> {
        parse_client_first(s.as_bytes())
    }

    #[test]
    fn valid_client_first_messages() {
        let m = first(&format!("n,,n=testuser,r={NONCE}")).unwrap();
        assert_eq!((m.user.as_str(), m.nonce.as_str()), ("testuser", NONCE));
        assert_eq!(m.authorization_id, "");
        assert_eq!(m.gs2_header, "n,,");
        assert_eq!(m.bare, format!("n=testuser,r={NONCE}"));

        assert_eq!(
            first(&format!("n,,n=test=2Cuser,r={NONCE}")).unwrap().user,
            "test,user"
        );
        assert_eq!(
            first(&format!("n,,n=test=3Duser,r={NONCE}")).unwrap().user,
            "test=user"
        );

        let m = first(&format!("n,a=testauthzid,n=testuser,r={NONCE}")).unwrap();
        assert_eq!(m.authorization_id, "testauthzid");
        assert_eq!(m.gs2_header, "n,a=testauthzid,");

        for reserved in VALID_RESERVED {
            let m = first(&format!("n,,{reserved},n=testuser,r={NONCE}")).unwrap();
            assert_eq!(m.user, "testuser", "{reserved}");
            assert_eq!(m.bare, format!("n=testuser,r={NONCE}"));
        }
        for ext in VALID_EXTENSIONS {
            let m = first(&format!("n,,n=testuser,r={NONCE},{ext}")).unwrap();
            assert_eq!(m.nonce, NONCE, "{ext}");
            assert!(!m.token_auth());
        }
        let m = first(&format!("n,,n=testuser,r={NONCE},tokenauth=true")).unwrap();
        assert!(m.token_auth());
    }

    #[test]
    fn invalid_client_first_messages() {
        assert!(first(&format!("n,x=something,n=testuser,r={NONCE}")).is_err());
        for reserved in INVALID_RESERVED {
            assert!(
                first(&format!("n,,{reserved},n=testuser,r={NONCE}")).is_err(),
                "{reserved}"
            );
        }
        for ext in INVALID_EXTENSIONS {
            assert!(
                first(&format!("n,,n=testuser,r={NONCE},{ext}")).is_err(),
                "{ext}"
            );
        }
        for bad in [
            "",
            "n,,",
            "n,,n=,r=abc",
            "n,,n=user",
            "n,,n=user,r=",
            "n,,n=us=er,r=abc",
            "n,,n=user=2,r=abc",
            "n,,r=abc,n=user",
            "n,,n=usér,r=abc",
            "n,,n=user,r=a b",
        ] {
            assert!(first(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn channel_binding_is_refused() {
        assert_eq!(
            first("p=tls-unique,,n=user,r=abc"),
            Err(FailureReason::ChannelBindingUnsupported)
        );
        assert_eq!(
            first("y,,n=user,r=abc"),
            Err(FailureReason::ChannelBindingUnsupported)
        );
    }

    #[test]
    fn client_final_messages() {
        let cb = STANDARD.encode(b"n,,");
        let proof = STANDARD.encode([7u8; 32]);
        let m = parse_client_final(format!("c={cb},r={NONCE},p={proof}").as_bytes()).unwrap();
        assert_eq!(m.channel_binding, b"n,,");
        assert_eq!(m.nonce, NONCE);
        assert_eq!(m.proof, [7u8; 32]);
        assert_eq!(m.without_proof, format!("c={cb},r={NONCE}"));
        for ext in VALID_EXTENSIONS {
            let text = format!("c={cb},r={NONCE},{ext},p={proof}");
            let m = parse_client_final(text.as_bytes()).unwrap();
            assert_eq!(m.without_proof, format!("c={cb},r={NONCE},{ext}"));
        }
        for ext in INVALID_EXTENSIONS {
            let text = format!("c={cb},r={NONCE},{ext},p={proof}");
            assert!(parse_client_final(text.as_bytes()).is_err(), "{ext}");
        }
        for bad in [
            format!("c=ab,r={NONCE},p={proof}"),
            format!("c={cb},r={NONCE},p=123"),
            format!("c={cb},r={NONCE}"),
            format!("r={NONCE},c={cb},p={proof}"),
            format!("c={cb},p={proof}"),
        ] {
            assert!(parse_client_final(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn saslname_escaping_round_trips() {
        // Kafka's ScramFormatterTest.saslName
        for user in [
            "user1", "123", "1,2", "user=A", "user==B", "user,1", "user 1", ",", "=", ",=", "==",
        ] {
            let name = encode_saslname(user);
            assert!(!name.contains(','));
            assert!(!name.replace("=2C", "").replace("=3D", "").contains('='));
            assert_eq!(decode_saslname(&name).as_deref(), Some(user));
        }
        assert_eq!(decode_saslname("a=2"), None);
        assert_eq!(decode_saslname("a=2Db"), None);
    }

    #[test]
    fn server_messages_format_like_kafka() {
        assert_eq!(
            server_first("abcdef", b"salt", 4096),
            "r=abcdef,s=c2FsdA==,i=4096"
        );
        assert_eq!(server_final(&[0xff, 0xee]), "v=/+4=");
    }
}
