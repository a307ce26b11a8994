//! The typed definition table every configuration namespace uses, in the
//! spirit of Kafka's `ConfigDef`: one [`ConfigDef`] row per property with its
//! name, broker synonyms, [`ConfigType`], default, [`Validator`], whether it
//! is dynamic, and a doc line.
//!
//! A row also knows how to store a parsed [`Value`] into the typed config
//! struct `T` it belongs to (`set`) and how to print it back (`get`), so the
//! property name is spelled in exactly one place: the row. [`apply`] parses
//! a whole property map through a table in one pass; every error names the
//! key as given, the raw value and the rule it breaks
//! (`invalid value "abc" for log.retention.ms: not a long`). A bad value is
//! an error, never replaced by the default. Names a table does not define
//! are left alone (Kafka ignores unknown properties).

use std::collections::BTreeMap;

use super::ConfigError;

/// The value type of a config, as Kafka's `ConfigDef.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigType {
    Int,
    Long,
    Double,
    Boolean,
    String,
    List,
}

/// A parsed value, of the row's [`ConfigType`].
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i32),
    Long(i64),
    Double(f64),
    Boolean(bool),
    String(String),
    /// Comma-separated items, trimmed, empty items dropped.
    List(Vec<String>),
}

impl Value {
    /// The number of an `Int` or `Long` value (0 for other types, which a
    /// row's `set` never sees: the table parses by the row's type).
    pub fn long(&self) -> i64 {
        match self {
            Value::Int(n) => i64::from(*n),
            Value::Long(n) => *n,
            _ => 0,
        }
    }

    /// An `Int` value (see [`Value::long`]).
    pub fn int(&self) -> i32 {
        i32::try_from(self.long()).unwrap_or(i32::MAX)
    }

    /// A `Double` value (integers convert).
    pub fn double(&self) -> f64 {
        match self {
            Value::Double(d) => *d,
            other => other.long() as f64,
        }
    }

    /// A `Boolean` value.
    pub fn boolean(&self) -> bool {
        matches!(self, Value::Boolean(true))
    }

    /// A `String` value (a list joins with `,`).
    pub fn string(&self) -> String {
        match self {
            Value::String(s) => s.clone(),
            Value::List(items) => items.join(","),
            Value::Int(n) => n.to_string(),
            Value::Long(n) => n.to_string(),
            Value::Double(d) => render_double(*d),
            Value::Boolean(b) => b.to_string(),
        }
    }

    /// A `List` value (a string is one item).
    pub fn list(&self) -> Vec<String> {
        match self {
            Value::List(items) => items.clone(),
            other => vec![other.string()],
        }
    }
}

/// Kafka's validators (`ConfigDef.Range`, `ValidString`, `ValidList`, ...).
#[derive(Clone, Copy, Debug)]
pub enum Validator {
    /// Any value of the type.
    Any,
    /// A number `>= min` (`Range.atLeast`).
    AtLeast(i64),
    /// A number in `[min, max]` (`Range.between`).
    Between(i64, i64),
    /// A double in `[min, max]`.
    DoubleBetween(f64, f64),
    /// A double `> min`.
    DoubleAbove(f64),
    /// One of these strings (`ValidString.in`).
    OneOf(&'static [&'static str]),
    /// A list whose every item is one of these (`ValidList.in`).
    ListOf(&'static [&'static str]),
    /// A non-empty string (`NonEmptyString`).
    NonEmpty,
    /// A rule of the row's own: `Err` carries the rule the value breaks.
    Custom(fn(&Value) -> Result<(), String>),
}

