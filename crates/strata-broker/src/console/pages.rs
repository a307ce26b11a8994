//! The console's routes: a request path parsed into a [`Route`] (pure, so
//! hostile paths are tested without a broker), then answered from the
//! broker through `gather` and `render`.
//!
//! - `/` and `/console`: the topic list;
//! - `/console/topics/<topic>`: the topic's partitions;
//! - `/console/topics/<topic>/<partition>`: the partition page.
//!
//! Path segments are percent-decoded; a malformed escape, a segment that
//! decodes to a path separator or a dot segment, a name Kafka would not
//! accept or a path longer than [`MAX_PATH`] is a 400.

use super::text::decode_segment;
use super::{gather, render};
use crate::broker::Broker;
use crate::page::Page;

/// Longest path accepted.
pub(crate) const MAX_PATH: usize = 1024;
/// Kafka's longest topic name.
const MAX_TOPIC: usize = 249;

/// What a path asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Index,
    Topic(String),
    Partition(String, i32),
}

/// Why a path is refused, with its status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BadPath {
    pub status: u16,
    pub reason: &'static str,
}

fn bad(reason: &'static str) -> BadPath {
    BadPath {
        status: 400,
        reason,
    }
}

/// Kafka's topic-name rule: 1..=249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
fn legal_topic(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOPIC
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Parse a request path; `Ok(None)` when it is not a console path (a 404).
///
/// # Errors
/// [`BadPath`] for a path that is malformed rather than absent.
pub(crate) fn parse(path: &str) -> Result<Option<Route>, BadPath> {
    if path.len() > MAX_PATH {
        return Err(BadPath {
            status: 414,
            reason: "the path is too long",
        });
    }
    // One trailing slash is allowed (`/console/`); `/` itself has no segment.
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    let raw: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').skip(1).collect()
    };
    let mut parts = Vec::with_capacity(raw.len());
    for r in &raw {
        let d = decode_segment(r).ok_or_else(|| bad("a path segment has a malformed %-escape"))?;
        if d.is_empty() || d == "." || d == ".." || d.contains('/') || d.contains('\0') {
            return Err(bad("empty, dot or slash path segments are refused"));
        }
        parts.push(d);
    }
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match parts.as_slice() {
        [] | ["console"] => Ok(Some(Route::Index)),
        ["console", "topics", topic, rest @ ..] => {
            if !legal_topic(topic) {
                return Err(bad("not a legal topic name"));
            }
            match rest {
                [] => Ok(Some(Route::Topic(topic.to_string()))),
                [p] => {
                    let partition: i32 = p
                        .parse()
                        .ok()
                        .filter(|p| *p >= 0)
                        .ok_or_else(|| bad("the partition must be a number >= 0"))?;
                    Ok(Some(Route::Partition(topic.to_string(), partition)))
                }
                _ => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

/// The console page at `path`, or `None` when there is none.
pub(crate) fn page(broker: &Broker, path: &str) -> Option<Page> {
    let route = match parse(path) {
        Ok(Some(route)) => route,
        Ok(None) => return None,
        Err(e) => return Some(Page::text(e.status, format!("{}\n", e.reason))),
    };
    let not_found = |what: String| Some(Page::text(404, what));
    match route {
        Route::Index => Some(Page::html(render::index(&gather::topics(broker)))),
        Route::Topic(topic) => match gather::topic(broker, &topic) {
            Some(view) => Some(Page::html(render::topic(&view))),
            None => not_found(format!("no topic {topic}\n")),
        },
        Route::Partition(topic, partition) => match gather::partition(broker, &topic, partition) {
            Some(view) => Some(Page::html(render::partition(&view))),
            None => not_found(format!("no partition {topic}-{partition} on this broker\n")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_paths_parse_to_their_routes() {
        assert_eq!(parse("/"), Ok(Some(Route::Index)));
        assert_eq!(parse("/console/"), Ok(Some(Route::Index)));
        assert_eq!(
            parse("/console/topics/orders"),
            Ok(Some(Route::Topic("orders".into())))
        );
        assert_eq!(
            parse("/console/topics/orders/"),
            Ok(Some(Route::Topic("orders".into())))
        );
        assert_eq!(
            parse("/console/topics/my%2Dtopic/12"),
            Ok(Some(Route::Partition("my-topic".into(), 12)))
        );
        assert_eq!(parse("/console/topics/t/0/extra"), Ok(None));
        assert_eq!(parse("/elsewhere"), Ok(None));
        assert_eq!(parse("/console/topics"), Ok(None));
    }

    #[test]
    fn hostile_paths_are_refused_not_followed() {
        for path in [
            "/console/topics/%ZZ",
            "/console/topics/%",
            "/console/topics/..",
            "/console/topics/%2e%2e/0",
            "/console/topics/a%2Fb",
            "/console/topics/a%00b",
            "/console/topics/../../etc/passwd",
            "/console//topics",
            "/console/topics/t/-1",
            "/console/topics/t/x",
            "/console/topics/t/99999999999",
            "/console/topics/%3Cscript%3E",
            "/console/topics/%FF",
        ] {
            let e = parse(path).expect_err(path);
            assert_eq!(e.status, 400, "{path}");
        }
        let long = format!("/console/topics/{}", "a".repeat(MAX_PATH));
        assert_eq!(parse(&long).unwrap_err().status, 414);
        let topic = "a".repeat(MAX_TOPIC + 1);
        assert_eq!(
            parse(&format!("/console/topics/{topic}"))
                .unwrap_err()
                .status,
            400
        );
    }
}
