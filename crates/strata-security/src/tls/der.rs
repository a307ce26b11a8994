//! A minimal DER reader: just enough to walk an X.509 `Name` and a
//! `GeneralNames` sequence while keeping each element's raw bytes, which
//! Java's distinguished-name printing needs (`#` + hex of the whole value).
//!
//! Certificates themselves are parsed by `x509-parser`; this reader only
//! sees the subject and the subject alternative names it hands over.

/// One DER element: its identifier octet(s), contents and full encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Element<'a> {
    /// The first identifier octet (class, constructed bit, low tag number).
    pub tag: u8,
    /// The contents octets.
    pub contents: &'a [u8],
    /// Identifier, length and contents together.
    pub raw: &'a [u8],
}

/// Why a DER element could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DerError {
    /// The input ends inside an element.
    #[error("truncated DER element")]
    Truncated,
    /// An indefinite, non-minimal or oversized length.
    #[error("invalid DER length")]
    BadLength,
    /// An element other than the one the structure requires.
    #[error("unexpected DER tag 0x{found:02x}, expected 0x{expected:02x}")]
    UnexpectedTag {
        /// The tag read.
        found: u8,
        /// The tag required.
        expected: u8,
    },
    /// An object identifier that is empty or whose last arc is cut off.
    #[error("invalid object identifier")]
    BadOid,
}

/// Tag of SEQUENCE (constructed).
pub(crate) const SEQUENCE: u8 = 0x30;
/// Tag of SET (constructed).
pub(crate) const SET: u8 = 0x31;
/// Tag of OBJECT IDENTIFIER.
pub(crate) const OID: u8 = 0x06;

/// Reads the first element of `input`; returns it and the bytes after it.
pub(crate) fn read(input: &[u8]) -> Result<(Element<'_>, &[u8]), DerError> {
    let (&tag, mut rest) = input.split_first().ok_or(DerError::Truncated)?;
    if tag & 0x1f == 0x1f {
        // High tag number form: base-128 octets, the last without bit 8.
        loop {
            let (&octet, after) = rest.split_first().ok_or(DerError::Truncated)?;
            rest = after;
            if octet & 0x80 == 0 {
                break;
            }
        }
    }
    let (&first, after) = rest.split_first().ok_or(DerError::Truncated)?;
    rest = after;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        // 0x80 is the indefinite form, which DER forbids.
        if count == 0 || count > 4 || rest.len() < count {
            return Err(DerError::BadLength);
        }
        let (octets, after) = rest.split_at(count);
        rest = after;
        octets
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
    };
    if rest.len() < len {
        return Err(DerError::Truncated);
    }
    let header_len = input.len() - rest.len();
    let (contents, after) = rest.split_at(len);
    let element = Element {
        tag,
        contents,
        raw: &input[..header_len + len],
    };
    Ok((element, after))
}

/// Reads one element that must carry `expected` as its tag.
pub(crate) fn read_tagged(input: &[u8], expected: u8) -> Result<(Element<'_>, &[u8]), DerError> {
    let (element, rest) = read(input)?;
    if element.tag != expected {
        return Err(DerError::UnexpectedTag {
            found: element.tag,
            expected,
        });
    }
    Ok((element, rest))
}

/// Splits the contents of a constructed element into its elements.
pub(crate) fn children(mut contents: &[u8]) -> Result<Vec<Element<'_>>, DerError> {
    let mut out = Vec::new();
    while !contents.is_empty() {
        let (element, rest) = read(contents)?;
        out.push(element);
        contents = rest;
    }
    Ok(out)
}

/// The dotted form of an OBJECT IDENTIFIER's contents (`2.5.4.3`).
pub(crate) fn oid_to_string(contents: &[u8]) -> Result<String, DerError> {
    let mut arcs: Vec<u128> = Vec::new();
    let mut value: u128 = 0;
    let mut pending = false;
    for &octet in contents {
        value = value
            .checked_mul(128)
            .ok_or(DerError::BadOid)?
            .checked_add(u128::from(octet & 0x7f))
            .ok_or(DerError::BadOid)?;
        pending = true;
        if octet & 0x80 == 0 {
            if arcs.is_empty() {
                // The first subidentifier packs the first two arcs.
                let first = (value / 40).min(2);
                arcs.push(first);
                arcs.push(value - first * 40);
            } else {
                arcs.push(value);
            }
            value = 0;
            pending = false;
        }
    }
    if pending || arcs.is_empty() {
        return Err(DerError::BadOid);
    }
    let parts: Vec<String> = arcs.iter().map(u128::to_string).collect();
    Ok(parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_short_and_long_lengths() {
        let short = [0x04, 0x02, 0xaa, 0xbb, 0xff];
        let (e, rest) = read(&short).expect("short form");
        assert_eq!(
            (e.tag, e.contents, e.raw, rest),
            (4, &[0xaa, 0xbb][..], &short[..4], &[0xff][..])
        );

        let mut long = vec![0x04, 0x81, 0x80];
        long.extend(std::iter::repeat_n(7u8, 0x80));
        let (e, rest) = read(&long).expect("long form");
        assert_eq!(e.contents.len(), 0x80);
        assert!(rest.is_empty());
    }

    #[test]
    fn refuses_truncated_and_indefinite() {
        assert_eq!(read(&[]), Err(DerError::Truncated));
        assert_eq!(read(&[0x04, 0x03, 1, 2]), Err(DerError::Truncated));
        assert_eq!(read(&[0x30, 0x80, 0, 0]), Err(DerError::BadLength));
        assert_eq!(read(&[0x04, 0x82, 0x01]), Err(DerError::BadLength));
        assert!(matches!(
            read_tagged(&[0x31, 0x00], SEQUENCE),
            Err(DerError::UnexpectedTag {
                found: 0x31,
                expected: 0x30
            })
        ));
    }

    #[test]
    fn oid_vectors() {
        // X.690 examples: 2.5.4.3 (id-at-commonName), 1.2.840.113549.1.9.1 (emailAddress),
        // 0.9.2342.19200300.100.1.25 (domainComponent), 2.999.3 (arc past 2.39).
        assert_eq!(oid_to_string(&[0x55, 0x04, 0x03]).as_deref(), Ok("2.5.4.3"));
        assert_eq!(
            oid_to_string(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01]).as_deref(),
            Ok("1.2.840.113549.1.9.1")
        );
        assert_eq!(
            oid_to_string(&[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19]).as_deref(),
            Ok("0.9.2342.19200300.100.1.25")
        );
        assert_eq!(oid_to_string(&[0x88, 0x37, 0x03]).as_deref(), Ok("2.999.3"));
        assert_eq!(oid_to_string(&[]), Err(DerError::BadOid));
        assert_eq!(oid_to_string(&[0x55, 0x84]), Err(DerError::BadOid));
    }
}
