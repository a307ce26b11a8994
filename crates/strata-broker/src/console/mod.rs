//! The read-only storage console served on the HTTP listener
//! (`strata.metrics.listener`): pages per topic and partition that draw the
//! segment timeline (offset ranges, sizes, times, local / remote tier, what
//! retention or compaction does next), the cleaner's state and dirty ratio,
//! consumer-group lag and the doctor's findings. Nothing it does changes the
//! broker. See `docs/console.md`.
//!
//! # Layout
//!
//! - `pages`: path parsing and routing (`/`, `/console/topics/<t>`,
//!   `/console/topics/<t>/<p>`).
//! - `gather`: the broker's state read into the model (blocking, read-only).
//! - `model`: plain data the pages show.
//! - `render`: model to HTML, `timeline`: the segment timeline as SVG (pure).
//! - `text`: escaping, path encoding, human sizes and times (pure).
//! - `crate::console_findings` (beside, below the config): the [`ConsoleFindings`] seam through which the `strata`
//!   binary supplies the doctor's findings.

mod gather;
mod model;
mod pages;
mod render;
mod text;
mod timeline;

pub use crate::console_findings::{
    ConsoleFinding, ConsoleFindings, FindingSeverity, FindingsSource,
};

use crate::broker::Broker;
use crate::page::Page;

/// The fuzz target's way in: the path parser and the text helpers on
/// arbitrary input (see `crate::http::fuzz_http_request`).
pub(crate) fn fuzz_route(path: &str) -> bool {
    let parsed = pages::parse(path);
    for segment in path.split('/') {
        if let Some(decoded) = text::decode_segment(segment) {
            let again = text::decode_segment(&text::encode_segment(&decoded));
            assert_eq!(
                again.as_deref(),
                Some(decoded.as_str()),
                "encode/decode round trip"
            );
            let _ = text::escape(&decoded);
        }
    }
    matches!(parsed, Ok(Some(_)))
}

/// The console page at `path`, or `None` when there is none.
pub(crate) fn page(broker: &Broker, path: &str, _query: &str) -> Option<Page> {
    pages::page(broker, path)
}
