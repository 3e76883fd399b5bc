//! Meter bands as lock-free token buckets, in their GCRA form.
//!
//! Each band keeps one number, the "theoretical arrival time" (TAT): when
//! the bucket would be full again if traffic stopped now. A packet that
//! costs `c` nanoseconds of the band's rate conforms if `TAT - now` stays
//! within the burst tolerance; if it does, `TAT = max(TAT, now) + c`. This is
//! the token bucket exactly (rate = 1/c per unit, depth = tolerance), kept
//! in one `AtomicU64` updated by compare-and-swap, so workers share a band
//! without locks and the rate holds over time whatever the number of
//! workers. Time is passed in; tests drive it with a fake clock.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ofp::msg::meter::{meter_flags, MeterBand};

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
    tolerance_ns: u64,
    tat: AtomicU64,
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
                // Burst: as given with OFPMF_BURST, else one second of the rate
                // (what Open vSwitch does when no burst is given).
                let burst_units = if flags & meter_flags::BURST != 0 && b.burst_size() > 0 {
                    if pkt {
                        b.burst_size() as u128
                    } else {
                        b.burst_size() as u128 * 1000
                    }
                } else {
                    per_s
                };
                let tolerance_ns = ((burst_units * interval_fp as u128) >> 32) as u64;
                BandState {
                    band: b.clone(),
                    interval_fp,
                    tolerance_ns,
                    tat: AtomicU64::new(0),
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
            let cost = ((units * b.interval_fp as u128) >> 32) as u64;
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

impl BandState {
    /// GCRA: charges `cost_ns` if the packet conforms.
    fn take(&self, cost_ns: u64, now_ns: u64) -> bool {
        let mut tat = self.tat.load(Relaxed);
        loop {
            let start = tat.max(now_ns);
            if start - now_ns > self.tolerance_ns {
                return false;
            }
            match self
                .tat
                .compare_exchange_weak(tat, start + cost_ns, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(t) => tat = t,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn run(m: &MeterState, bytes: usize, every_ns: u64, for_ns: u64) -> (u64, u64) {
        let (mut pass, mut drop) = (0, 0);
        let mut t = 0;
        while t < for_ns {
            match m.apply(bytes, t) {
                Verdict::Pass => pass += 1,
                _ => drop += 1,
            }
            t += every_ns;
        }
        (pass, drop)
    }

    #[test]
    fn kbps_rate_holds_over_time() {
        // 1000 kb/s, burst 10 kb; offered 125-byte (1 kb) packets at 4000/s for 10 s.
        let m = MeterState::new(
            1,
            meter_flags::KBPS | meter_flags::BURST,
            &[MeterBand::Drop {
                rate: 1000,
                burst_size: 10,
            }],
        );
        let (pass, drop) = run(&m, 125, 250_000, 10_000 * MS);
        // 1000 packets/s for 10 s, plus the burst (10 packets) at the start.
        assert!((10_000..=10_011).contains(&pass), "passed {pass}");
        assert_eq!(pass + drop, 40_000);
        assert_eq!(m.bands[0].packets.load(Relaxed), drop);
    }

    #[test]
    fn pktps_with_burst_and_idle_refill() {
        let m = MeterState::new(
            1,
            meter_flags::PKTPS | meter_flags::BURST,
            &[MeterBand::Drop {
                rate: 100,
                burst_size: 5,
            }],
        );
        // A burst of 20 back to back: 5 + 1 (the first is free of debt) pass.
        let burst: u64 = (0..20).filter(|_| m.apply(64, 0) == Verdict::Pass).count() as u64;
        assert!((5..=6).contains(&burst), "burst passed {burst}");
        // After a second of silence, the bucket is full again.
        let again: u64 = (0..20)
            .filter(|_| m.apply(64, 2_000 * MS) == Verdict::Pass)
            .count() as u64;
        assert_eq!(again, burst);
    }

    #[test]
    fn highest_exceeded_band_applies() {
        let m = MeterState::new(
            1,
            meter_flags::PKTPS | meter_flags::BURST,
            &[
                MeterBand::Drop {
                    rate: 200,
                    burst_size: 1,
                },
                MeterBand::DscpRemark {
                    rate: 100,
                    burst_size: 1,
                    prec_level: 1,
                },
            ],
        );
        // 150 packets/s: above the remark band's rate, below the drop band's.
        let mut remark = 0;
        let mut dropped = 0;
        for i in 0..1500u64 {
            match m.apply(64, i * 1_000_000_000 / 150) {
                Verdict::Remark(1) => remark += 1,
                Verdict::Drop => dropped += 1,
                _ => {}
            }
        }
        assert_eq!(dropped, 0);
        assert!((400..=600).contains(&remark), "remarked {remark}");
    }
}
