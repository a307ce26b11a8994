//! The principal of a TLS connection, as Kafka's `DefaultKafkaPrincipalBuilder`
//! builds it for SSL listeners, and `ssl.principal.mapping.rules` as Kafka's
//! `SslPrincipalMapper` parses and applies them.
//!
//! - No client certificate: `ANONYMOUS`.
//! - Otherwise the certificate's subject in RFC 2253 form as Java prints it
//!   (see [`super::dn`]) goes through the rules; the first rule that applies
//!   gives the name. No rule applying is an error: Kafka then fails the
//!   connection's authentication.
//!
//! Rules are `DEFAULT` (the DN unchanged) or `RULE:pattern/replacement/` with
//! an optional `L` or `U` (lower or upper case the result), separated by
//! commas; `/` inside a pattern or replacement is written `\/`, and commas may
//! appear inside rules. Splitting and parsing use Kafka's own two regular
//! expressions, which mean the same under the `regex` crate's leftmost-first
//! semantics, so odd inputs split exactly as Kafka splits them (the vectors
//! of `SslPrincipalMapperTest` are the tests below).
//!
//! A `RULE` applies when its pattern matches the *whole* DN; the result is the
//! DN with every match replaced (Java's `String.replaceAll`), where `$n`
//! naming a group that does not exist is first cut down digit by digit and
//! then kept literally (Kafka's `escapeLiteralBackReferences`, bugs included:
//! positions of later references are taken from the original replacement).
//! Patterns are Java regexes run by the `regex` crate: the common syntax is
//! the same; `\w`, `\d`, `\s` and `\b` are Unicode-aware here but ASCII in
//! Java, and look-around and back-references in patterns are refused.

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;

use super::dn;
use super::error::{PrincipalMappingError, TlsConfigError};

/// The principal of a connection without a client certificate.
pub const ANONYMOUS: &str = "ANONYMOUS";

/// Kafka's `RULE_PATTERN`, with Java's `\s` spelt out for the splitter.
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";
const JAVA_SPACE: &str = r"[ \t\n\x0B\f\r]";

fn rule_splitter() -> &'static Regex {
    static SPLITTER: OnceLock<Regex> = OnceLock::new();
    SPLITTER.get_or_init(|| {
        let pattern = format!("{JAVA_SPACE}*({RULE_PATTERN}){JAVA_SPACE}*(,{JAVA_SPACE}*|$)");
        #[allow(clippy::expect_used)]
        Regex::new(&pattern).expect("Kafka's rule splitter is a valid regex")
    })
}

fn rule_parser() -> &'static Regex {
    static PARSER: OnceLock<Regex> = OnceLock::new();
    PARSER.get_or_init(|| {
        #[allow(clippy::expect_used)]
        Regex::new(&format!("^(?:{RULE_PATTERN})")).expect("Kafka's rule parser is a valid regex")
    })
}

/// Parsed `ssl.principal.mapping.rules`.
#[derive(Clone)]
pub struct PrincipalMappingRules {
    rules: Vec<Rule>,
}

