//! Parsing `sasl.jaas.config` values, as Kafka's `JaasConfig` does with
//! Java's `StreamTokenizer`:
//!
//! ```text
//! config = 1*( module-class flag *( key "=" value ) ";" )
//! flag   = "required" | "requisite" | "sufficient" | "optional"   ; any case
//! value  = word | "double-quoted" | 'single-quoted'
//! ```
//!
//! Words are letters (and characters from U+00A0 up), `-`, `_`, `$`, with
//! digits and `.` allowed after the first character; a token starting with a
//! digit, `.` or `-` is a number to Java, which Kafka refuses as a value
//! (quote it). Quoted strings take Java escapes (`\"`, `\\`, `\n`, `\t`,
//! octal, ...) and end at the closing quote or the end of the line. `//`,
//! `/* */` and a lone `/` (to the end of the line) are comments.
//!
//! A broker listener's entry (`listener.name.<l>.<mech>.sasl.jaas.config`)
//! must hold exactly one module: [`JaasConfig::single_module`].

use std::collections::BTreeMap;
use std::fmt;
use std::iter::Peekable;
use std::str::Chars;

/// Kafka's PLAIN login module class.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

/// A parsed `sasl.jaas.config` value.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JaasConfig {
    /// The login modules, in order.
    pub modules: Vec<LoginModule>,
}

/// One login module entry. `Debug` redacts option values whose key contains
/// `password` or `secret` (any case) or starts with `user_`.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginModule {
    /// The login module class, e.g. [`PLAIN_LOGIN_MODULE`].
    pub class: String,
    /// The JAAS control flag.
    pub flag: ControlFlag,
    /// The options; a repeated key keeps its last value, as in Kafka.
    pub options: BTreeMap<String, String>,
}

/// A JAAS login module control flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlag {
    /// `required`.
    Required,
    /// `requisite`.
    Requisite,
    /// `sufficient`.
    Sufficient,
    /// `optional`.
    Optional,
}

/// Why a JAAS config value could not be parsed. Never holds option values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasError {
    /// No module at all.
    #[error("Login module not specified in JAAS config")]
    NoLoginModule,
    /// The module class is not a word or quoted string.
    #[error("login module class is not a name in JAAS config")]
    InvalidModuleClass,
    /// The text ends after the module class.
    #[error("Login module control flag not specified in JAAS config")]
    ControlFlagMissing,
    /// The control flag is not one of the four.
    #[error("Invalid login module control flag '{flag}' in JAAS config")]
    InvalidControlFlag {
        /// The token found.
        flag: String,
    },
    /// An option name is not a word or quoted string.
    #[error("option name expected in JAAS config")]
    InvalidKey,
    /// `key` is not followed by `=` and a word or quoted string.
    #[error("Value not specified for key '{key}' in JAAS config")]
    ValueMissing {
        /// The option name.
        key: String,
    },
    /// The last entry does not end with `;`.
    #[error("JAAS config entry not terminated by semi-colon")]
    NotTerminated,
    /// A broker entry must have exactly one module.
    #[error("JAAS config property contains {count} login modules, should be 1 module")]
    ModuleCount {
        /// How many there are.
        count: usize,
    },
}

/// Parses a `sasl.jaas.config` value.
///
/// # Errors
/// The first syntax error, with Kafka's message.
pub fn parse_jaas(text: &str) -> Result<JaasConfig, JaasError> {
    let mut tokens = Tokenizer {
        chars: text.chars().peekable(),
    };
    let mut modules = Vec::new();
    loop {
        let class = match tokens.next_token() {
            Token::Eof => break,
            token => token.text().ok_or(JaasError::InvalidModuleClass)?,
        };
        let flag = match tokens.next_token() {
            Token::Eof => return Err(JaasError::ControlFlagMissing),
            token => parse_flag(&token)?,
        };
        let mut options = BTreeMap::new();
        loop {
            let key = match tokens.next_token() {
                Token::Eof => return Err(JaasError::NotTerminated),
                Token::Char(';') => break,
                token => token.text().ok_or(JaasError::InvalidKey)?,
            };
            if tokens.next_token() != Token::Char('=') {
                return Err(JaasError::ValueMissing { key });
            }
            let Some(value) = tokens.next_token().text() else {
                return Err(JaasError::ValueMissing { key });
            };
            options.insert(key, value);
        }
        modules.push(LoginModule {
            class,
            flag,
            options,
        });
    }
    if modules.is_empty() {
        return Err(JaasError::NoLoginModule);
    }
    Ok(JaasConfig { modules })
}

