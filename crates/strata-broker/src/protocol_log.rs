//! Rate-limited INFO lines for protocol errors: malformed frames, unknown APIs,
//! unsupported versions, undecodable requests, slow or oversized frames, and
//! connections refused by a per-address limit.
//!
//! Kafka logs these per connection; a broken or hostile client can send
//! thousands a second, so Strata keeps them at INFO (an operator sees them
//! without turning on debug) but lets at most [`LINES_PER_WINDOW`] through in
//! each [`WINDOW`], and the first line of a later window says how many were
//! suppressed in between. Every line is also emitted at DEBUG, unlimited.
//! Lines carry the error's whole cause chain (`strata_log::ErrorChain`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Length of one rate-limit window.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);
/// INFO lines allowed per window.
pub(crate) const LINES_PER_WINDOW: u32 = 20;

/// The window state; the decision is the pure [`Window::admit`].
#[derive(Debug, Default)]
pub(crate) struct Window {
    started: Option<Instant>,
    logged: u32,
    suppressed: u64,
}

/// What [`Window::admit`] decided for one line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Log it; `suppressed` lines were dropped since the last logged one.
    Log { suppressed: u64 },
    /// Drop it (counted, reported with the next logged line).
    Suppress,
}

impl Window {
    pub(crate) fn admit(&mut self, now: Instant) -> Admit {
        let expired = match self.started {
            None => true,
            Some(start) => now.saturating_duration_since(start) >= WINDOW,
        };
        if expired {
            self.started = Some(now);
            self.logged = 0;
        }
        if self.logged < LINES_PER_WINDOW {
            self.logged += 1;
            Admit::Log {
                suppressed: std::mem::take(&mut self.suppressed),
            }
        } else {
            self.suppressed += 1;
            Admit::Suppress
        }
    }
}

static WINDOW_STATE: Mutex<Window> = Mutex::new(Window {
    started: None,
    logged: 0,
    suppressed: 0,
});

/// Log one protocol error: always at DEBUG, and at INFO within the rate limit.
pub(crate) fn protocol_error(
    peer: Option<std::net::SocketAddr>,
    what: &str,
    error: &dyn std::error::Error,
) {
    let chain = strata_log::ErrorChain(error);
    tracing::debug!(?peer, error = %chain, "{what}");
    let decision = WINDOW_STATE
        .lock()
        .map(|mut w| w.admit(Instant::now()))
        .unwrap_or(Admit::Log { suppressed: 0 });
    if let Admit::Log { suppressed } = decision {
        if suppressed > 0 {
            tracing::info!(?peer, error = %chain, suppressed, "{what} ({suppressed} similar lines suppressed)");
        } else {
            tracing::info!(?peer, error = %chain, "{what}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_lets_a_burst_through_then_suppresses_and_reports_the_count() {
        let t0 = Instant::now();
        let mut w = Window::default();
        for _ in 0..LINES_PER_WINDOW {
            assert_eq!(w.admit(t0), Admit::Log { suppressed: 0 });
        }
        for _ in 0..5 {
            assert_eq!(w.admit(t0 + Duration::from_secs(1)), Admit::Suppress);
        }
        // Still inside the window.
        assert_eq!(
            w.admit(t0 + WINDOW - Duration::from_millis(1)),
            Admit::Suppress
        );
        // A new window reports the six dropped lines once.
        assert_eq!(w.admit(t0 + WINDOW), Admit::Log { suppressed: 6 });
        assert_eq!(w.admit(t0 + WINDOW), Admit::Log { suppressed: 0 });
    }
}
