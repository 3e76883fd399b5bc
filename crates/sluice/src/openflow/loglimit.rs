//! A budget of log lines: connection events (accepted, closed, refused,
//! accept errors) must not flood the log when a peer connects in a loop.

/// Connection log lines (accepted, closed, refused): at most this many per
/// window, then one line saying how many were left out.
pub(super) const LOG_LINES_PER_WINDOW: u32 = 20;
pub(super) const LOG_WINDOW_NS: u64 = 10_000_000_000;

/// A budget of log lines per window.
#[derive(Default)]
pub(super) struct LogLimit {
    window_start_ns: u64,
    lines: u32,
    suppressed: u64,
}

impl LogLimit {
    /// Whether a line may be written at `now_ns`; at the start of a new
    /// window, first reports what the last one left out.
    pub(super) fn allow(&mut self, bridge: &str, now_ns: u64) -> bool {
        if now_ns.saturating_sub(self.window_start_ns) >= LOG_WINDOW_NS {
            if self.suppressed > 0 {
                tracing::warn!(
                    bridge,
                    suppressed = self.suppressed,
                    "connection log lines left out"
                );
            }
            self.window_start_ns = now_ns;
            self.lines = 0;
            self.suppressed = 0;
        }
        if self.lines < LOG_LINES_PER_WINDOW {
            self.lines += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_log_lines_are_limited_per_window() {
        let mut l = LogLimit::default();
        let allowed = (0..100).filter(|_| l.allow("br0", 1)).count();
        assert_eq!(allowed as u32, LOG_LINES_PER_WINDOW);
        assert_eq!(l.suppressed, 100 - LOG_LINES_PER_WINDOW as u64);
        assert!(l.allow("br0", 1 + LOG_WINDOW_NS), "a new window");
        assert_eq!(l.suppressed, 0);
    }
}
