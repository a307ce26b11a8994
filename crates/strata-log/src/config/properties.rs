//! The one reader of Java `.properties` files (`server.properties`) and of
//! `--override key=value` pairs, with the rules of `java.util.Properties.load`:
//!
//! - Lines end at `\n`, `\r\n` or `\r`. Leading whitespace (space, tab,
//!   form feed) of every line is dropped.
//! - A line that is blank, or whose first non-blank character is `#` or `!`,
//!   is skipped (a comment never continues onto the next line).
//! - A line ending in an odd number of backslashes continues on the next
//!   line: the last backslash goes, and so does the leading whitespace of
//!   the continuation line (which is never a comment).
//! - The key ends at the first unescaped `=`, `:` or whitespace. After
//!   whitespace, one `=` or `:` may follow; whitespace after the separator
//!   is dropped; the rest of the line, trailing whitespace included, is the
//!   value (typed parsing trims it later, as Kafka's `ConfigDef` does).
//! - In keys and values, `\t \n \r \f` are tab, newline, return and form
//!   feed, `\uXXXX` is that UTF-16 code unit (surrogate pairs combine), and
//!   any other `\x` is `x`. A `\u` without four hex digits is an error
//!   naming the file and line.
//! - When a key appears twice, the last value wins.
//!
//! The file is decoded as UTF-8, as `Properties.load(Reader)`; Kafka's
//! `load(InputStream)` reads ISO-8859-1, which is the same for the ASCII
//! files Kafka ships and where non-ASCII text is written as `\uXXXX`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a properties file or an override could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PropertiesError {
    #[error("cannot read properties file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("properties file {path} is not UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error("{path}:{line}: malformed \\uxxxx encoding {escape:?}")]
    MalformedUnicode {
        path: PathBuf,
        /// The natural (physical) line where the escape starts, from 1.
        line: usize,
        escape: String,
    },
    #[error("override {pair:?} is not of the form key=value")]
    BadOverride { pair: String },
}

/// Property names to raw values, in name order.
pub type Properties = BTreeMap<String, String>;

/// Read `path` (if any), then apply `overrides` (`key=value`, later wins):
/// the raw properties every command that takes `--config` starts from.
///
/// # Errors
/// The file cannot be read or has a malformed escape; an override has no `=`.
pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Properties, PropertiesError> {
    let mut props = match path {
        Some(p) => read(p)?,
        None => Properties::new(),
    };
    for pair in overrides {
        let (k, v) = parse_override(pair)?;
        props.insert(k, v);
    }
    Ok(props)
}

/// Read and parse one properties file.
///
/// # Errors
/// [`PropertiesError::Read`], [`PropertiesError::NotUtf8`] or a malformed escape.
pub fn read(path: &Path) -> Result<Properties, PropertiesError> {
    let bytes = std::fs::read(path).map_err(|source| PropertiesError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| PropertiesError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    parse(&text, path)
}

/// Parse the bytes of a properties file decoded as ISO-8859-1, as Kafka's
/// `Utils.loadProps` (`Properties.load(InputStream)`) reads `meta.properties`.
///
/// # Errors
/// As [`parse`].
pub fn parse_latin1(bytes: &[u8], origin: &Path) -> Result<Properties, PropertiesError> {
    let text: String = bytes.iter().map(|&b| char::from(b)).collect();
    parse(&text, origin)
}

/// Parse the text of a properties file; `origin` names it in errors.
///
/// # Errors
/// [`PropertiesError::MalformedUnicode`] with the line of the bad escape.
pub fn parse(text: &str, origin: &Path) -> Result<Properties, PropertiesError> {
    let mut out = Properties::new();
    for logical in logical_lines(text) {
        let (key, value) = split_entry(&logical, origin)?;
        out.insert(key, value);
    }
    Ok(out)
}

/// Parse one `--override key=value` pair (split at the first `=`, trimmed).
///
/// # Errors
/// [`PropertiesError::BadOverride`] without `=` or with an empty key.
pub fn parse_override(pair: &str) -> Result<(String, String), PropertiesError> {
    match pair.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(PropertiesError::BadOverride {
            pair: pair.to_string(),
        }),
    }
}

/// One logical line: its characters, each with the natural line it came from.
type Logical = Vec<(char, usize)>;

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// Natural lines, numbered from 1, split at `\n`, `\r\n` or `\r`.
fn natural_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut rest = text;
    let mut number = 1;
    while !rest.is_empty() {
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        lines.push((number, &rest[..end]));
        number += 1;
        rest = &rest[end..];
        if let Some(r) = rest.strip_prefix("\r\n") {
            rest = r;
        } else if !rest.is_empty() {
            rest = &rest[1..];
        }
    }
    lines
}

