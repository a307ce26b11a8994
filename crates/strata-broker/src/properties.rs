//! Reading Java `.properties` files (`server.properties`) and `key=value`
//! override pairs into one ordered map.
//!
//! Supported syntax (the subset Kafka's sample files use, plus the rest of
//! `java.util.Properties` that is cheap): `#` and `!` comment lines, `=`, `:`
//! or whitespace as the key/value separator, surrounding whitespace trimmed,
//! a trailing `\` continues the logical line, and the escapes `\t \n \r \\ \= \:`
//! and `\uXXXX`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::ConfigError;

/// Parse the text of a properties file. `origin` names it in errors.
pub(crate) fn parse(text: &str, origin: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    let mut logical = String::new();
    let mut start_line = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line = if logical.is_empty() {
            start_line = i + 1;
            raw.trim_start()
        } else {
            raw.trim_start()
        };
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if ends_with_continuation(line) {
            logical.push_str(&line[..line.len() - 1]);
            continue;
        }
        logical.push_str(line);
        let (k, v) = split_entry(&logical, origin, start_line)?;
        out.insert(k, v);
        logical.clear();
    }
    if !logical.is_empty() {
        let (k, v) = split_entry(&logical, origin, start_line)?;
        out.insert(k, v);
    }
    Ok(out)
}

/// Parse one `--override key=value` pair.
pub(crate) fn parse_override(pair: &str) -> Result<(String, String), ConfigError> {
    match pair.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(ConfigError::BadOverride {
            pair: pair.to_string(),
        }),
    }
}

/// A line continues when it ends in an odd number of backslashes.
fn ends_with_continuation(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

fn split_entry(line: &str, origin: &Path, line_no: usize) -> Result<(String, String), ConfigError> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' | b':' | b' ' | b'\t' => break,
            _ => i += 1,
        }
    }
    let key_end = i.min(bytes.len());
    let mut rest = &line[key_end..];
    rest = rest.trim_start_matches([' ', '\t']);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches([' ', '\t']);
    }
    let key = unescape(&line[..key_end], origin, line_no)?;
    let value = unescape(rest.trim_end(), origin, line_no)?;
    if key.is_empty() {
        return Err(ConfigError::Syntax {
            path: origin.to_path_buf(),
            line: line_no,
        });
    }
    Ok((key, value))
}

fn unescape(s: &str, origin: &Path, line_no: usize) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let ch = u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| ConfigError::Syntax {
                        path: origin.to_path_buf(),
                        line: line_no,
                    })?;
                out.push(ch);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> BTreeMap<String, String> {
        parse(text, Path::new("test.properties")).unwrap()
    }

    #[test]
    fn parses_kafka_sample_syntax() {
        let m = p("# comment\n! other\n\nbroker.id=0\nlog.dirs = /tmp/a,/tmp/b\nnum.partitions: 3\nkey value with spaces\n");
        assert_eq!(m["broker.id"], "0");
        assert_eq!(m["log.dirs"], "/tmp/a,/tmp/b");
        assert_eq!(m["num.partitions"], "3");
        assert_eq!(m["key"], "value with spaces");
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn continuation_and_escapes() {
        let m =
            p("listeners=PLAINTEXT://a:1,\\\n    PLAINTEXT://b:2\nweird\\=key=x\\ty\nu=\\u0041\n");
        assert_eq!(m["listeners"], "PLAINTEXT://a:1,PLAINTEXT://b:2");
        assert_eq!(m["weird=key"], "x\ty");
        assert_eq!(m["u"], "A");
    }

    #[test]
    fn later_keys_win_and_overrides_parse() {
        let m = p("a=1\na=2\n");
        assert_eq!(m["a"], "2");
        assert_eq!(
            parse_override("log.dirs=/x=y").unwrap(),
            ("log.dirs".into(), "/x=y".into())
        );
        assert!(parse_override("novalue").is_err());
        assert!(parse_override("=1").is_err());
    }
}
