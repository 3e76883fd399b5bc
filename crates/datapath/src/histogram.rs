//! A low-overhead delay histogram: 16 sub-buckets per power of two of
//! nanoseconds (at most ~6% relative error), one writer (the worker), any
//! number of readers. The worker records each batch's frames at once, so the
//! cost is two clock reads per batch and a few relaxed stores per port batch
//! (bucket, count, sum, max: no lock, no read-modify-write, no allocation).
//!
//! Every field only grows: a reader (the metrics endpoint) sees cumulative
//! counts, as a Prometheus histogram wants; rates over a window are the
//! scraper's job.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const SUB: u32 = 16;
const OCTAVES: u32 = 42;
const BUCKETS: usize = (OCTAVES * SUB) as usize;

/// Delays in nanoseconds.
pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    max: AtomicU64,
    count: AtomicU64,
    /// Sum of the samples, ns (wraps after 584 years of summed delay).
    sum: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            max: AtomicU64::new(0),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= 4
    let sub = (v >> (e - 4)) & (SUB as u64 - 1);
    (((e - 3) * SUB) as usize + sub as usize).min(BUCKETS - 1)
}

/// The largest value that falls in bucket `i`.
fn upper(i: usize) -> u64 {
    if i < SUB as usize {
        return i as u64;
    }
    let e = (i as u32 / SUB) + 3;
    let sub = i as u64 % SUB as u64;
    ((SUB as u64 + sub + 1) << (e - 4)) - 1
}

impl Histogram {
    /// Records `n` samples of `v` ns (single writer).
    #[inline]
    pub fn record(&self, v: u64, n: u64) {
        let b = &self.buckets[index(v)];
        b.store(b.load(Relaxed) + n, Relaxed);
        self.count.store(self.count.load(Relaxed) + n, Relaxed);
        let sum = self.sum.load(Relaxed).wrapping_add(v.wrapping_mul(n));
        self.sum.store(sum, Relaxed);
        if v > self.max.load(Relaxed) {
            self.max.store(v, Relaxed);
        }
    }

    /// Adds `other`'s samples to this histogram (to sum workers' histograms
    /// for reporting).
    pub fn absorb(&self, other: &Histogram) {
        for (a, b) in self.buckets.iter().zip(other.buckets.iter()) {
            a.fetch_add(b.load(Relaxed), Relaxed);
        }
        self.count.fetch_add(other.count(), Relaxed);
        self.sum.fetch_add(other.sum(), Relaxed);
        self.max.fetch_max(other.max(), Relaxed);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    /// Sum of the samples, ns.
    pub fn sum(&self) -> u64 {
        self.sum.load(Relaxed)
    }

    /// Cumulative counts at the ascending `bounds` (ns): for each bound,
    /// the samples of the buckets that lie wholly at or below it, then the
    /// number of all samples (the sum of the same bucket reads, so the
    /// counts never exceed it even while the worker records). A bound
    /// inside a bucket (buckets are at most 1/16 of their value wide)
    /// leaves that bucket's samples to the next bound: a count is exact
    /// for the values at or below the bucket edge under its bound, which
    /// is within ~6% of it.
    pub fn cumulative(&self, bounds: &[u64]) -> (Vec<u64>, u64) {
        let mut counts = Vec::with_capacity(bounds.len());
        let mut next = bounds.iter().copied().peekable();
        let mut seen = 0u64;
        for (i, b) in self.buckets.iter().enumerate() {
            while let Some(&bound) = next.peek() {
                if upper(i) <= bound {
                    break;
                }
                counts.push(seen);
                next.next();
            }
            seen += b.load(Relaxed);
        }
        counts.extend(next.map(|_| seen));
        (counts, seen)
    }

    /// The largest sample.
    pub fn max(&self) -> u64 {
        self.max.load(Relaxed)
    }

    /// The value at quantile `q` (0..1): an upper bound within ~6%.
    pub fn quantile(&self, q: f64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let want = ((total as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Relaxed);
            if seen >= want {
                return upper(i).min(self.max());
            }
        }
        self.max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_their_values() {
        for v in (0..100_000u64).chain([1 << 20, 123_456_789, u32::MAX as u64]) {
            let i = index(v);
            assert!(upper(i) >= v, "{v} in bucket {i} with upper {}", upper(i));
            assert!(
                upper(i) as f64 <= v as f64 * 1.07 + 1.0,
                "{v}: {}",
                upper(i)
            );
        }
    }

    #[test]
    fn quantiles() {
        let h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000, 1);
        }
        let p50 = h.quantile(0.5);
        assert!((500_000..=535_000).contains(&p50), "{p50}");
        assert!(h.quantile(0.99) >= 990_000);
        assert_eq!(h.max(), 1_000_000);
        assert_eq!(h.quantile(1.0), 1_000_000);
    }

    #[test]
    fn cumulative_counts_and_sum() {
        let h = Histogram::default();
        h.record(10, 2); // exact buckets below 16 ns
        h.record(1_000, 3); // 1000 ns: bucket 992..=1023
        h.record(1_024, 1); // bucket 1024..=1087
        h.record(50_000, 4);
        assert_eq!(h.sum(), 20 + 3_000 + 1_024 + 200_000);
        let (c, total) = h.cumulative(&[10, 999, 1_023, 1_100, 60_000, 1_000_000_000]);
        // 999 lies inside the bucket of 1000: those samples count at the
        // next bound, never below a bound they exceed.
        assert_eq!(c, vec![2, 2, 5, 6, 10, 10]);
        assert_eq!(total, 10);
        assert_eq!(total, h.count());
        let both = Histogram::default();
        both.absorb(&h);
        both.absorb(&h);
        assert_eq!(both.sum(), 2 * h.sum());
        assert_eq!(both.cumulative(&[]), (vec![], 20));
    }
}