fn logical_lines(text: &str) -> Vec<Logical> {
    let mut out = Vec::new();
    let mut current: Option<Logical> = None;
    for (number, raw) in natural_lines(text) {
        let line = raw.trim_start_matches(is_blank);
        let continuing = current.is_some();
        if !continuing && (line.is_empty() || line.starts_with('#') || line.starts_with('!')) {
            continue;
        }
        let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
        let continues = trailing % 2 == 1;
        let body = if continues {
            &line[..line.len() - 1]
        } else {
            line
        };
        let logical = current.get_or_insert_with(Vec::new);
        logical.extend(body.chars().map(|c| (c, number)));
        if !continues {
            out.extend(current.take());
        }
    }
    // A continuation at the end of the file ends the line (Java drops the `\`).
    out.extend(current.take());
    out.retain(|l| !l.is_empty());
    out
}

fn split_entry(line: &[(char, usize)], origin: &Path) -> Result<(String, String), PropertiesError> {
    let mut key_end = line.len();
    let mut escaped = false;
    for (i, &(c, _)) in line.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || is_blank(c) {
            key_end = i;
            break;
        }
    }
    let mut i = key_end;
    while i < line.len() && is_blank(line[i].0) {
        i += 1;
    }
    if i < line.len() && (line[i].0 == '=' || line[i].0 == ':') {
        i += 1;
    }
    while i < line.len() && is_blank(line[i].0) {
        i += 1;
    }
    let key = unescape(&line[..key_end], origin)?;
    let value = unescape(&line[i..], origin)?;
    Ok((key, value))
}

