//! `gaps`: a spin loop that reads the clock back to back and records every
//! gap between two reads longer than a threshold. The loop does nothing
//! else (no allocation once started, no syscall), so a gap is time the
//! thread did not run: an interrupt, a softirq, another task on its CPU,
//! or the hypervisor holding the vCPU (steal). Run beside a switch (pinned
//! with `taskset -c N` to the switch's CPU or the other one), what it sees
//! is the machine's share of the switch's worst delays.
//!
//! It also reads the steal time of every CPU from /proc/stat before and
//! after (the hypervisor's own count of time a vCPU was runnable but not
//! run).

use std::time::{Duration, Instant};

/// The gaps a spin loop saw: counts over fixed bounds, the largest ones.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Gaps {
    /// Clock reads.
    pub reads: u64,
    /// Gaps longer than the threshold, as (offset from the start, length) ns.
    pub gaps: Vec<(u64, u64)>,
}

/// Bounds (us) the report counts gaps over.
pub const BOUNDS_US: [u64; 5] = [50, 150, 500, 1_000, 10_000];

impl Gaps {
    /// Records the read at `t` ns after a previous read at `prev` ns (from
    /// the start) when it came more than `threshold` ns later.
    #[inline]
    pub fn see(&mut self, prev: u64, t: u64, threshold: u64) {
        self.reads += 1;
        let d = t.saturating_sub(prev);
        if d > threshold {
            self.gaps.push((prev, d));
        }
    }

    /// Gaps longer than `us` microseconds.
    pub fn over(&self, us: u64) -> usize {
        self.gaps.iter().filter(|g| g.1 > us * 1_000).count()
    }

    /// The longest gap, ns (0 if none).
    pub fn max(&self) -> u64 {
        self.gaps.iter().map(|g| g.1).max().unwrap_or(0)
    }

    /// Time lost in gaps over `us` microseconds, ns.
    pub fn lost_over(&self, us: u64) -> u64 {
        self.gaps
            .iter()
            .filter(|g| g.1 > us * 1_000)
            .map(|g| g.1)
            .sum()
    }

    /// The `n` longest gaps, longest first.
    pub fn longest(&self, n: usize) -> Vec<(u64, u64)> {
        let mut v = self.gaps.clone();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// Spins for `secs` seconds, recording gaps over `threshold_us`.
pub fn spin(secs: f64, threshold_us: u64) -> Gaps {
    let mut g = Gaps {
        reads: 0,
        gaps: Vec::with_capacity(1 << 16),
    };
    let start = Instant::now();
    let end = Duration::from_secs_f64(secs).as_nanos() as u64;
    let threshold = threshold_us * 1_000;
    let mut prev = 0u64;
    loop {
        let t = start.elapsed().as_nanos() as u64;
        g.see(prev, t, threshold);
        prev = t;
        if t >= end {
            return g;
        }
    }
}

/// Steal time per CPU (`cpuN` lines of /proc/stat), in clock ticks.
pub fn parse_steal(stat: &str) -> Vec<(String, u64)> {
    stat.lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next()?.to_string();
            // user nice system idle iowait irq softirq steal
            let steal = f.nth(7)?.parse().ok()?;
            Some((name, steal))
        })
        .collect()
}

fn steal_now() -> Vec<(String, u64)> {
    std::fs::read_to_string("/proc/stat")
        .map(|s| parse_steal(&s))
        .unwrap_or_default()
}

/// Runs the detector and renders its report (text, or one JSON object).
pub fn run(secs: f64, threshold_us: u64, json: bool) -> String {
    let before = steal_now();
    let g = spin(secs, threshold_us);
    let after = steal_now();
    // USER_HZ is 100 on Linux: a tick is 10 ms.
    let steal: Vec<(String, u64)> = after
        .iter()
        .map(|(cpu, a)| {
            let b = before.iter().find(|x| &x.0 == cpu).map_or(*a, |x| x.1);
            (cpu.clone(), a.saturating_sub(b) * 10)
        })
        .collect();
    let counts: Vec<(u64, usize)> = BOUNDS_US.iter().map(|&b| (b, g.over(b))).collect();
    let longest = g.longest(10);
    if json {
        let c = counts
            .iter()
            .map(|(b, n)| format!("\"over_{b}us\":{n}"))
            .collect::<Vec<_>>()
            .join(",");
        let s = steal
            .iter()
            .map(|(cpu, ms)| format!("\"{cpu}\":{ms}"))
            .collect::<Vec<_>>()
            .join(",");
        let l = longest
            .iter()
            .map(|(at, d)| format!("[{:.3},{:.1}]", *at as f64 / 1e6, *d as f64 / 1e3))
            .collect::<Vec<_>>()
            .join(",");
        return format!(
            "{{\"seconds\":{secs},\"threshold_us\":{threshold_us},\"reads\":{},\"gaps\":{},{c},\"max_us\":{:.1},\"lost_over_150us_ms\":{:.3},\"steal_ms\":{{{s}}},\"longest_ms_us\":[{l}]}}\n",
            g.reads,
            g.gaps.len(),
            g.max() as f64 / 1e3,
            g.lost_over(150) as f64 / 1e6,
        );
    }
    let mut out = format!(
        "{:.1} s, {} clock reads, {} gaps over {threshold_us} us\n",
        secs,
        g.reads,
        g.gaps.len()
    );
    for (b, n) in &counts {
        out += &format!("  over {b:>6} us: {n}\n");
    }
    out += &format!(
        "  longest {:.1} us; lost in gaps over 150 us: {:.3} ms\n",
        g.max() as f64 / 1e3,
        g.lost_over(150) as f64 / 1e6
    );
    for (at, d) in &longest {
        out += &format!(
            "  at {:>10.3} ms: {:>9.1} us\n",
            *at as f64 / 1e6,
            *d as f64 / 1e3
        );
    }
    out += "  steal (ms):";
    for (cpu, ms) in &steal {
        out += &format!(" {cpu} {ms}");
    }
    out += "\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_over_the_threshold_are_kept_and_counted() {
        let mut g = Gaps::default();
        let reads = [0u64, 100, 200, 60_200, 60_300, 260_300, 2_260_300];
        for w in reads.windows(2) {
            g.see(w[0], w[1], 50_000);
        }
        assert_eq!(g.reads, 6);
        assert_eq!(
            g.gaps,
            vec![(200, 60_000), (60_300, 200_000), (260_300, 2_000_000)]
        );
        assert_eq!(g.over(50), 3);
        assert_eq!(g.over(150), 2);
        assert_eq!(g.over(1_000), 1);
        assert_eq!(g.max(), 2_000_000);
        assert_eq!(g.lost_over(150), 2_200_000);
        assert_eq!(g.longest(2), vec![(260_300, 2_000_000), (60_300, 200_000)]);
    }

    #[test]
    fn a_short_spin_reads_the_clock_and_ends() {
        let g = spin(0.01, 1_000_000);
        assert!(g.reads > 100, "{}", g.reads);
    }

    #[test]
    fn steal_is_the_eighth_field_of_each_cpu_line() {
        let stat = "cpu  4113180 211058 901504 4890755 35473 0 146313 3309 0 0\n\
                    cpu0 1980353 100840 436627 2545005 10183 0 75504 1685 0 0\n\
                    cpu1 2132827 110217 464876 2345750 25290 0 70809 1624 0 0\n\
                    intr 1 2 3\n";
        assert_eq!(
            parse_steal(stat),
            vec![("cpu0".to_string(), 1685), ("cpu1".to_string(), 1624)]
        );
    }
}