#[derive(Clone)]
enum Rule {
    Default,
    Pattern {
        /// The pattern as written (escapes kept), for display.
        source: String,
        /// The pattern, to search for every match.
        regex: Regex,
        /// The pattern anchored at both ends: Java's `Matcher.matches()`.
        whole: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

impl PrincipalMappingRules {
    /// Parses `ssl.principal.mapping.rules` as Kafka's `SslPrincipalMapper`
    /// does; an empty string gives no rules (every DN then fails).
    ///
    /// # Errors
    /// [`TlsConfigError::InvalidMappingRule`] for an entry that is neither
    /// `DEFAULT` nor a complete `RULE:…/…/[LU]`, or whose pattern does not
    /// compile.
    pub fn parse(rules: &str) -> Result<Self, TlsConfigError> {
        let trimmed = rules.trim_matches(|c: char| c <= ' ');
        let mut parsed = Vec::new();
        for caps in rule_splitter().captures_iter(trimmed) {
            let Some(item) = caps.get(1) else { continue };
            let item = item.as_str();
            let invalid = |reason: String| TlsConfigError::InvalidMappingRule {
                rule: item.to_owned(),
                reason,
            };
            let Some(m) = rule_parser().captures(item) else {
                return Err(invalid("not a rule".to_owned()));
            };
            let end = m.get(0).map_or(0, |g| g.end());
            if end != item.len() {
                return Err(invalid(format!("unmatched substring `{}`", &item[end..])));
            }
            if m.get(1).is_some() {
                parsed.push(Rule::Default);
            } else if let Some(pattern) = m.get(2) {
                let source = pattern.as_str().to_owned();
                let replacement = m.get(4).map_or("", |g| g.as_str()).to_owned();
                let case = match m.get(6).map(|g| g.as_str()) {
                    Some("L") => Case::Lower,
                    Some("U") => Case::Upper,
                    _ => Case::Keep,
                };
                let regex = Regex::new(&source).map_err(|e| invalid(e.to_string()))?;
                let whole = Regex::new(&format!(r"\A(?:{source})\z"))
                    .map_err(|e| invalid(e.to_string()))?;
                parsed.push(Rule::Pattern {
                    source,
                    regex,
                    whole,
                    replacement,
                    case,
                });
            }
            // Anything else is an empty entry, which Kafka ignores.
        }
        Ok(Self { rules: parsed })
    }

    /// Kafka's default rules: `DEFAULT`, the DN unchanged.
    pub fn default_rules() -> Self {
        Self {
            rules: vec![Rule::Default],
        }
    }

    /// The principal name for `dn`: the result of the first rule that applies.
    ///
    /// # Errors
    /// [`PrincipalMappingError::NoMatchingRule`] when no rule applies, and
    /// [`PrincipalMappingError::BadReplacement`] when the applying rule's
    /// replacement refers to a group that does not exist or ends in a lone
    /// `\` or `$` (an exception in Kafka too).
    pub fn apply(&self, dn: &str) -> Result<String, PrincipalMappingError> {
        for rule in &self.rules {
            if let Some(name) = rule.apply(dn)? {
                return Ok(name);
            }
        }
        Err(PrincipalMappingError::NoMatchingRule {
            dn: dn.to_owned(),
            rules: self.to_string(),
        })
    }
}

impl Default for PrincipalMappingRules {
    fn default() -> Self {
        Self::default_rules()
    }
}

/// Kafka's `toString` of the rule list, without the `SslPrincipalMapper(...)` wrapper.
impl fmt::Display for PrincipalMappingRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{rule}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for PrincipalMappingRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrincipalMappingRules([{self}])")
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Default => f.write_str("DEFAULT"),
            Rule::Pattern {
                source,
                replacement,
                case,
                ..
            } => {
                write!(f, "RULE:{source}/{replacement}")?;
                match case {
                    Case::Lower => f.write_str("/L"),
                    Case::Upper => f.write_str("/U"),
                    Case::Keep => Ok(()),
                }
            }
        }
    }
}

impl Rule {
    fn apply(&self, dn: &str) -> Result<Option<String>, PrincipalMappingError> {
        let Rule::Pattern {
            regex,
            whole,
            replacement,
            case,
            ..
        } = self
        else {
            return Ok(Some(dn.to_owned()));
        };
        if !whole.is_match(dn) {
            return Ok(None);
        }
        let groups = regex.captures_len() - 1;
        let bad = |reason: String| PrincipalMappingError::BadReplacement {
            rule: self.to_string(),
            dn: dn.to_owned(),
            reason,
        };
        let replacement = escape_literal_back_references(replacement, groups).map_err(&bad)?;
        let replaced = replace_all(regex, dn, &replacement).map_err(bad)?;
        Ok(Some(match case {
            Case::Keep => replaced,
            Case::Lower => replaced.to_lowercase(),
            Case::Upper => replaced.to_uppercase(),
        }))
    }
}