fn parse_flag(token: &Token) -> Result<ControlFlag, JaasError> {
    let text = token.text().unwrap_or_else(|| token.describe());
    match text.to_uppercase().as_str() {
        "REQUIRED" => Ok(ControlFlag::Required),
        "REQUISITE" => Ok(ControlFlag::Requisite),
        "SUFFICIENT" => Ok(ControlFlag::Sufficient),
        "OPTIONAL" => Ok(ControlFlag::Optional),
        _ => Err(JaasError::InvalidControlFlag { flag: text }),
    }
}

impl JaasConfig {
    /// The only module, as a broker listener entry must have.
    ///
    /// # Errors
    /// [`JaasError::ModuleCount`] if there is not exactly one.
    pub fn single_module(&self) -> Result<&LoginModule, JaasError> {
        match self.modules.as_slice() {
            [module] => Ok(module),
            modules => Err(JaasError::ModuleCount {
                count: modules.len(),
            }),
        }
    }

    /// The first value of `key` among modules of class `class` (Kafka's
    /// `JaasContext.configEntryOption`).
    pub fn option(&self, class: &str, key: &str) -> Option<&str> {
        self.modules
            .iter()
            .filter(|m| m.class == class)
            .find_map(|m| m.options.get(key))
            .map(String::as_str)
    }
}

/// The PLAIN users of a JAAS config: `user_<name>="<password>"` options of
/// its PlainLoginModule entries (the first entry naming a user wins), as
/// Kafka's `PlainServerCallbackHandler` reads them. The map holds passwords:
/// do not log it.
pub fn plain_users(config: &JaasConfig) -> BTreeMap<String, String> {
    let mut users = BTreeMap::new();
    for module in config
        .modules
        .iter()
        .filter(|m| m.class == PLAIN_LOGIN_MODULE)
    {
        for (key, value) in &module.options {
            if let Some(user) = key.strip_prefix("user_") {
                users
                    .entry(user.to_owned())
                    .or_insert_with(|| value.clone());
            }
        }
    }
    users
}

/// Whether an option's value must not be shown.
fn is_secret_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    key.starts_with("user_") || lower.contains("password") || lower.contains("secret")
}

impl fmt::Debug for LoginModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Options<'a>(&'a BTreeMap<String, String>);
        impl fmt::Debug for Options<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map()
                    .entries(self.0.iter().map(|(k, v)| {
                        (
                            k,
                            if is_secret_key(k) {
                                "<redacted>"
                            } else {
                                v.as_str()
                            },
                        )
                    }))
                    .finish()
            }
        }
        f.debug_struct("LoginModule")
            .field("class", &self.class)
            .field("flag", &self.flag)
            .field("options", &Options(&self.options))
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    /// A Java number token (no string value).
    Number,
    /// Any other single character.
    Char(char),
    Eof,
}

impl Token {
    /// The token's string value, as Java's `sval` (words and quoted strings).
    fn text(&self) -> Option<String> {
        match self {
            Token::Word(s) | Token::Quoted(s) => Some(s.clone()),
            Token::Number | Token::Char(_) | Token::Eof => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Token::Word(s) | Token::Quoted(s) => s.clone(),
            Token::Number => "<number>".to_owned(),
            Token::Char(c) => c.to_string(),
            Token::Eof => "<end>".to_owned(),
        }
    }
}

struct Tokenizer<'a> {
    chars: Peekable<Chars<'a>>,
}

/// Java's `StreamTokenizer` word characters with Kafka's additions.
fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '$') || u32::from(c) >= 0xA0
}

fn is_word_part(c: char) -> bool {
    is_word_start(c) || c.is_ascii_digit() || matches!(c, '.' | '-')
}