impl Validator {
    fn check(&self, value: &Value) -> Result<(), String> {
        match *self {
            Validator::Any => Ok(()),
            Validator::AtLeast(min) if value.long() < min => Err(format!("must be at least {min}")),
            Validator::Between(min, max) if !(min..=max).contains(&value.long()) => {
                Err(format!("must be between {min} and {max}"))
            }
            Validator::DoubleBetween(min, max) if !(min..=max).contains(&value.double()) => {
                Err(format!(
                    "must be between {} and {}",
                    render_double(min),
                    render_double(max)
                ))
            }
            Validator::DoubleAbove(min) if value.double().is_nan() || value.double() <= min => {
                Err(format!("must be greater than {}", render_double(min)))
            }
            Validator::OneOf(allowed) if !allowed.contains(&value.string().as_str()) => {
                Err(format!("must be one of {}", allowed.join(", ")))
            }
            Validator::ListOf(allowed) => match value
                .list()
                .iter()
                .find(|item| !allowed.contains(&item.as_str()))
            {
                Some(item) => Err(format!(
                    "item {item:?} is not one of {}",
                    allowed.join(", ")
                )),
                None => Ok(()),
            },
            Validator::NonEmpty if value.string().is_empty() => Err("must not be empty".into()),
            Validator::Custom(check) => check(value),
            _ => Ok(()),
        }
    }
}

/// One property of a configuration namespace, and where its value goes in
/// the typed config `T`. Build rows with [`ConfigDef::new`] and the
/// `synonyms`/`dynamic` modifiers.
pub struct ConfigDef<T: 'static = super::LogConfig> {
    pub name: &'static str,
    /// Broker names that set this (topic) config, highest priority first,
    /// each with the factor that converts its unit to this config's
    /// (`log.retention.hours` → `retention.ms`: 3 600 000). Empty for a
    /// broker-only property.
    pub synonyms: &'static [(&'static str, i64)],
    pub kind: ConfigType,
    /// The default as Kafka prints it; `""` for Kafka's `null`.
    pub default: &'static str,
    pub validator: Validator,
    /// Strata applies a change without a restart (a topic config, or a
    /// dynamic broker config Strata reconfigures live; Kafka's dynamic
    /// configs that Strata cannot yet apply live are not marked).
    pub dynamic: bool,
    pub doc: &'static str,
    set: fn(&mut T, &Value),
    get: fn(&T) -> String,
}

impl<T> std::fmt::Debug for ConfigDef<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigDef")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("default", &self.default)
            .field("dynamic", &self.dynamic)
            .finish_non_exhaustive()
    }
}

impl<T> ConfigDef<T> {
    /// A static row with no synonyms.
    pub const fn new(
        name: &'static str,
        kind: ConfigType,
        default: &'static str,
        validator: Validator,
        doc: &'static str,
        set: fn(&mut T, &Value),
        get: fn(&T) -> String,
    ) -> ConfigDef<T> {
        ConfigDef {
            name,
            synonyms: &[],
            kind,
            default,
            validator,
            dynamic: false,
            doc,
            set,
            get,
        }
    }

    /// The same row with broker synonyms.
    pub const fn synonyms(mut self, synonyms: &'static [(&'static str, i64)]) -> ConfigDef<T> {
        self.synonyms = synonyms;
        self
    }

    /// The same row, changeable without a restart.
    pub const fn dynamic(mut self) -> ConfigDef<T> {
        self.dynamic = true;
        self
    }

    /// Parse `raw`, given under `key` (this row's name or a synonym): the
    /// type first, then the validator.
    ///
    /// # Errors
    /// [`ConfigError::InvalidValue`] naming `key`, `raw` and the rule.
    pub fn parse(&self, key: &'static str, raw: &str) -> Result<Value, ConfigError> {
        let bad = |rule: String| ConfigError::InvalidValue {
            name: key,
            value: raw.to_string(),
            rule,
        };
        let value = parse_typed(self.kind, raw).map_err(|rule| bad(rule.to_string()))?;
        self.validator.check(&value).map_err(bad)?;
        Ok(value)
    }

    /// Parse `raw` given under `key` and store it into `target`.
    ///
    /// # Errors
    /// As [`ConfigDef::parse`]; `target` is unchanged on error.
    pub fn apply(&self, target: &mut T, key: &'static str, raw: &str) -> Result<(), ConfigError> {
        let value = self.parse(key, raw)?;
        (self.set)(target, &value);
        Ok(())
    }

    /// This row's value in `target`, as Kafka prints it.
    pub fn render(&self, target: &T) -> String {
        (self.get)(target)
    }
}

