//! PEM text as Kafka's `PemStore` parser reads it (KIP-651): blocks between
//! `-----BEGIN <LABEL>-----` and `-----END <LABEL>-----`, with any text before,
//! between and after blocks ignored, whitespace anywhere in the base64 body
//! (so a whole block may sit on one line, as in a one-line property value),
//! and `Name: value` header lines skipped.

use base64::Engine as _;

/// One decoded PEM block.
pub(crate) struct Block {
    /// The label after `BEGIN` (`CERTIFICATE`, `PRIVATE KEY`, ...).
    pub label: String,
    /// The decoded body.
    pub der: Vec<u8>,
    /// Whether the block carries OpenSSL's legacy `Proc-Type: 4,ENCRYPTED`
    /// header (a key encrypted outside PKCS#8, which is not supported).
    pub legacy_encrypted: bool,
}

/// Why PEM text could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PemError {
    /// A `BEGIN` line without its `END`.
    #[error("`-----BEGIN` without a matching `-----END`")]
    Unterminated,
    /// A body that is not base64.
    #[error("the body of a block is not base64")]
    BadBase64,
}

const BEGIN: &str = "-----BEGIN ";
const DASHES: &str = "-----";

/// Every block in `text`, in order.
pub(crate) fn parse(text: &str) -> Result<Vec<Block>, PemError> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(begin) = rest.find(BEGIN) {
        let after_begin = &rest[begin + BEGIN.len()..];
        let label_end = after_begin.find(DASHES).ok_or(PemError::Unterminated)?;
        let label = after_begin[..label_end].trim().to_owned();
        let body_and_rest = &after_begin[label_end + DASHES.len()..];
        let end_marker = format!("-----END {label}-----");
        let body_end = body_and_rest
            .find(&end_marker)
            .ok_or(PemError::Unterminated)?;
        let body = &body_and_rest[..body_end];

        let mut legacy_encrypted = false;
        let mut b64 = String::with_capacity(body.len());
        for line in body.lines() {
            if let Some((name, value)) = line.split_once(':') {
                if name.trim().eq_ignore_ascii_case("Proc-Type") && value.contains("ENCRYPTED") {
                    legacy_encrypted = true;
                }
                continue;
            }
            b64.extend(line.chars().filter(|c| !c.is_whitespace()));
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|_| PemError::BadBase64)?;
        blocks.push(Block {
            label,
            der,
            legacy_encrypted,
        });
        rest = &body_and_rest[body_end + end_marker.len()..];
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_blocks_with_noise_and_headers() {
        let text = "Bag Attributes\n    friendlyName: kafka\n-----BEGIN CERTIFICATE-----\nAQID\nBA==\n-----END CERTIFICATE-----\nnoise\n\
                    -----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nBQY=\n-----END RSA PRIVATE KEY-----";
        let blocks = parse(text).expect("valid PEM");
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            (blocks[0].label.as_str(), blocks[0].der.as_slice()),
            ("CERTIFICATE", &[1, 2, 3, 4][..])
        );
        assert!(!blocks[0].legacy_encrypted);
        assert_eq!(
            (blocks[1].label.as_str(), blocks[1].der.as_slice()),
            ("RSA PRIVATE KEY", &[5, 6][..])
        );
        assert!(blocks[1].legacy_encrypted);
    }

    #[test]
    fn reads_a_block_on_one_line() {
        let blocks =
            parse("-----BEGIN PRIVATE KEY----- AQ ID -----END PRIVATE KEY-----").expect("one line");
        assert_eq!(blocks[0].der, [1, 2, 3]);
    }

    #[test]
    fn refuses_broken_blocks() {
        assert_eq!(
            parse("-----BEGIN CERTIFICATE-----\nAQID").err(),
            Some(PemError::Unterminated)
        );
        assert_eq!(
            parse("-----BEGIN CERTIFICATE-----\nAQID\n-----END PRIVATE KEY-----").err(),
            Some(PemError::Unterminated)
        );
        assert_eq!(
            parse("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----").err(),
            Some(PemError::BadBase64)
        );
        assert!(parse("no pem here").is_ok_and(|b| b.is_empty()));
    }
}