/// Kafka's `escapeLiteralBackReferences` (taken from Apache NiFi): a `$n`
/// whose number exceeds the group count is cut down by dropping its last
/// digits while it is 10 or more; if still too large, its `$` is escaped so
/// Java prints it literally. Positions come from the unmodified string, as in
/// Kafka, and are in UTF-16 units, as in Java.
fn escape_literal_back_references(unescaped: &str, groups: usize) -> Result<String, String> {
    if groups == 0 {
        return Ok(unescaped.to_owned());
    }
    let original: Vec<u16> = unescaped.encode_utf16().collect();
    let mut value = original.clone();
    let is_digit = |u: u16| (u16::from(b'0')..=u16::from(b'9')).contains(&u);
    let mut i = 0;
    while i < original.len() {
        if original[i] != u16::from(b'$') || !original.get(i + 1).is_some_and(|&u| is_digit(u)) {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while original.get(end).is_some_and(|&u| is_digit(u)) {
            end += 1;
        }
        i = end;
        let digits = String::from_utf16_lossy(&original[start..end]);
        if digits.starts_with('0') {
            continue;
        }
        // Java's Integer.parseInt overflows into an exception on long numbers.
        let mut index: u64 = digits
            .parse::<u32>()
            .map_err(|_| format!("group reference ${digits} is too large"))?
            .into();
        let groups = groups as u64;
        while index > groups && index >= 10 {
            index /= 10;
        }
        if index > groups {
            // Kafka inserts at the original position even after earlier insertions.
            let at = (start - 1).min(value.len());
            value.insert(at, u16::from(b'\\'));
        }
    }
    Ok(String::from_utf16_lossy(&value))
}

/// Java's `String.replaceAll(regex, replacement)`: every match replaced, an
/// empty match allowed right after a non-empty one, the search moving on by
/// one character after an empty match.
fn replace_all(regex: &Regex, text: &str, replacement: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while search <= text.len() {
        let Some(caps) = regex.captures_at(text, search) else {
            break;
        };
        let Some(m) = caps.get(0) else { break };
        out.push_str(&text[copied..m.start()]);
        expand_replacement(regex, &caps, replacement, &mut out)?;
        copied = m.end();
        search = if m.is_empty() {
            match text[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => break,
            }
        } else {
            m.end()
        };
    }
    out.push_str(&text[copied..]);
    Ok(out)
}

/// Java's `Matcher.appendReplacement` expansion: `\x` is `x`, `$n` takes the
/// longest group number that exists, `${name}` a named group.
fn expand_replacement(
    regex: &Regex,
    caps: &regex::Captures<'_>,
    replacement: &str,
    out: &mut String,
) -> Result<(), String> {
    let groups = regex.captures_len() - 1;
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped) => out.push(escaped),
                None => return Err("character to be escaped is missing".to_owned()),
            },
            '$' => {
                let index = match chars.next() {
                    None => return Err("group index is missing after `$`".to_owned()),
                    Some('{') => {
                        let mut name = String::new();
                        while let Some(&n) = chars.peek() {
                            if !n.is_ascii_alphanumeric() {
                                break;
                            }
                            name.push(n);
                            chars.next();
                        }
                        if chars.next() != Some('}') || name.is_empty() {
                            return Err("malformed named group reference".to_owned());
                        }
                        if name.starts_with(|n: char| n.is_ascii_digit()) {
                            return Err(format!("group name {{{name}}} starts with a digit"));
                        }
                        let Some(index) = regex.capture_names().position(|n| n == Some(&name))
                        else {
                            return Err(format!("no group with name {{{name}}}"));
                        };
                        index
                    }
                    Some(d) => {
                        let Some(first) = d.to_digit(10) else {
                            return Err("illegal group reference".to_owned());
                        };
                        let mut index = first as usize;
                        if index > groups {
                            return Err(format!("no group {index}"));
                        }
                        while let Some(next) = chars.peek().and_then(|n| n.to_digit(10)) {
                            let longer = index * 10 + next as usize;
                            if longer > groups {
                                break;
                            }
                            index = longer;
                            chars.next();
                        }
                        index
                    }
                };
                if let Some(group) = caps.get(index) {
                    out.push_str(group.as_str());
                }
            }
            other => out.push(other),
        }
    }
    Ok(())
}

/// The principal name of a TLS connection: [`ANONYMOUS`] without a client
/// certificate, else the subject DN of `peer_cert_der` (the end-entity
/// certificate, DER) in Java's RFC 2253 form put through `rules`.
///
/// # Errors
/// [`TlsConfigError::BadPeerCertificate`] when the certificate or its subject
/// does not parse, [`TlsConfigError::PrincipalMapping`] when no rule applies.
pub fn principal_name(
    peer_cert_der: Option<&[u8]>,
    rules: &PrincipalMappingRules,
) -> Result<String, TlsConfigError> {
    let Some(der) = peer_cert_der else {
        return Ok(ANONYMOUS.to_owned());
    };
    let dn = subject_dn(der).map_err(|reason| TlsConfigError::BadPeerCertificate { reason })?;
    Ok(rules.apply(&dn)?)
}

