//! Distinguished names printed the way Java's
//! `X500Principal.getName()` (RFC 2253 form) prints them, since Kafka's
//! `ssl.principal.mapping.rules` are written against that string.
//!
//! What the JDK (checked against OpenJDK 17's output) does, and this module
//! copies:
//! - RDNs in reverse order of the encoding (most significant last), joined
//!   by `,`; the attributes of a multi-valued RDN in encoding (DER SET) order,
//!   joined by `+`.
//! - Attribute types CN, C, L, ST, O, OU, STREET, DC and UID by keyword;
//!   every other type (emailAddress, serialNumber, title, ...) as a dotted OID.
//! - The value as `#` + lower-case hex of its whole DER encoding when the type
//!   is printed as an OID or the value is not a PrintableString, T61String,
//!   IA5String, GeneralString, BMPString or UTF8String. Otherwise the value's
//!   bytes decoded as UTF-8 (lossily, for every one of those string types, as
//!   the JDK does), with `,=+<>#;"\` escaped by `\`, NUL as `\00`, and
//!   leading and trailing spaces and carriage returns escaped by `\`.

use super::der::{self, DerError};

/// `(OID, keyword)` of the attribute types Java prints by keyword in RFC 2253 form.
const KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// DER string tags whose value Java prints as text (PrintableString,
/// T61String, IA5String, GeneralString, BMPString, UTF8String).
const TEXT_TAGS: &[u8] = &[0x13, 0x14, 0x16, 0x1b, 0x1e, 0x0c];

/// Characters Java escapes with a backslash anywhere in a value.
const ESCAPED: &str = ",=+<>#;\"\\";

/// Prints the DER encoding of an X.509 `Name` in RFC 2253 form as Java's
/// `X500Principal.getName()` does.
pub(crate) fn rfc2253(name_der: &[u8]) -> Result<String, DerError> {
    let (name, _) = der::read_tagged(name_der, der::SEQUENCE)?;
    let mut rdns = Vec::new();
    for rdn in der::children(name.contents)? {
        if rdn.tag != der::SET {
            return Err(DerError::UnexpectedTag {
                found: rdn.tag,
                expected: der::SET,
            });
        }
        let mut avas = Vec::new();
        for ava in der::children(rdn.contents)? {
            avas.push(attribute(ava)?);
        }
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// One `AttributeTypeAndValue` as `TYPE=value`.
fn attribute(ava: der::Element<'_>) -> Result<String, DerError> {
    if ava.tag != der::SEQUENCE {
        return Err(DerError::UnexpectedTag {
            found: ava.tag,
            expected: der::SEQUENCE,
        });
    }
    let (oid, rest) = der::read_tagged(ava.contents, der::OID)?;
    let (value, _) = der::read(rest)?;
    let dotted = der::oid_to_string(oid.contents)?;
    let keyword = KEYWORDS.iter().find(|(o, _)| *o == dotted).map(|(_, k)| *k);
    let mut out = String::from(keyword.unwrap_or(&dotted));
    out.push('=');
    match keyword {
        Some(_) if TEXT_TAGS.contains(&value.tag) => out.push_str(&escape_value(value.contents)),
        _ => {
            out.push('#');
            for b in value.raw {
                out.push_str(&format!("{b:02x}"));
            }
        }
    }
    Ok(out)
}

/// A text value with Java's RFC 2253 escaping.
fn escape_value(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut escaped: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if ESCAPED.contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let is_blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| is_blank(c)).count();
    let trail = escaped.iter().rev().take_while(|c| is_blank(c)).count();
    let keep_until = escaped.len() - trail;
    let mut out = String::with_capacity(escaped.len() + lead + trail);
    for (i, c) in escaped.iter().enumerate() {
        // The scans overlap on an all-blank value; each blank is escaped once.
        if i < lead || i >= keep_until {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("test hex"))
            .collect()
    }

    /// Names encoded by hand and printed by OpenJDK 17's
    /// `new X500Principal(der).getName()`.
    #[test]
    fn java_vectors() {
        let vectors = [
            // CN=q"uote<space>
            (
                "30123110300e06035504030c077122756f746520",
                "CN=q\\\"uote\\ ",
            ),
            // two leading and two trailing spaces
            (
                "3021311f301d06035504030c16202074776f206c65616420616e6420747261696c2020",
                "CN=\\ \\ two lead and trail\\ \\ ",
            ),
            // embedded NUL
            ("3010310e300c06035504030c056e756c0078", "CN=nul\\00x"),
            // PrintableString and IA5String, RDN order reversed, '@' not escaped
            (
                "302431123010060355040313097072696e7461626c65310e300c060355040b16056961354078",
                "OU=ia5@x,CN=printable",
            ),
            // BMPString: the JDK decodes its bytes as UTF-8
            (
                "3011310f300d06035504031e0600dc006e00ef",
                "CN=\\00\u{fffd}\\00n\\00\u{fffd}",
            ),
            // T61String with a Latin-1 byte, likewise
            ("300f310d300b06035504031404636166e9", "CN=caf\u{fffd}"),
            // OCTET STRING value: hex even for a keyword type
            ("300d310b3009060355040304020102", "CN=#04020102"),
            ("301531133011060a0992268993f22c6401191603636f6d", "DC=com"),
            ("3000", ""),
            // tab kept, trailing CR escaped
            (
                "30143112301006035504030c0974616209686572650d",
                "CN=tab\there\\\r",
            ),
            ("300c310a300806035504030c010d", "CN=\\\r"),
            // VisibleString and UniversalString are not text to the JDK; GeneralString is
            ("300c310a300806035504031a0141", "CN=#1a0141"),
            ("300c310a300806035504031b0141", "CN=A"),
            ("300c310a300806035504031c0141", "CN=#1c0141"),
        ];
        for (hex, expected) in vectors {
            assert_eq!(rfc2253(&unhex(hex)).as_deref(), Ok(expected), "{hex}");
        }
    }

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(
            escape_value(b"a+b=c;d<e>f\"g\\h ,i#"),
            "a\\+b\\=c\\;d\\<e\\>f\\\"g\\\\h \\,i\\#"
        );
        assert_eq!(escape_value(b" "), "\\ ");
        assert_eq!(escape_value(b"#x"), "\\#x");
    }

    #[test]
    fn refuses_malformed_names() {
        assert!(rfc2253(&[]).is_err());
        assert!(rfc2253(&unhex("3003020101")).is_err());
        assert!(rfc2253(&unhex("30053103020101")).is_err());
        assert!(rfc2253(&unhex("300c310a300806035504030c05")).is_err());
    }
}