/// Parse every property of `props` that `table` defines (by its own name)
/// into `target`, in table order.
///
/// # Errors
/// The first invalid value, naming key, value and rule; `target` may then
/// be partly updated and should be dropped.
pub fn apply<T>(
    table: &'static [ConfigDef<T>],
    target: &mut T,
    props: &BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    for def in table {
        if let Some(raw) = props.get(def.name) {
            def.apply(target, def.name, raw)?;
        }
    }
    Ok(())
}

/// Build a `T` from the defaults of `table` over `blank`; used by the
/// `Default` of table-backed configs so that a default is written once.
///
/// # Panics
/// A default that its own row refuses (caught by every table's unit test).
pub fn defaults<T>(table: &'static [ConfigDef<T>], mut blank: T) -> T {
    for def in table {
        if def.default.is_empty() && def.kind != ConfigType::List {
            continue;
        }
        if let Err(e) = def.apply(&mut blank, def.name, def.default) {
            panic!("default of {} is invalid: {e}", def.name);
        }
    }
    blank
}

/// `(name, value)` of every row of `table` as resolved in `target`.
pub fn resolved<T>(table: &'static [ConfigDef<T>], target: &T) -> Vec<(&'static str, String)> {
    table.iter().map(|d| (d.name, d.render(target))).collect()
}

/// Whether `name` is a row's name or synonym in `table`.
pub fn defines<T>(table: &'static [ConfigDef<T>], name: &str) -> bool {
    table
        .iter()
        .any(|d| d.name == name || d.synonyms.iter().any(|(s, _)| *s == name))
}

fn parse_typed(kind: ConfigType, raw: &str) -> Result<Value, &'static str> {
    let t = raw.trim();
    Ok(match kind {
        ConfigType::Int => Value::Int(t.parse().map_err(|_| "not an int")?),
        ConfigType::Long => Value::Long(t.parse().map_err(|_| "not a long")?),
        ConfigType::Double => {
            let d: f64 = t.parse().map_err(|_| "not a double")?;
            if d.is_nan() {
                return Err("not a double");
            }
            Value::Double(d)
        }
        ConfigType::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" => Value::Boolean(true),
            "false" => Value::Boolean(false),
            _ => return Err("not a boolean (true or false)"),
        },
        ConfigType::String => Value::String(t.to_string()),
        ConfigType::List => Value::List(
            t.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        ),
    })
}