/// The subject of a DER certificate in Java's RFC 2253 form.
pub(crate) fn subject_dn(cert_der: &[u8]) -> Result<String, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).map_err(|e| e.to_string())?;
    dn::rfc2253(cert.subject().as_raw()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(s: &str) -> PrincipalMappingRules {
        PrincipalMappingRules::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    // Vectors from Kafka's SslPrincipalMapperTest.

    #[test]
    fn valid_rules() {
        for r in [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
            "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
            "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
            "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
        ] {
            rules(r);
        }
    }

    #[test]
    fn invalid_rules() {
        for r in [
            "default",
            "DEFAUL",
            "DEFAULT/L",
            "DEFAULT/U",
            "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
            "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
            // Not in Kafka's test: a pattern that does not compile.
            "RULE:^CN=(.*$/$1/",
        ] {
            assert!(
                matches!(
                    PrincipalMappingRules::parse(r),
                    Err(TlsConfigError::InvalidMappingRule { .. })
                ),
                "{r} should be refused"
            );
        }
    }

    #[test]
    fn mapper() {
        let mapper = rules(
            &[
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
            .join(", "),
        );
        let cases = [
            ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
            ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
            ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
            ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
            (
                "OU=JavaSoft,O=Sun Microsystems,C=US",
                "OU=JavaSoft,O=Sun Microsystems,C=US",
            ),
        ];
        for (dn, expected) in cases {
            assert_eq!(mapper.apply(dn).ok().as_deref(), Some(expected), "{dn}");
        }
    }

    #[test]
    fn rules_splitting() {
        let cases = [
            ("[]", ""),
            ("[DEFAULT]", "DEFAULT"),
            ("[RULE:/]", "RULE://"),
            ("[RULE:/.*]", "RULE:/.*/"),
            ("[RULE:/.*/L]", "RULE:/.*/L"),
            ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
            ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
            (
                "[RULE:   /     , DEFAULT]",
                "  RULE:   /     / ,  DEFAULT  ",
            ),
            (
                "[RULE:  /     /U, DEFAULT]",
                "  RULE:  /     /U   ,DEFAULT  ",
            ),
            (
                "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
                "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            ),
            // empty rules are ignored
            ("[]", ",   , , ,      , , ,   "),
            ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
            (
                "[RULE: /   , DEFAULT]",
                ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
            ),
            (
                "[RULE:   /  /U, DEFAULT]",
                "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
            ),
            // escape sequences
            (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
            (
                r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
                r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
            ),
            // rules rule
            (
                r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
                r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
            ),
        ];
        for (expected, input) in cases {
            assert_eq!(format!("[{}]", rules(input)), expected, "{input}");
        }
    }

    #[test]
    fn comma_with_whitespace() {
        let mapper = rules(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT");
        assert_eq!(
            mapper
                .apply(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz")
                .ok()
                .as_deref(),
            Some(r"Tkac\, Adam")
        );
    }

    // Beyond Kafka's tests.

    #[test]
    fn no_matching_rule_is_an_error() {
        let mapper = rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/");
        assert!(matches!(
            mapper.apply("CN=x,OU=Other"),
            Err(PrincipalMappingError::NoMatchingRule { .. })
        ));
        assert!(rules("").apply("CN=x").is_err());
        assert_eq!(
            PrincipalMappingRules::default()
                .apply("CN=x")
                .ok()
                .as_deref(),
            Some("CN=x")
        );
    }

    #[test]
    fn partial_match_does_not_apply() {
        // find() would match "CN=a"; Kafka requires matches() on the whole DN.
        let mapper = rules("RULE:CN=([a-z]+)/$1/,DEFAULT");
        assert_eq!(mapper.apply("CN=a,O=b").ok().as_deref(), Some("CN=a,O=b"));
        assert_eq!(mapper.apply("CN=a").ok().as_deref(), Some("a"));
    }

    #[test]
    fn back_references_as_java() {
        // Three groups: $4 is literal, $12 is $1 then "2", $0 the whole match.
        let mapper = rules(r"RULE:^CN=(.),OU=(.),O=(.)$/$1@$4|$12|$0|\$3|${x}/");
        let err = mapper.apply("CN=a,OU=b,O=c");
        // ${x} names no group: an error, as Java's IllegalArgumentException.
        assert!(matches!(
            err,
            Err(PrincipalMappingError::BadReplacement { .. })
        ));
        let mapper = rules(r"RULE:^CN=(.),OU=(.),O=(?<x>.)$/$1@$4|$12|$0|\$3|${x}/");
        assert_eq!(
            mapper.apply("CN=a,OU=b,O=c").ok().as_deref(),
            Some("a@$4|a2|CN=a,OU=b,O=c|$3|c")
        );
        // No groups at all: Kafka leaves $1 alone and Java then fails on it.
        assert!(rules("RULE:.*/$1/").apply("CN=a").is_err());
        // Replacement of every match, including the empty one at the end.
        assert_eq!(
            rules("RULE:.*/x/").apply("CN=a").ok().as_deref(),
            Some("xx")
        );
    }

    #[test]
    fn escape_uses_original_positions() {
        // Two out-of-range references: the second backslash lands one unit
        // early because Kafka reuses the original positions.
        assert_eq!(
            escape_literal_back_references("$5$6", 1).as_deref(),
            Ok(r"\$\5$6")
        );
        assert_eq!(
            escape_literal_back_references("ab$5c$6", 1).as_deref(),
            Ok(r"ab\$5\c$6")
        );
        assert_eq!(
            escape_literal_back_references("$5$$6", 1).as_deref(),
            Ok(r"\$5\$$6")
        );
    }

    #[test]
    fn anonymous_without_certificate() {
        let none = rules("RULE:^CN=(.*)$/$1/");
        assert_eq!(principal_name(None, &none).ok().as_deref(), Some(ANONYMOUS));
        assert!(matches!(
            principal_name(Some(b"not a certificate"), &none),
            Err(TlsConfigError::BadPeerCertificate { .. })
        ));
    }
}