impl Tokenizer<'_> {
    fn next_token(&mut self) -> Token {
        loop {
            let Some(c) = self.chars.next() else {
                return Token::Eof;
            };
            match c {
                c if u32::from(c) <= 0x20 => continue,
                '/' => {
                    if self.chars.next_if_eq(&'*').is_some() {
                        self.skip_block_comment();
                    } else {
                        // `//` and a lone `/` both comment out the line.
                        self.skip_line();
                    }
                }
                '"' | '\'' => return Token::Quoted(self.quoted(c)),
                c if c.is_ascii_digit() || c == '.' => {
                    self.skip_number();
                    return Token::Number;
                }
                '-' => {
                    if self
                        .chars
                        .peek()
                        .is_some_and(|n| n.is_ascii_digit() || *n == '.')
                    {
                        self.skip_number();
                        return Token::Number;
                    }
                    return Token::Char('-');
                }
                c if is_word_start(c) => {
                    let mut word = String::from(c);
                    while let Some(n) = self.chars.next_if(|n| is_word_part(*n)) {
                        word.push(n);
                    }
                    return Token::Word(word);
                }
                other => return Token::Char(other),
            }
        }
    }

    fn skip_line(&mut self) {
        while self.chars.next_if(|c| *c != '\n' && *c != '\r').is_some() {}
    }

    fn skip_block_comment(&mut self) {
        let mut previous = '\0';
        for c in self.chars.by_ref() {
            if previous == '*' && c == '/' {
                return;
            }
            previous = c;
        }
    }

    fn skip_number(&mut self) {
        while self
            .chars
            .next_if(|c| c.is_ascii_digit() || *c == '.')
            .is_some()
        {}
    }

    /// A quoted string after its opening `quote`, with Java's escapes.
    fn quoted(&mut self, quote: char) -> String {
        let mut out = String::new();
        while let Some(c) = self.chars.next_if(|c| *c != '\n' && *c != '\r') {
            match c {
                c if c == quote => return out,
                '\\' => match self.chars.next_if(|c| *c != '\n' && *c != '\r') {
                    Some('a') => out.push('\u{7}'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('t') => out.push('\t'),
                    Some('v') => out.push('\u{b}'),
                    Some(d @ '0'..='7') => out.push(self.octal(d)),
                    Some(other) => out.push(other),
                    None => out.push('\\'),
                },
                other => out.push(other),
            }
        }
        out
    }

    /// Up to three octal digits; the third only if the first is 0-3.
    fn octal(&mut self, first: char) -> char {
        let digit = |c: char| u32::from(c) - u32::from('0');
        let mut value = digit(first);
        let max_digits = if first <= '3' { 3 } else { 2 };
        for _ in 1..max_digits {
            match self.chars.next_if(|c| ('0'..='7').contains(c)) {
                Some(d) => value = value * 8 + digit(d),
                None => break,
            }
        }
        char::from_u32(value).unwrap_or('\u{fffd}')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_broker_entry() {
        let config = parse_jaas(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
               username="admin" password="admin-secret"
               user_admin="admin-secret" user_alice="alice-secret";"#,
        )
        .unwrap();
        let module = config.single_module().unwrap();
        assert_eq!(module.class, PLAIN_LOGIN_MODULE);
        assert_eq!(module.flag, ControlFlag::Required);
        assert_eq!(module.options["username"], "admin");
        assert_eq!(module.options.len(), 4);
        let users = plain_users(&config);
        assert_eq!(users.len(), 2);
        assert_eq!(users["alice"], "alice-secret");
        assert_eq!(
            config.option(PLAIN_LOGIN_MODULE, "user_admin"),
            Some("admin-secret")
        );
    }

    #[test]
    fn quotes_escapes_and_unquoted_words() {
        // Java StreamTokenizer escapes: \" \\ \n and octal \101 = 'A'.
        let config = parse_jaas(
            r#"test.testQuotedValues required str1="$KAFKA_OPTS" str2='single quoted' esc="a\"b\\c\n\101" dash=a-b_c.d$e "quoted key"=x;"#,
        )
        .unwrap();
        let options = &config.modules[0].options;
        assert_eq!(options["str1"], "$KAFKA_OPTS");
        assert_eq!(options["str2"], "single quoted");
        assert_eq!(options["esc"], "a\"b\\c\nA");
        assert_eq!(options["dash"], "a-b_c.d$e");
        assert_eq!(options["quoted key"], "x");
    }

    #[test]
    fn control_flags_any_case_and_several_modules() {
        let config = parse_jaas(
            "a.A REQUIRED; b.B Requisite x=\"1\"; /* comment */ c.C sufficient; // line\n d.D optional;",
        )
        .unwrap();
        let flags: Vec<_> = config.modules.iter().map(|m| m.flag).collect();
        assert_eq!(
            flags,
            [
                ControlFlag::Required,
                ControlFlag::Requisite,
                ControlFlag::Sufficient,
                ControlFlag::Optional
            ]
        );
        assert_eq!(config.modules[1].options["x"], "1");
        assert_eq!(
            config.single_module(),
            Err(JaasError::ModuleCount { count: 4 })
        );
    }

    #[test]
    fn kafka_errors() {
        assert_eq!(parse_jaas(""), Err(JaasError::NoLoginModule));
        assert_eq!(
            parse_jaas("  // only a comment"),
            Err(JaasError::NoLoginModule)
        );
        assert_eq!(
            parse_jaas("test.Module"),
            Err(JaasError::ControlFlagMissing)
        );
        assert_eq!(
            parse_jaas("test.Module invalid;"),
            Err(JaasError::InvalidControlFlag {
                flag: "invalid".into()
            })
        );
        assert_eq!(
            parse_jaas("test.Module required"),
            Err(JaasError::NotTerminated)
        );
        assert_eq!(
            parse_jaas("test.Module required a=\"b\""),
            Err(JaasError::NotTerminated)
        );
        assert_eq!(
            parse_jaas("test.Module required key;"),
            Err(JaasError::ValueMissing { key: "key".into() })
        );
        assert_eq!(
            parse_jaas("test.Module required key=;"),
            Err(JaasError::ValueMissing { key: "key".into() })
        );
        // Java reads an unquoted 1000 as a number, which Kafka refuses.
        assert_eq!(
            parse_jaas("test.Module required skew=1000;"),
            Err(JaasError::ValueMissing { key: "skew".into() })
        );
        assert!(parse_jaas("test.Module required skew=\"1000\";").is_ok());
        assert_eq!(
            parse_jaas("test.Module required a=b c;"),
            Err(JaasError::ValueMissing { key: "c".into() })
        );
    }

    // Kafka's JaasContextTest vectors.
    #[test]
    fn kafka_jaas_context_test_vectors() {
        let config = parse_jaas(
            r#"test.testQuotedOptionValue required propName="prop value" propName2="value1 = 1, value2 = 2";"#,
        )
        .unwrap();
        assert_eq!(config.modules[0].options["propName"], "prop value");
        assert_eq!(
            config.modules[0].options["propName2"],
            "value1 = 1, value2 = 2"
        );
        let config =
            parse_jaas(r#"test.testQuotedOptionName required "prop name"=propValue;"#).unwrap();
        assert_eq!(config.modules[0].options["prop name"], "propValue");
        let many: String = (0..10)
            .map(|i| format!(" propName{i}=propValue{i}"))
            .collect();
        let config = parse_jaas(&format!("test.testMultipleOptions sufficient{many};")).unwrap();
        assert_eq!(config.modules[0].options.len(), 10);
        assert_eq!(config.modules[0].options["propName7"], "propValue7");
        let config = parse_jaas("test.testConfigNoOptions required;").unwrap();
        assert!(config.single_module().unwrap().options.is_empty());
        let config =
            parse_jaas(r#"test.testNumericOptionWithQuotes required option1="3";"#).unwrap();
        assert_eq!(config.modules[0].options["option1"], "3");
        for invalid in [
            "  required option1=value1;",
            "test.loginModule option1=value1;",
            "loginModule required option1;",
            "test.testMissingSemicolon required option1=value1",
            "test.testNumericOptionWithoutQuotes required option1=3;",
            "test.testInvalidControlFlag { option1=3;",
        ] {
            assert!(parse_jaas(invalid).is_err(), "{invalid}");
        }
    }

    #[test]
    fn debug_redacts_secrets() {
        let config = parse_jaas(
            r#"x.Y required username="admin" password="pw1" user_alice="pw2" clientSecret="pw3";"#,
        )
        .unwrap();
        let debug = format!("{config:?}");
        assert!(debug.contains("admin"));
        for secret in ["pw1", "pw2", "pw3"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert_eq!(debug.matches("<redacted>").count(), 3);
    }

    #[test]
    fn plain_users_only_from_plain_modules_first_wins() {
        let config = parse_jaas(&format!(
            r#"{PLAIN_LOGIN_MODULE} required user_a="1"; other.Module required user_b="2"; {PLAIN_LOGIN_MODULE} optional user_a="3" user_c="4";"#
        ))
        .unwrap();
        let users = plain_users(&config);
        assert_eq!(users.get("a").map(String::as_str), Some("1"));
        assert_eq!(users.get("b"), None);
        assert_eq!(users.get("c").map(String::as_str), Some("4"));
    }
}