/// Kafka prints doubles like Java's `Double.toString` (`0.5`, `1.0`).
pub fn render_double(d: f64) -> String {
    if d == f64::INFINITY || d == f64::MAX {
        "1.7976931348623157E308".into()
    } else if d.fract() == 0.0 && d.abs() < 1e15 {
        format!("{d:.1}")
    } else {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug)]
    struct Demo {
        n: i64,
        ratio: f64,
        mode: String,
        on: bool,
        items: Vec<String>,
    }

    type Def = ConfigDef<Demo>;

    static TABLE: &[Def] = &[
        Def::new(
            "demo.n",
            ConfigType::Long,
            "5",
            Validator::AtLeast(1),
            "A count.",
            |c, v| c.n = v.long(),
            |c| c.n.to_string(),
        ),
        Def::new(
            "demo.ratio",
            ConfigType::Double,
            "0.5",
            Validator::DoubleBetween(0.0, 1.0),
            "A ratio.",
            |c, v| c.ratio = v.double(),
            |c| render_double(c.ratio),
        ),
        Def::new(
            "demo.mode",
            ConfigType::String,
            "a",
            Validator::OneOf(&["a", "b"]),
            "A mode.",
            |c, v| c.mode = v.string(),
            |c| c.mode.clone(),
        )
        .dynamic(),
        Def::new(
            "demo.on",
            ConfigType::Boolean,
            "false",
            Validator::Any,
            "A switch.",
            |c, v| c.on = v.boolean(),
            |c| c.on.to_string(),
        ),
        Def::new(
            "demo.items",
            ConfigType::List,
            "x",
            Validator::ListOf(&["x", "y"]),
            "Items.",
            |c, v| c.items = v.list(),
            |c| c.items.join(","),
        ),
    ];

    fn props(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn error_text(kv: &[(&str, &str)]) -> String {
        let mut d = defaults(TABLE, Demo::default());
        apply(TABLE, &mut d, &props(kv)).unwrap_err().to_string()
    }

    #[test]
    fn defaults_come_from_the_table() {
        let d = defaults(TABLE, Demo::default());
        assert_eq!((d.n, d.ratio, d.mode.as_str(), d.on), (5, 0.5, "a", false));
        assert_eq!(d.items, vec!["x"]);
        assert_eq!(
            resolved(TABLE, &d),
            vec![
                ("demo.n", "5".to_string()),
                ("demo.ratio", "0.5".to_string()),
                ("demo.mode", "a".to_string()),
                ("demo.on", "false".to_string()),
                ("demo.items", "x".to_string()),
            ]
        );
        assert!(TABLE[2].dynamic && !TABLE[0].dynamic);
    }

    #[test]
    fn values_are_typed_and_unknown_names_ignored() {
        let mut d = defaults(TABLE, Demo::default());
        apply(
            TABLE,
            &mut d,
            &props(&[
                ("demo.n", " 7 "),
                ("demo.ratio", "1"),
                ("demo.mode", "b"),
                ("demo.on", "TRUE"),
                ("demo.items", "y, x,,"),
                ("not.defined", "whatever"),
            ]),
        )
        .unwrap();
        assert_eq!((d.n, d.ratio, d.mode.as_str(), d.on), (7, 1.0, "b", true));
        assert_eq!(d.items, vec!["y", "x"]);
    }

    #[test]
    fn every_error_names_key_value_and_rule() {
        assert_eq!(
            error_text(&[("demo.n", "abc")]),
            r#"invalid value "abc" for demo.n: not a long"#
        );
        assert_eq!(
            error_text(&[("demo.n", "0")]),
            r#"invalid value "0" for demo.n: must be at least 1"#
        );
        assert_eq!(
            error_text(&[("demo.ratio", "1.5")]),
            r#"invalid value "1.5" for demo.ratio: must be between 0.0 and 1.0"#
        );
        assert_eq!(
            error_text(&[("demo.ratio", "NaN")]),
            r#"invalid value "NaN" for demo.ratio: not a double"#
        );
        assert_eq!(
            error_text(&[("demo.mode", "c")]),
            r#"invalid value "c" for demo.mode: must be one of a, b"#
        );
        assert_eq!(
            error_text(&[("demo.on", "yes")]),
            r#"invalid value "yes" for demo.on: not a boolean (true or false)"#
        );
        assert_eq!(
            error_text(&[("demo.items", "x,z")]),
            r#"invalid value "x,z" for demo.items: item "z" is not one of x, y"#
        );
    }

    #[test]
    fn int_range_and_custom_rules() {
        let int = ConfigDef::<Demo>::new(
            "i",
            ConfigType::Int,
            "1",
            Validator::Between(1, 3),
            "",
            |c, v| c.n = v.long(),
            |c| c.n.to_string(),
        );
        assert!(int.parse("i", "2").is_ok());
        assert_eq!(
            int.parse("i", "4").unwrap_err().to_string(),
            r#"invalid value "4" for i: must be between 1 and 3"#
        );
        assert_eq!(
            int.parse("i", "4294967296").unwrap_err().to_string(),
            r#"invalid value "4294967296" for i: not an int"#
        );
        let custom = ConfigDef::<Demo>::new(
            "c",
            ConfigType::String,
            "",
            Validator::Custom(|v| {
                if v.string().starts_with('/') {
                    Ok(())
                } else {
                    Err("must be an absolute path".into())
                }
            }),
            "",
            |c, v| c.mode = v.string(),
            |c| c.mode.clone(),
        );
        assert!(custom.parse("c", "/x").is_ok());
        assert_eq!(
            custom.parse("c", "x").unwrap_err().to_string(),
            r#"invalid value "x" for c: must be an absolute path"#
        );
        let above = ConfigDef::<Demo>::new(
            "d",
            ConfigType::Double,
            "",
            Validator::DoubleAbove(0.0),
            "",
            |c, v| c.ratio = v.double(),
            |c| render_double(c.ratio),
        );
        assert!(above.parse("d", "0").is_err());
        assert!(above.parse("d", "0.1").is_ok());
    }
}
