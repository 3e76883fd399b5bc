//! Meter bands as lock-free token buckets, in their GCRA form.
//!
//! Each band keeps one number, the "theoretical arrival time" (TAT): when
//! the bucket would be full again if traffic stopped now; `TAT - now` is
//! what the bucket owes, in nanoseconds of the band's rate. A packet that
//! costs `c` nanoseconds (its bits or 1 packet at the band's rate) fits if
//! the bucket, less what it owes, still holds `c`: `TAT - now <= depth - c`;
//! then `TAT = max(TAT, now) + c`. This is a token bucket of `depth`
//! exactly (a packet passes if the bucket holds its tokens, and takes
//! them), kept in an [`AtomicGcra`] (the switch's one token bucket,
//! [`crate::bucket`]: one `AtomicU64` updated by compare-and-swap), so
//! workers share a band without locks and the rate holds over time
//! whatever the number of workers. Time is passed in; tests drive it with
//! a fake clock.
//!
//! What a band lets through, and why:
//! * Units (OpenFlow 1.3.5, 7.3.4.4 `ofp_meter_flags`): kb/s are 1000 bits
//!   a second of the frame as the pipeline holds it at the meter
//!   instruction (no preamble, no FCS: what flow byte counts count); pktps
//!   counts packets. Exact over time: a packet's charge is rounded to the
//!   nearest nanosecond (at most 0.5 ns a packet: nothing at the rates
//!   whose unit lasts a whole number of ns, as all the switch test tool's
//!   do; under 0.05 % while a packet costs over 1 us of the rate).
//! * Burst: with OFPMF_BURST and a non-zero `burst_size`, the bucket holds
//!   that many kilobits or packets (so `burst_size` packets pass back to
//!   back), as a token bucket does; one that holds about a frame passes
//!   less than the rate unless frames come paced at the rate. Without the
//!   flag the spec leaves the burst to the switch (`burst_size` is "used
//!   only if the flags field includes OFPMF_BURST"); the bucket then holds
//!   [`DEFAULT_BURST_NS`] of the rate, and at least two frames: enough for
//!   a datapath round, for senders that pace in ticks and for slow bands,
//!   small enough that a band measured over seconds passes its rate. (It
//!   was one second of the rate, as Open vSwitch does: over the switch
//!   test tool's 30 s that passed 3.3 % over the rate and remarked 3.3 %
//!   of it too little.) A frame larger than the whole bucket passes a full
//!   bucket, so a small burst never stops a band.
//! * A fresh band starts with a full bucket; METER_MOD MODIFY builds new
//!   state, so it starts full again.
//! * Bands (5.7): the band with the highest rate the traffic exceeds
//!   applies. Bands are tried by falling rate; a packet is charged to each
//!   band it fits, and the first band it does not fit applies (a packet one
//!   band drops or remarks is not charged to the lower ones), so at 2.5 R
//!   into remark-at-R and drop-at-2R, 0.5 R is dropped, R remarked and R
//!   passes.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ofp::msg::meter::{meter_flags, MeterBand};

use crate::bucket::AtomicGcra;

/// Without OFPMF_BURST, a band's bucket holds this long of its rate
/// (50 ms: 6.25 kB at 1 Mb/s, 50 packets at 1000 packets/s), or two
/// frames if that is more.
pub const DEFAULT_BURST_NS: u64 = 50_000_000;

/// What a meter decided for a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Drop,
    /// Raise the drop precedence of the packet's DSCP by this much.
    Remark(u8),
}

/// One band's state and counters.
#[derive(Debug)]
pub struct BandState {
    pub band: MeterBand,
    /// ns per unit (bit or packet), 32.32 fixed point.
    interval_fp: u64,
    /// The bucket's depth, in ns of the band's rate.
    depth_ns: u64,
    /// The depth is the default one: it holds at least two frames.
    two_frames: bool,
    bucket: AtomicGcra,
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
}

/// A meter's run-time state.
#[derive(Debug)]
pub struct MeterState {
    pub meter_id: u32,
    pub flags: u16,
    /// Bands by falling rate.
    pub bands: Vec<BandState>,
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
}