fn unescape(chars: &[(char, usize)], origin: &Path) -> Result<String, PropertiesError> {
    let mut out = String::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let (c, _) = chars[i];
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&(e, line)) = chars.get(i) else {
            break;
        };
        i += 1;
        match e {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\u{c}'),
            'u' => {
                let unit = code_unit(chars, i, line, origin)?;
                i += 4;
                if (0xD800..0xDC00).contains(&unit) {
                    // A high surrogate takes the low one of the next `\uXXXX`.
                    let low = (chars.get(i).map(|c| c.0) == Some('\\')
                        && chars.get(i + 1).map(|c| c.0) == Some('u'))
                    .then(|| code_unit(chars, i + 2, line, origin))
                    .transpose()?
                    .filter(|low| (0xDC00..0xE000).contains(low))
                    .ok_or_else(|| malformed(chars, i - 6, line, origin))?;
                    i += 6;
                    let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    out.push(
                        char::from_u32(c).ok_or_else(|| malformed(chars, i - 12, line, origin))?,
                    );
                } else {
                    out.push(
                        char::from_u32(unit)
                            .ok_or_else(|| malformed(chars, i - 6, line, origin))?,
                    );
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// The four hex digits at `chars[at..at + 4]`.
fn code_unit(
    chars: &[(char, usize)],
    at: usize,
    line: usize,
    origin: &Path,
) -> Result<u32, PropertiesError> {
    let digits: String = chars.iter().skip(at).take(4).map(|c| c.0).collect();
    if digits.len() == 4 && digits.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(u32::from_str_radix(&digits, 16).unwrap_or_default())
    } else {
        Err(malformed(chars, at.saturating_sub(2), line, origin))
    }
}

fn malformed(chars: &[(char, usize)], from: usize, line: usize, origin: &Path) -> PropertiesError {
    PropertiesError::MalformedUnicode {
        path: origin.to_path_buf(),
        line,
        escape: chars.iter().skip(from).take(6).map(|c| c.0).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Properties {
        parse(text, Path::new("server.properties")).unwrap()
    }

    fn one(text: &str) -> (String, String) {
        let m = p(text);
        assert_eq!(m.len(), 1, "{m:?}");
        m.into_iter().next().unwrap()
    }

    #[test]
    fn separators_equals_colon_and_whitespace() {
        assert_eq!(one("a=b"), ("a".into(), "b".into()));
        assert_eq!(one("a:b"), ("a".into(), "b".into()));
        assert_eq!(one("a b"), ("a".into(), "b".into()));
        assert_eq!(one("a\tb"), ("a".into(), "b".into()));
        assert_eq!(one("a\u{c}b"), ("a".into(), "b".into()));
        // Whitespace, then one = or :, then whitespace.
        assert_eq!(one("a  =  b"), ("a".into(), "b".into()));
        assert_eq!(one("a : b"), ("a".into(), "b".into()));
        // Only the first separator counts; the rest is value.
        assert_eq!(one("a=b=c"), ("a".into(), "b=c".into()));
        assert_eq!(one("a:b:c"), ("a".into(), "b:c".into()));
        assert_eq!(one("a = = b"), ("a".into(), "= b".into()));
        assert_eq!(one("a b c"), ("a".into(), "b c".into()));
        // A key alone has the empty value; so has a key with a separator.
        assert_eq!(one("lonely"), ("lonely".into(), "".into()));
        assert_eq!(one("k="), ("k".into(), "".into()));
        assert_eq!(one("=v"), ("".into(), "v".into()));
    }

    #[test]
    fn leading_whitespace_dropped_trailing_kept() {
        assert_eq!(one("   \t key=value  "), ("key".into(), "value  ".into()));
    }

    #[test]
    fn escaped_separators_belong_to_the_key() {
        assert_eq!(one(r"a\=b=c"), ("a=b".into(), "c".into()));
        assert_eq!(one(r"a\:b:c"), ("a:b".into(), "c".into()));
        assert_eq!(one(r"a\ b c"), ("a b".into(), "c".into()));
        assert_eq!(one(r"a\\=b"), (r"a\".into(), "b".into()));
    }

    #[test]
    fn comments_and_blank_lines() {
        let m = p("# c\n! c\n   # indented\n\n  \t\nk=v # not a comment\n");
        assert_eq!(m.len(), 1);
        assert_eq!(m["k"], "v # not a comment");
        // A comment ending in a backslash does not continue.
        let m = p("# comment \\\nk=v\n");
        assert_eq!(m["k"], "v");
    }

    #[test]
    fn line_continuations() {
        let m = p("listeners=PLAINTEXT://a:1,\\\n    PLAINTEXT://b:2\nnext=1\n");
        assert_eq!(m["listeners"], "PLAINTEXT://a:1,PLAINTEXT://b:2");
        assert_eq!(m["next"], "1");
        // Several continuations; the continued line is never a comment.
        let m = p("k=a\\\n  b\\\n\t# c\n");
        assert_eq!(m["k"], "ab# c");
        // An even number of backslashes is an escaped backslash, not a continuation.
        let m = p("k=a\\\\\nj=b\n");
        assert_eq!(m["k"], "a\\");
        assert_eq!(m["j"], "b");
        // Three: one escaped backslash, then a continuation.
        let m = p("k=a\\\\\\\n b\n");
        assert_eq!(m["k"], "a\\b");
        // The key itself may be continued.
        let m = p("lo\\\n  ng=v\n");
        assert_eq!(m["long"], "v");
        // A continuation at end of file just ends the line.
        assert_eq!(p("k=v\\")["k"], "v");
        // A continuation onto a blank line ends the value there.
        let m = p("k=v\\\n\nj=w\n");
        assert_eq!((m["k"].as_str(), m["j"].as_str()), ("v", "w"));
    }

    #[test]
    fn line_terminators() {
        let m = p("a=1\r\nb=2\rc=3\nd=\\\r\n  4");
        assert_eq!(m["a"], "1");
        assert_eq!(m["b"], "2");
        assert_eq!(m["c"], "3");
        assert_eq!(m["d"], "4");
    }

    #[test]
    fn escapes_in_keys_and_values() {
        assert_eq!(
            one(r"k\tey=a\tb\nc\rd\fe"),
            ("k\tey".into(), "a\tb\nc\rd\u{c}e".into())
        );
        // Any other escaped character is itself.
        assert_eq!(one(r"k=\a\b\#\!\\"), ("k".into(), "ab#!\\".into()));
        assert_eq!(one(r"\#k=v"), ("#k".into(), "v".into()));
        assert_eq!(one(r"k=\ leading"), ("k".into(), " leading".into()));
    }

    #[test]
    fn unicode_escapes() {
        assert_eq!(one(r"\u006bey=\u0041\u00e9"), ("key".into(), "Aé".into()));
        assert_eq!(one(r"k=\u20AC"), ("k".into(), "€".into()));
        // A surrogate pair makes one character.
        assert_eq!(one(r"k=\uD83D\uDE00"), ("k".into(), "😀".into()));
    }

    #[test]
    fn malformed_unicode_names_file_and_line() {
        for (text, line, escape) in [
            ("a=1\nk=\\u12", 2, "\\u12"),
            ("a=1\n\nk=\\u00zz!", 3, "\\u00zz"),
            ("k=x\\\n  \\uD83D", 2, "\\uD83D"),
            ("k=\\uDE00", 1, "\\uDE00"),
        ] {
            let err = parse(text, Path::new("/etc/server.properties")).unwrap_err();
            match &err {
                PropertiesError::MalformedUnicode {
                    path,
                    line: l,
                    escape: e,
                } => {
                    assert_eq!(path, Path::new("/etc/server.properties"));
                    assert_eq!((*l, e.as_str()), (line, escape), "{text:?}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
            assert!(
                err.to_string()
                    .starts_with(&format!("/etc/server.properties:{line}: malformed \\uxxxx")),
                "{err}"
            );
        }
    }

    #[test]
    fn latin1_bytes_decode_one_to_one() {
        let m = parse_latin1(b"g=caf\xe9\n", Path::new("meta.properties")).unwrap();
        assert_eq!(m["g"], "caf\u{e9}");
    }

    #[test]
    fn last_duplicate_wins() {
        assert_eq!(p("a=1\na=2\na:3\n")["a"], "3");
    }

    #[test]
    fn overrides_layer_over_the_file() {
        assert_eq!(
            parse_override("log.dirs=/x=y").unwrap(),
            ("log.dirs".into(), "/x=y".into())
        );
        assert!(parse_override("novalue").is_err());
        assert!(parse_override("=1").is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        std::fs::write(&path, "num.partitions=4\nlog.dirs=/from-file\n").unwrap();
        let m = load(Some(&path), &["num.partitions=6".into()]).unwrap();
        assert_eq!(m["num.partitions"], "6");
        assert_eq!(m["log.dirs"], "/from-file");
        assert!(matches!(
            load(Some(&dir.path().join("missing")), &[]),
            Err(PropertiesError::Read { .. })
        ));
    }
}
