//! `coverage/show`: sluice's counters in Open vSwitch's table, with the
//! average rate over the last 5 seconds, minute and hour.
//!
//! The counters are the daemon's own (frames and bytes through the ports,
//! the pipeline's drops, packets to the controller...; cumulative since
//! start, summed over bridges, ports and workers), not Open vSwitch's
//! event names. Rates come from a sample of every counter taken every
//! [`SAMPLE_NS`] on the control thread: at most an hour of samples is
//! kept (720 samples of a few dozen numbers), so memory is bounded. A
//! window longer than the daemon's life is averaged over the life so far.

use std::collections::VecDeque;

/// How often the counters are sampled.
pub const SAMPLE_NS: u64 = 5_000_000_000;
/// Samples kept: one hour's.
const KEEP: usize = 721;

/// The history of the counters.
#[derive(Default)]
pub struct Coverage {
    /// (when, the counters' totals), oldest first.
    samples: VecDeque<(u64, Vec<(String, u64)>)>,
}

impl Coverage {
    /// Whether a sample is due at `now_ns`.
    pub fn due(&self, now_ns: u64) -> bool {
        self.samples
            .back()
            .is_none_or(|(t, _)| now_ns.saturating_sub(*t) >= SAMPLE_NS)
    }

    /// Records the counters' totals at `now_ns`.
    pub fn sample(&mut self, now_ns: u64, totals: Vec<(String, u64)>) {
        if self.samples.len() == KEEP {
            self.samples.pop_front();
        }
        self.samples.push_back((now_ns, totals));
    }

    /// The total of `name` in the newest sample at or before `at_ns`
    /// (the oldest sample when none is that old), and its time.
    fn then(&self, name: &str, at_ns: u64) -> Option<(u64, u64)> {
        let (t, v) = self
            .samples
            .iter()
            .rev()
            .find(|(t, _)| *t <= at_ns)
            .or_else(|| self.samples.front())?;
        let n = v.iter().find(|(n, _)| n == name).map_or(0, |(_, n)| *n);
        Some((*t, n))
    }

    /// The table, from the totals `now` (read when asked).
    pub fn show(&self, now_ns: u64, now: &[(String, u64)]) -> String {
        let rate = |name: &str, total: u64, window_s: u64| -> f64 {
            match self.then(name, now_ns.saturating_sub(window_s * 1_000_000_000)) {
                Some((t, was)) if now_ns > t => {
                    // Over the time since that sample (the window, or a
                    // little more: samples are 5 s apart; less when the
                    // daemon is younger than the window).
                    let secs = (now_ns - t) as f64 / 1e9;
                    total.saturating_sub(was) as f64 / secs
                }
                _ => 0.0,
            }
        };
        // A hash of the totals, as Open vSwitch prints one (FNV-1a).
        let mut hash: u32 = 0x811c_9dc5;
        for (_, v) in now {
            for b in v.to_le_bytes() {
                hash = (hash ^ b as u32).wrapping_mul(0x0100_0193);
            }
        }
        let mut s = format!(
            "Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash={hash:08x}:\n"
        );
        let mut never = 0;
        for (name, total) in now {
            if *total == 0 {
                never += 1;
                continue;
            }
            s.push_str(&format!(
                "{:<24} {:5.1}/sec {:9.3}/sec {:13.4}/sec   total: {}\n",
                name,
                rate(name, *total, 5),
                rate(name, *total, 60),
                rate(name, *total, 3600),
                total
            ));
        }
        s.push_str(&format!("{never} events never hit\n"));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rx: u64, drops: u64) -> Vec<(String, u64)> {
        vec![
            ("rx_packets".into(), rx),
            ("pipeline_dropped".into(), drops),
        ]
    }

    #[test]
    fn rates_over_each_window_and_the_never_hit_count() {
        let s = 1_000_000_000u64;
        let mut cov = Coverage::default();
        // A sample every 5 s for 2 minutes: 10 frames a second.
        for i in 0..=24u64 {
            let t = 100 * s + i * 5 * s;
            assert!(cov.due(t));
            cov.sample(t, c(i * 50, 0));
            assert!(!cov.due(t + s));
        }
        let now = 100 * s + 120 * s;
        let text = cov.show(now, &c(1200, 0));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with(
            "Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash="
        ));
        assert_eq!(
            lines[1],
            "rx_packets                10.0/sec    10.000/sec       10.0000/sec   total: 1200"
        );
        assert_eq!(lines[2], "1 events never hit");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn history_is_bounded() {
        let mut cov = Coverage::default();
        for i in 0..2000u64 {
            cov.sample(i * SAMPLE_NS, c(i, i));
        }
        assert_eq!(cov.samples.len(), KEEP);
    }
}
