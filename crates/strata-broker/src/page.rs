//! One answer of the HTTP listener (`crate::http`): status, content type and
//! body, as the console and `/metrics` build it.

/// One answer: status, content type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Page {
    pub(crate) fn html(body: String) -> Page {
        Page {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body,
        }
    }

    pub(crate) fn text(status: u16, body: impl Into<String>) -> Page {
        Page {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }
}
