//! The one token bucket of the switch, in its GCRA form (the generic cell
//! rate algorithm's "virtual scheduling"), for meter bands
//! ([`crate::meter`]), the datapath's egress queues and the agent's
//! PACKET_IN limit.
//!
//! A bucket keeps one number, the "theoretical arrival time" (TAT): when
//! it would be full again if traffic stopped now; `TAT - now` is what it
//! owes, in nanoseconds of its rate. Something that costs `cost`
//! nanoseconds of the rate (its bits, or one packet, at the rate) arriving
//! at `now` conforms if the bucket owes at most `tolerance`:
//!
//! ```text
//! start = max(TAT, now)
//! conform  <=>  start - now <= tolerance
//! if conform: TAT = start + cost
//! ```
//!
//! That is a token bucket holding `tolerance + cost` nanoseconds of the
//! rate, or `tolerance / interval + 1` things that each cost `interval`,
//! back to back. This arithmetic lives here only ([`Gcra::take`] and
//! [`AtomicGcra::take`] both use it); each user decides its own costs and
//! tolerances (the rate's units, rounding, the burst).
//!
//! Contract:
//! * A fresh bucket ([`Default`]) is full: its TAT is 0, at or before any
//!   time on the clocks it is used with.
//! * Time is passed in, in nanoseconds; tests drive it with a fake clock.
//!   It may go backwards (workers read the clock at different instants):
//!   each take is judged and charged as of the time it is given, so an
//!   earlier reading finds the bucket owing more, by the difference.
//! * A refused take changes nothing. The cost and tolerance may differ
//!   from one take to the next.
//! * No overflow: `start - now` cannot underflow (`start >= now`) and the
//!   TAT saturates at `u64::MAX` instead of wrapping (a bucket that owes
//!   that much refuses everything but an infinite tolerance). Users keep
//!   times and costs far below that, so it never saturates for them.
//! * [`AtomicGcra`] is shared by threads without locks: one `AtomicU64`
//!   updated by a compare-and-swap loop, so each take sees the bucket as
//!   the previous one left it and the rate holds whatever the number of
//!   threads. [`Gcra`] is the same bucket for a single owner.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The TAT after a take of `cost_ns` at `now_ns` from a bucket whose TAT
/// is `tat`, if it conforms (owes at most `tolerance_ns`); None if not.
#[inline]
fn after_take(tat: u64, now_ns: u64, cost_ns: u64, tolerance_ns: u64) -> Option<u64> {
    let start = tat.max(now_ns);
    if start - now_ns > tolerance_ns {
        return None;
    }
    Some(start.saturating_add(cost_ns))
}

/// A token bucket with one owner (see the [module](self) for the rules).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Gcra {
    /// Theoretical arrival time, ns.
    tat: u64,
}

impl Gcra {
    /// A full bucket.
    pub const fn new() -> Gcra {
        Gcra { tat: 0 }
    }

    /// Takes `cost_ns` at `now_ns` if the bucket owes at most
    /// `tolerance_ns`; whether it did.
    #[inline]
    pub fn take(&mut self, now_ns: u64, cost_ns: u64, tolerance_ns: u64) -> bool {
        match after_take(self.tat, now_ns, cost_ns, tolerance_ns) {
            Some(tat) => {
                self.tat = tat;
                true
            }
            None => false,
        }
    }
}

/// A token bucket shared by threads (see the [module](self) for the rules).
#[derive(Debug, Default)]
pub struct AtomicGcra {
    /// Theoretical arrival time, ns.
    tat: AtomicU64,
}

impl AtomicGcra {
    /// A full bucket.
    pub const fn new() -> AtomicGcra {
        AtomicGcra {
            tat: AtomicU64::new(0),
        }
    }

