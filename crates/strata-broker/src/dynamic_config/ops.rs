//! The two request shapes over one level's config set: AlterConfigs
//! (the given set replaces the level) and IncrementalAlterConfigs (SET /
//! DELETE / APPEND / SUBTRACT), with Kafka's request checks.

use std::collections::BTreeMap;

use super::names::{default_of, is_list};
use super::DynamicConfigError;

/// IncrementalAlterConfigs operation codes.
pub(crate) mod op {
    pub const SET: i8 = 0;
    pub const DELETE: i8 = 1;
    pub const APPEND: i8 = 2;
    pub const SUBTRACT: i8 = 3;
}

/// One requested change, whichever API carried it.
#[derive(Clone, Debug)]
pub(crate) struct ConfigOp {
    pub name: String,
    pub op: i8,
    pub value: Option<String>,
}

/// Kafka's request checks shared by both APIs: no duplicate names, no null
/// value except for DELETE.
fn precheck(ops: &[ConfigOp]) -> Result<(), DynamicConfigError> {
    let mut seen = std::collections::BTreeSet::new();
    if !ops.iter().all(|o| seen.insert(o.name.as_str())) {
        return Err(DynamicConfigError::DuplicateKeys);
    }
    let nulls: Vec<String> = ops
        .iter()
        .filter(|o| o.op != op::DELETE && o.value.is_none())
        .map(|o| o.name.clone())
        .collect();
    if !nulls.is_empty() {
        return Err(DynamicConfigError::NullValue { names: nulls });
    }
    Ok(())
}

/// AlterConfigs: the given configs become the level's whole set.
pub(crate) fn replace_all(
    ops: &[ConfigOp],
) -> Result<BTreeMap<String, String>, DynamicConfigError> {
    precheck(ops)?;
    Ok(ops
        .iter()
        .filter_map(|o| o.value.clone().map(|v| (o.name.clone(), v)))
        .collect())
}

/// IncrementalAlterConfigs over the level's current set (Kafka
/// `prepareIncrementalConfigs`: APPEND/SUBTRACT start from the stored
/// value, else Kafka's default).
pub(crate) fn incremental(
    current: &BTreeMap<String, String>,
    ops: &[ConfigOp],
) -> Result<BTreeMap<String, String>, DynamicConfigError> {
    precheck(ops)?;
    let mut out = current.clone();
    for o in ops {
        let value = o.value.clone().unwrap_or_default();
        match o.op {
            op::SET => {
                out.insert(o.name.clone(), value);
            }
            op::DELETE => {
                out.remove(&o.name);
            }
            op::APPEND | op::SUBTRACT => {
                let append = o.op == op::APPEND;
                if !is_list(&o.name) {
                    return Err(DynamicConfigError::NotAList {
                        op: if append { "append" } else { "subtract" },
                        name: o.name.clone(),
                    });
                }
                let old = out
                    .get(&o.name)
                    .cloned()
                    .or_else(|| default_of(&o.name))
                    .unwrap_or_default();
                out.insert(o.name.clone(), apply_list_op(&old, &value, append));
            }
            other => return Err(DynamicConfigError::UnknownOperation { op: other }),
        }
    }
    Ok(out)
}

/// IncrementalAlterConfigs APPEND (`append`) or SUBTRACT of the comma-separated
/// items of `value` to or from the list `existing`, as Kafka applies them:
/// appended items that are already present are not repeated.
pub(crate) fn apply_list_op(existing: &str, value: &str, append: bool) -> String {
    let mut items: Vec<&str> = split_list(existing).collect();
    for item in split_list(value) {
        if append {
            if !items.contains(&item) {
                items.push(item);
            }
        } else {
            items.retain(|i| *i != item);
        }
    }
    items.join(",")
}

fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

#[cfg(test)]
mod list_op_tests {
    use super::apply_list_op;

    #[test]
    fn append_skips_present_items_and_subtract_removes_every_copy() {
        assert_eq!(apply_list_op("delete", "compact", true), "delete,compact");
        assert_eq!(
            apply_list_op("delete", " delete ,compact", true),
            "delete,compact"
        );
        assert_eq!(apply_list_op("", "compact", true), "compact");
        assert_eq!(
            apply_list_op("delete,compact,delete", "delete", false),
            "compact"
        );
        assert_eq!(apply_list_op("compact", "delete", false), "compact");
        assert_eq!(apply_list_op("a,,b", "", true), "a,b");
    }
}