impl MeterState {
    /// State for a meter with `flags` and `bands` (rates in kb/s or packets/s).
    pub fn new(meter_id: u32, flags: u16, bands: &[MeterBand]) -> MeterState {
        let pkt = flags & meter_flags::PKTPS != 0;
        let mut v: Vec<BandState> = bands
            .iter()
            .map(|b| {
                let rate = b.rate().max(1) as u128;
                // Units per second: packets, or bits (kb/s * 1000).
                let per_s = if pkt { rate } else { rate * 1000 };
                let interval_fp = ((1_000_000_000u128 << 32) / per_s) as u64;
                let given = flags & meter_flags::BURST != 0 && b.burst_size() > 0;
                let depth_ns = if given {
                    let units = if pkt {
                        b.burst_size() as u128
                    } else {
                        b.burst_size() as u128 * 1000
                    };
                    ns(units * interval_fp as u128)
                } else {
                    DEFAULT_BURST_NS
                };
                BandState {
                    band: b.clone(),
                    interval_fp,
                    depth_ns,
                    two_frames: !given,
                    bucket: AtomicGcra::new(),
                    packets: AtomicU64::new(0),
                    bytes: AtomicU64::new(0),
                }
            })
            .collect();
        v.sort_by_key(|b| std::cmp::Reverse(b.band.rate()));
        MeterState {
            meter_id,
            flags,
            bands: v,
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Meters a packet of `bytes` at `now_ns`: the band with the highest rate
    /// the traffic exceeds applies.
    pub fn apply(&self, bytes: usize, now_ns: u64) -> Verdict {
        self.packets.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
        let units = if self.flags & meter_flags::PKTPS != 0 {
            1u128
        } else {
            bytes as u128 * 8
        };
        for b in &self.bands {
            let cost = ns(units * b.interval_fp as u128);
            if !b.take(cost, now_ns) {
                b.packets.fetch_add(1, Relaxed);
                b.bytes.fetch_add(bytes as u64, Relaxed);
                return match b.band {
                    MeterBand::DscpRemark { prec_level, .. } => Verdict::Remark(prec_level),
                    _ => Verdict::Drop,
                };
            }
        }
        Verdict::Pass
    }
}

/// 32.32 fixed-point nanoseconds to the nearest whole nanosecond.
fn ns(fp: u128) -> u64 {
    u64::try_from((fp + (1 << 31)) >> 32).unwrap_or(u64::MAX)
}

impl BandState {
    /// Takes `cost_ns` from the bucket if it holds that much (or is full).
    fn take(&self, cost_ns: u64, now_ns: u64) -> bool {
        // What the bucket may owe before this packet and still hold its
        // cost; a packet costing more than the whole bucket needs it full.
        let mut slack = self.depth_ns.saturating_sub(cost_ns);
        if self.two_frames {
            slack = slack.max(cost_ns);
        }
        self.bucket.take(now_ns, cost_ns, slack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    /// What a meter did, in packets and bytes.
    #[derive(Debug, Default, Clone, Copy)]
    struct Tally {
        pass: u64,
        pass_bytes: u64,
        remark: u64,
        remark_bytes: u64,
        drop: u64,
        drop_bytes: u64,
    }

    impl Tally {
        fn add(&mut self, v: Verdict, bytes: usize) {
            let b = bytes as u64;
            match v {
                Verdict::Pass => {
                    (self.pass, self.pass_bytes) = (self.pass + 1, self.pass_bytes + b)
                }
                Verdict::Remark(_) => {
                    (self.remark, self.remark_bytes) = (self.remark + 1, self.remark_bytes + b)
                }
                Verdict::Drop => {
                    (self.drop, self.drop_bytes) = (self.drop + 1, self.drop_bytes + b)
                }
            }
        }
        fn packets(&self) -> u64 {
            self.pass + self.remark + self.drop
        }
        fn bytes(&self) -> u64 {
            self.pass_bytes + self.remark_bytes + self.drop_bytes
        }
    }

    /// Arrival times of the os-ken switch test tool's traffic: every
    /// `tick_ns` (10 ms nominal) it sends, back to back, the whole packets
    /// its running total of `pktps / 100` a tick has reached
    /// (tester.py `_send_packet_thread`).
    fn tool_traffic(pktps: u64, tick_ns: u64, for_ns: u64) -> Vec<u64> {
        let mut v = Vec::new();
        let mut k = 0;
        while k * tick_ns < for_ns {
            let n = (k + 1) * pktps / 100 - k * pktps / 100;
            v.extend(std::iter::repeat_n(k * tick_ns, n as usize));
            k += 1;
        }
        v
    }

    /// Evenly spaced arrivals at `pps` for `for_ns`.
    fn steady(pps: u64, for_ns: u64) -> Vec<u64> {
        let n = pps * for_ns / S;
        (0..n).map(|i| i * S / pps).collect()
    }

    fn meter(flags: u16, bands: &[MeterBand]) -> MeterState {
        MeterState::new(1, flags, bands)
    }

    fn remark(rate: u32) -> MeterBand {
        MeterBand::DscpRemark {
            rate,
            burst_size: 0,
            prec_level: 1,
        }
    }

    fn drop_band(rate: u32) -> MeterBand {
        MeterBand::Drop {
            rate,
            burst_size: 0,
        }
    }

    fn run(m: &MeterState, bytes: usize, times: &[u64]) -> Tally {
        let mut t = Tally::default();
        for &now in times {
            t.add(m.apply(bytes, now), bytes);
        }
        t
    }

    /// `got` is within `pct` percent of `want`.
    fn near(got: f64, want: f64, pct: f64) -> bool {
        (got - want).abs() <= want * pct / 100.0
    }

    /// The tool's kbps cases (of13/meter/0{1,2}_*_KBPS_*): 1500-byte
    /// frames at 175, 1750, 17 500 packets/s (2.1, 21, 210 Mb/s) into a
    /// band of 1, 10, 100 Mb/s, no OFPMF_BURST, for the tool's 30 s. A
    /// band passes its rate (1000 bits per kb, the frame without FCS) and
    /// no more than 1 % over it; everything above is remarked.
    #[test]
    fn kbps_bands_pass_their_rate_and_remark_exactly_the_rest() {
        for (kbps, pktps) in [(1_000u32, 175u64), (10_000, 1_750), (100_000, 17_500)] {
            let m = meter(meter_flags::KBPS, &[remark(kbps)]);
            let t = run(&m, 1500, &tool_traffic(pktps, 10 * MS, 30 * S));
            let rate_bytes = kbps as f64 * 1000.0 / 8.0 * 30.0;
            assert!(
                near(t.pass_bytes as f64, rate_bytes, 1.0),
                "{kbps} kb/s: {t:?}"
            );
            assert_eq!(t.remark_bytes, t.bytes() - t.pass_bytes);
            assert_eq!(t.drop, 0);
            // The tool: each DSCP at the band's rate in its kilobits
            // (1024 bits), within 10 %.
            let tool = kbps as f64 * 1024.0 / 8.0 * 30.0;
            assert!(near(t.pass_bytes as f64, tool, 10.0), "{kbps}: {t:?}");
            assert!(near(t.remark_bytes as f64, tool, 10.0), "{kbps}: {t:?}");
        }
    }

    /// The tool's pktps cases: twice the band's rate (100, 1000, 10 000
    /// packets/s); half is remarked, to within 1 %.
    #[test]
    fn pktps_bands_pass_their_rate_and_remark_exactly_the_rest() {
        for rate in [100u32, 1_000, 10_000] {
            let m = meter(meter_flags::PKTPS, &[remark(rate)]);
            let t = run(&m, 1500, &tool_traffic(2 * rate as u64, 10 * MS, 30 * S));
            let want = rate as f64 * 30.0;
            assert!(near(t.pass as f64, want, 1.0), "{rate}: {t:?}");
            assert!(near(t.remark as f64, want, 1.0), "{rate}: {t:?}");
            assert_eq!(t.pass + t.remark, t.packets());
        }
    }

    /// DROP bands drop exactly what remark bands remark.
    #[test]
    fn drop_bands_drop_exactly_the_excess() {
        for (flags, rate, pktps) in [
            (meter_flags::KBPS, 1_000u32, 175u64),
            (meter_flags::KBPS, 10_000, 1_750),
            (meter_flags::PKTPS, 100, 200),
            (meter_flags::PKTPS, 10_000, 20_000),
        ] {
            let times = tool_traffic(pktps, 10 * MS, 30 * S);
            let d = run(&meter(flags, &[drop_band(rate)]), 1500, &times);
            let r = run(&meter(flags, &[remark(rate)]), 1500, &times);
            assert_eq!((d.pass, d.drop), (r.pass, r.remark), "{rate}");
            let want = if flags & meter_flags::PKTPS != 0 {
                rate as f64 * 30.0
            } else {
                rate as f64 * 1000.0 / 8.0 / 1500.0 * 30.0
            };
            assert!(near(d.pass as f64, want, 1.0), "{rate}: {d:?}");
        }
    }

    /// Below the rate nothing is remarked, though the tool's traffic comes
    /// in 10 ms clumps and a datapath sees a round's frames at one instant.
    #[test]
    fn traffic_under_the_rate_is_never_remarked() {
        // 90 % of the rate, in the tool's clumps, then in 5 ms rounds.
        for (flags, rate, pktps) in [
            (meter_flags::KBPS, 1_000u32, 75u64),
            (meter_flags::KBPS, 100_000, 7_500),
            (meter_flags::PKTPS, 100, 90),
            (meter_flags::PKTPS, 10_000, 9_000),
        ] {
            let m = meter(flags, &[remark(rate)]);
            let t = run(&m, 1500, &tool_traffic(pktps, 10 * MS, 10 * S));
            assert_eq!(t.remark, 0, "{rate}: {t:?}");
            let rounds: Vec<u64> = steady(pktps, 10 * S)
                .iter()
                .map(|t| t / (5 * MS) * (5 * MS))
                .collect();
            let m = meter(flags, &[remark(rate)]);
            assert_eq!(run(&m, 1500, &rounds).remark, 0, "{rate}");
        }
    }

    /// With OFPMF_BURST the bucket holds exactly `burst_size`: that many
    /// packets (pktps) pass back to back, and over time the rate plus the
    /// burst passes.
    #[test]
    fn burst_size_is_the_bucket_depth() {
        for burst in [1u32, 5, 50] {
            let m = meter(
                meter_flags::PKTPS | meter_flags::BURST,
                &[MeterBand::Drop {
                    rate: 100,
                    burst_size: burst,
                }],
            );
            let back_to_back = run(&m, 64, &[0; 200]);
            assert_eq!(back_to_back.pass, burst as u64);
            // A second of silence fills it again, and no more.
            let again = run(&m, 64, &[3 * S; 200]);
            assert_eq!(again.pass, burst as u64);
        }
        // 1 Mb/s with a 100 kb bucket, offered 2 Mb/s for 10 s: 10 Mb plus
        // the bucket pass, to within one frame.
        let m = meter(
            meter_flags::KBPS | meter_flags::BURST,
            &[MeterBand::DscpRemark {
                rate: 1_000,
                burst_size: 100,
                prec_level: 1,
            }],
        );
        let t = run(&m, 1250, &steady(200, 10 * S));
        let want = 10_000_000 + 100_000;
        let got = t.pass_bytes * 8;
        assert!(got.abs_diff(want) <= 1250 * 8, "{got} bits for {want}");
    }

    /// A frame larger than the whole bucket still passes a full bucket, so
    /// a small burst_size cannot stop a band from passing anything.
    #[test]
    fn a_frame_larger_than_the_bucket_passes_a_full_bucket() {
        let m = meter(
            meter_flags::KBPS | meter_flags::BURST,
            &[MeterBand::Drop {
                rate: 1_000,
                burst_size: 1,
            }],
        );
        // 1500-byte frames (12 kb) at 2 Mb/s for 12 s: 1 Mb/s passes.
        let t = run(&m, 1500, &steady(2_000_000 / 12_000, 12 * S));
        assert!(near(t.pass_bytes as f64 * 8.0, 12e6, 1.0), "{t:?}");
    }

    /// The band with the highest rate the traffic exceeds applies: at 2.5 R
    /// into remark at R and drop at 2 R, 0.5 R is dropped, R remarked and R
    /// passes (spec 1.3.5, 5.7 and 7.3.4.4).
    #[test]
    fn highest_exceeded_band_applies() {
        let m = meter(meter_flags::PKTPS, &[remark(1_000), drop_band(2_000)]);
        assert_eq!(m.bands[0].band.rate(), 2_000);
        let t = run(&m, 64, &steady(2_500, 20 * S));
        assert!(near(t.drop as f64, 10_000.0, 1.0), "{t:?}");
        assert!(near(t.remark as f64, 20_000.0, 1.0), "{t:?}");
        assert!(near(t.pass as f64, 20_000.0, 1.0), "{t:?}");
        // Between the two rates, nothing is dropped.
        let m = meter(meter_flags::PKTPS, &[remark(1_000), drop_band(2_000)]);
        let t = run(&m, 64, &steady(1_500, 20 * S));
        assert_eq!(t.drop, 0);
        assert!(near(t.remark as f64, 10_000.0, 1.0), "{t:?}");
    }

    /// Workers share one bucket: two workers taking turns, each with the
    /// clock it read at the start of its own 1 ms round, pass the band's
    /// rate between them, not twice it.
    #[test]
    fn workers_share_the_rate() {
        let m = meter(meter_flags::KBPS, &[remark(10_000)]);
        let mut t = Tally::default();
        for (i, now) in tool_traffic(1_750, 10 * MS, 30 * S).into_iter().enumerate() {
            let phase = (i as u64 % 2) * MS / 2;
            let seen = (now + phase) / MS * MS;
            t.add(m.apply(1500, seen.saturating_sub(phase)), 1500);
        }
        assert!(near(t.pass_bytes as f64, 10e6 / 8.0 * 30.0, 1.0), "{t:?}");
    }

    proptest::proptest! {
        /// Any rate, frame size, burst and overload: over `T` a band
        /// passes its rate for `T` plus its bucket, to within two packets
        /// (the token bucket's bound) and the rounding of charges to ns.
        #[test]
        fn a_band_passes_its_rate_plus_its_bucket(
            pkt in proptest::bool::ANY,
            rate in 1u32..200_000,
            burst in proptest::option::of(1u32..2_000),
            size in 64usize..9_000,
            over in 1.1f64..4.0,
        ) {
            let flags = if pkt { meter_flags::PKTPS } else { meter_flags::KBPS }
                | if burst.is_some() { meter_flags::BURST } else { 0 };
            let m = meter(flags, &[MeterBand::Drop { rate, burst_size: burst.unwrap_or(0) }]);
            // ns of the band's rate one frame costs, and what the bucket
            // may owe before a frame and still take it.
            let unit_ns = if pkt { 1e9 / rate as f64 } else { 1e6 / rate as f64 };
            let cost = if pkt { unit_ns } else { unit_ns * size as f64 * 8.0 };
            let slack = match burst {
                Some(b) if pkt => (b as f64 * unit_ns - cost).max(0.0),
                Some(b) => (b as f64 * 1000.0 * unit_ns - cost).max(0.0),
                None => (DEFAULT_BURST_NS as f64 - cost).max(cost),
            };
            let pps = over * 1e9 / cost;
            let gap = 1e9 / pps;
            let for_ns = (10e9f64).min(100_000.0 / pps * 1e9).max(1e6) as u64;
            let n = (pps * for_ns as f64 / 1e9) as u64;
            let times: Vec<u64> = (0..n).map(|i| (i as f64 * gap) as u64).collect();
            let t = run(&m, size, &times);
            let last = times.last().copied().unwrap_or(0) as f64;
            // The last frame that passed found the bucket owing at most
            // `slack` (charges and depth are whole ns, within 0.5 ns of
            // these; the slack, a difference of two, within 1 ns).
            let most = (last + slack + 1.0) / (cost - 0.5) + 1.0;
            proptest::prop_assert!(t.pass as f64 <= most, "{t:?} most {most}");
            // A bucket that can wait out the gap between frames loses no
            // time: from the last refusal on, it owes more than `slack`.
            if slack >= gap + 2.0 {
                let least = (last + slack - 1.0) / (cost + 0.5);
                proptest::prop_assert!(t.pass as f64 >= least.min(n as f64), "{t:?} least {least}");
            }
            proptest::prop_assert_eq!(t.pass + t.drop, n);
        }
    }
}
