//! Java's text rules that Kafka's file readers inherit: `BufferedReader`
//! line ends, `\\s+` splitting, `Integer.parseInt` / `Long.parseLong`.
//! Every text format of a log directory (checkpoints, `partition.metadata`,
//! directory and file names) is read with these.

/// Java regex `\s`: space, tab, newline, vertical tab, form feed, carriage return.
pub fn is_java_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

/// Split `text` into lines as Java's `BufferedReader.readLine` does: lines
/// end at `\n`, `\r` or `\r\n`, and a final terminator adds no empty line.
pub fn java_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let bytes = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < bytes.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Split on runs of Java `\s` like `Pattern.compile("\\s+").split(line)`:
/// leading whitespace yields an empty first field, trailing empty fields
/// are dropped.
pub fn split_java_whitespace(line: &str) -> Vec<&str> {
    if !line.chars().any(is_java_whitespace) {
        return vec![line];
    }
    let mut fields: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut in_ws = false;
    for (i, c) in line.char_indices() {
        if is_java_whitespace(c) {
            if !in_ws {
                fields.push(&line[start..i]);
                in_ws = true;
            }
        } else if in_ws {
            start = i;
            in_ws = false;
        }
    }
    if !in_ws {
        fields.push(&line[start..]);
    }
    while fields.last().is_some_and(|f| f.is_empty()) {
        fields.pop();
    }
    fields
}

/// `Integer.parseInt` / `Long.parseLong`: optional sign and ASCII digits.
pub fn parse_java_int<T: std::str::FromStr>(s: &str) -> Option<T> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_splitting_rules() {
        assert_eq!(split_java_whitespace("a 0 1"), ["a", "0", "1"]);
        assert_eq!(split_java_whitespace(" a"), ["", "a"]);
        assert_eq!(split_java_whitespace("a  "), ["a"]);
        assert!(split_java_whitespace("").len() == 1 && split_java_whitespace("")[0].is_empty());
        assert!(split_java_whitespace("   ").is_empty());
        assert!(split_java_whitespace("a\u{0B}b").len() == 2);
        assert_eq!(java_lines("a\r\nb\rc\n\nd"), ["a", "b", "c", "", "d"]);
        assert_eq!(java_lines("a\n"), ["a"]);
        assert_eq!(parse_java_int::<i32>("+7"), Some(7));
        assert_eq!(parse_java_int::<i32>("-7"), Some(-7));
        assert_eq!(parse_java_int::<i32>("7 "), None);
        assert_eq!(parse_java_int::<i32>("-"), None);
        assert_eq!(parse_java_int::<i32>("2147483648"), None);
        assert_eq!(parse_java_int::<i64>("2147483648"), Some(2_147_483_648));
    }
}