    /// Takes `cost_ns` at `now_ns` if the bucket owes at most
    /// `tolerance_ns`; whether it did. Lock-free: if another thread took
    /// from the bucket meanwhile, the decision is made again on what it
    /// left.
    #[inline]
    pub fn take(&self, now_ns: u64, cost_ns: u64, tolerance_ns: u64) -> bool {
        let mut tat = self.tat.load(Relaxed);
        loop {
            let Some(next) = after_take(tat, now_ns, cost_ns, tolerance_ns) else {
                return false;
            };
            match self.tat.compare_exchange_weak(tat, next, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(t) => tat = t,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    /// The same bucket written the other way the GCRA is defined, as a
    /// "continuous-state leaky bucket": its content in ns and the time it
    /// was last filled, in i128 so nothing can overflow.
    #[derive(Default)]
    struct LeakyBucket {
        content: i128,
        last: i128,
    }

    impl LeakyBucket {
        fn take(&mut self, now: u64, cost: u64, tolerance: u64) -> bool {
            let now = now as i128;
            let left = (self.content - (now - self.last)).max(0);
            if left > tolerance as i128 {
                return false;
            }
            self.content = left + cost as i128;
            self.last = now;
            true
        }
    }

    /// Both buckets, taking the same things.
    #[derive(Default)]
    struct Both {
        one: Gcra,
        shared: AtomicGcra,
    }

    impl Both {
        fn take(&mut self, now: u64, cost: u64, tolerance: u64) -> bool {
            let a = self.one.take(now, cost, tolerance);
            let b = self.shared.take(now, cost, tolerance);
            assert_eq!(a, b, "at {now}: cost {cost}, tolerance {tolerance}");
            assert_eq!(self.one.tat, self.shared.tat.load(Relaxed));
            a
        }
    }

    /// A bucket of `burst` things beyond the first, at `interval` ns each,
    /// lets `burst + 1` through back to back, then one per interval.
    #[test]
    fn holds_tolerance_over_interval_plus_one() {
        for (interval, burst) in [(1u64, 0u64), (10, 0), (10, 5), (1_000, 10_000), (S, 3)] {
            let mut b = Both::default();
            let now = 5 * S;
            let passed = (0..burst + 10)
                .filter(|_| b.take(now, interval, interval * burst))
                .count() as u64;
            assert_eq!(passed, burst + 1, "{interval} {burst}");
            // One interval later, exactly one more.
            let later = (0..10)
                .filter(|_| b.take(now + interval, interval, interval * burst))
                .count();
            assert_eq!(later, 1, "{interval} {burst}");
        }
    }

    /// A zero tolerance is a strict rate: one per interval, none early.
    #[test]
    fn zero_tolerance_spaces_by_the_interval() {
        let mut b = Both::default();
        assert!(b.take(S, MS, 0));
        assert!(!b.take(S + MS - 1, MS, 0));
        assert!(b.take(S + MS, MS, 0));
        assert!(!b.take(S + MS, MS, 0));
        // Idle time fills the bucket but no further than full.
        assert!(b.take(10 * S, MS, 0));
        assert!(!b.take(10 * S, MS, 0));
    }

    /// A refused take leaves the bucket as it was.
    #[test]
    fn a_refusal_changes_nothing() {
        let mut b = Both::default();
        assert!(b.take(0, 10 * MS, 0));
        let before = b.one;
        assert!(!b.take(MS, MS, 0));
        assert_eq!(b.one, before);
        assert_eq!(b.shared.tat.load(Relaxed), before.tat);
    }

    /// Time read late by one thread and early by another: the earlier
    /// reading finds the bucket owing more, and the charges add up.
    #[test]
    fn time_going_backwards_owes_more() {
        let mut b = Both::default();
        assert!(b.take(10 * MS, MS, 2 * MS)); // owed nothing; TAT 11 ms
        assert!(b.take(9 * MS, MS, 2 * MS)); // owed 2 ms at 9 ms; TAT 12 ms
        assert!(!b.take(9 * MS, MS, 2 * MS)); // owes 3 ms at 9 ms
        assert!(b.take(10 * MS, MS, 2 * MS)); // owed 2 ms at 10 ms; TAT 13 ms
        assert!(!b.take(12 * MS, MS, 0)); // owes 1 ms at 12 ms
        assert!(b.take(13 * MS, MS, 0)); // owes nothing at 13 ms
    }

    /// The TAT saturates instead of wrapping: a bucket owing everything
    /// refuses all but an infinite tolerance, and a cost of everything
    /// can still be taken from a full bucket.
    #[test]
    fn saturates_instead_of_wrapping() {
        let mut b = Both::default();
        assert!(b.take(S, u64::MAX, 0));
        assert_eq!(b.one.tat, u64::MAX);
        assert!(!b.take(2 * S, 1, u64::MAX - 2 * S - 1));
        assert!(b.take(2 * S, 1, u64::MAX - 2 * S));
        assert!(b.take(u64::MAX, u64::MAX, 0));
        assert!(b.take(0, 1, u64::MAX));
        assert_eq!(b.one.tat, u64::MAX);
    }

    /// Over a long overload a bucket passes its rate plus its depth.
    #[test]
    fn passes_the_rate_over_time() {
        // 1000 a second with a burst of 50, offered 3000 a second for 10 s.
        let mut b = Both::default();
        let interval = S / 1000;
        let passed = (0..30_000u64)
            .filter(|i| b.take(i * S / 3000, interval, 50 * interval))
            .count() as u64;
        // The last arrival is just under 10 s: 9 999 intervals' worth, the
        // 51 of the full bucket, give or take the last one.
        assert!((10_049..=10_051).contains(&passed), "{passed}");
    }

    /// Threads hammering one bucket at one instant pass exactly what it
    /// holds between them, whatever the interleaving.
    #[test]
    fn threads_share_one_bucket() {
        let bucket = Arc::new(AtomicGcra::new());
        let passed: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let bucket = bucket.clone();
                    s.spawn(move || (0..5_000).filter(|_| bucket.take(S, 1_000, MS)).count())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(passed, 1_001);
        assert_eq!(bucket.tat.load(Relaxed), S + MS + 1_000);
    }

    proptest::proptest! {
        /// Any rate, burst, costs, tolerances and arrival times (jittering
        /// backwards as well as forwards): both buckets decide as the
        /// leaky-bucket reference does, step by step, and their TAT is the
        /// reference's last fill plus its content.
        #[test]
        fn decides_as_the_leaky_bucket_reference(
            rate in 1u64..2_000_000_000,
            burst in 0u64..2_000,
            steps in proptest::collection::vec(
                (0u64..4 * MS, 0u64..MS, 1u64..4, 0u64..3), 1..300),
            start in 0u64..1_000 * S,
        ) {
            let interval = S / rate;
            let mut b = Both::default();
            let mut reference = LeakyBucket::default();
            let mut clock = start;
            for (gap, back, size, slack) in steps {
                clock += gap;
                // Another worker's reading, up to 1 ms behind.
                let now = clock.saturating_sub(back);
                let cost = interval * size;
                let tolerance = match slack {
                    0 => 0,
                    1 => interval * burst,
                    _ => (interval * burst).saturating_sub(cost).max(cost),
                };
                let want = reference.take(now, cost, tolerance);
                proptest::prop_assert_eq!(b.take(now, cost, tolerance), want);
                proptest::prop_assert_eq!(
                    b.one.tat as i128,
                    reference.last + reference.content
                );
            }
        }
    }
}
