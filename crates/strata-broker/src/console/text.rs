//! Small text helpers of the console: HTML escaping, URL path encoding and
//! decoding, human sizes, durations and UTC times. Pure functions.

/// `text` with HTML's special characters escaped (safe in element content
/// and in quoted attribute values).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One path segment percent-encoded: everything but RFC 3986's unreserved
/// characters.
pub(crate) fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One path segment percent-decoded; `None` for a malformed escape or
/// bytes that are not UTF-8.
pub(crate) fn decode_segment(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Bytes in binary units: "512 B", "1.5 KiB", "3.0 GiB".
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A duration in words: "850 ms", "12 s", "5 min 3 s", "3 h 4 min", "2 d 1 h".
pub(crate) fn human_ms(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let s = ms / 1000;
    let text = match s {
        0 => format!("{ms} ms"),
        1..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    };
    format!("{sign}{text}")
}

/// A time (ms since the epoch) as UTC `YYYY-MM-DD HH:MM:SS`.
pub(crate) fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = strata_log::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_every_special_character() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain-topic.1"), "plain-topic.1");
    }

    #[test]
    fn segments_round_trip_through_percent_encoding() {
        for s in ["orders", "a b/c", "ü%", "x?y#z"] {
            let e = encode_segment(s);
            assert!(!e.contains('/') && !e.contains('?'), "{e}");
            assert_eq!(decode_segment(&e).as_deref(), Some(s));
        }
    }

    #[test]
    fn malformed_escapes_do_not_decode() {
        for bad in ["%ZZ", "%4", "%", "abc%G1", "%FF%FE"] {
            assert_eq!(decode_segment(bad), None, "{bad}");
        }
        assert_eq!(decode_segment("%2e%2E").as_deref(), Some(".."));
    }

    #[test]
    fn sizes_and_durations_read_naturally() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
        assert_eq!(human_ms(850), "850 ms");
        assert_eq!(human_ms(303_000), "5 min 3 s");
        assert_eq!(human_ms(-12_000), "-12 s");
        assert_eq!(human_ms(2 * 86_400_000 + 3_600_000), "2 d 1 h");
    }

    #[test]
    fn utc_times_match_the_calendar() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_700_000_000_123), "2023-11-14 22:13:20");
        assert_eq!(utc(-1000), "1969-12-31 23:59:59");
    }
}
