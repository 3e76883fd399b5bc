//! The lab's loads: the rule sets every switch gets (ovs-ofctl syntax, so
//! the same file goes to sluice and to Open vSwitch through the same
//! client), and captures of many distinct flows for the "active flows"
//! scaling scenario (replayed into the switch with tcpreplay).
//!
//! The rule sets are those `pipeline-bench` names, at the size of a real
//! table, and built so that the lab's own traffic (ping and iperf3 between
//! 10.213.77.1 on port 1 and 10.213.77.2 on port 2) misses every rule but
//! the two that forward it (`in_port=1 -> 2`, `in_port=2 -> 1`, priority
//! 10): what the lab measures is forwarding with a table of that size
//! installed, not a drop rule. The 5-tuple rules are those of
//! `sluice-bench flows` (`tcp,nw_src=10.A.B.C,nw_dst=192.168.0.1,tp_dst=80`,
//! output to port 2), which the captures of [`write_traffic`] hit (the 1m
//! set holds 999 998 of them; flows 999 998 and 999 999 fall to the
//! `in_port=1` rule, which outputs to port 2 as well).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use pcap_file::pcap::{PcapPacket, PcapWriter};

/// The rule sets: name, ports, rules.
pub const SETS: [(&str, u32, u64); 4] = [
    ("4p20r", 4, 20),
    ("32p200r", 32, 200),
    ("100k1k", 2, 101_000),
    ("1m", 2, 1_000_000),
];

/// The 5-tuple rule of flow `i` (as `sluice-bench flows` writes it).
pub fn five_tuple_rule(i: u64) -> String {
    format!(
        "table=0,priority=100,tcp,nw_src=10.{}.{}.{},nw_dst=192.168.0.1,tp_dst=80,actions=output:2",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255
    )
}

/// Writes rule set `name` to `path`; its number of ports is in [`SETS`].
pub fn write_rules(path: &Path, name: &str) -> Result<(), String> {
    let &(_, ports, total) = SETS
        .iter()
        .find(|s| s.0 == name)
        .ok_or_else(|| format!("--set {name}: one of 4p20r, 32p200r, 100k1k, 1m"))?;
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let f = File::create(path).map_err(err)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let others = total - 2;
    match name {
        "4p20r" | "32p200r" => {
            for i in 0..others {
                writeln!(w, "{}", mixed_rule(i, ports as u64)).map_err(err)?;
            }
        }
        "100k1k" => {
            for i in 0..100_000 {
                writeln!(w, "{}", five_tuple_rule(i)).map_err(err)?;
            }
            for j in 0..others - 100_000 {
                writeln!(w, "{}", prefix_rule(j)).map_err(err)?;
            }
        }
        _ => {
            for i in 0..others {
                writeln!(w, "{}", five_tuple_rule(i)).map_err(err)?;
            }
        }
    }
    writeln!(w, "table=0,priority=10,in_port=1,actions=output:2").map_err(err)?;
    writeln!(w, "table=0,priority=10,in_port=2,actions=output:1").map_err(err)?;
    w.flush().map_err(err)
}

/// One of four kinds of rule over the ports, none of which the lab's
/// traffic hits: a TCP destination port below the ephemeral range, a /24
/// in 172.16/12, a locally administered MAC, a UDP source port below the
/// ephemeral range. Half drop, half output to one of the ports.
fn mixed_rule(i: u64, ports: u64) -> String {
    let p = i % ports + 1;
    let action = if i.is_multiple_of(2) {
        "drop".to_string()
    } else {
        format!("output:{}", (i + 1) % ports + 1)
    };
    let prio = 300 + i;
    let m = match i % 4 {
        0 => format!("in_port={p},tcp,tp_dst={}", 10_000 + i),
        1 => format!("ip,nw_dst=172.{}.{}.0/24", 16 + i % 16, i % 256),
        2 => format!(
            "in_port={p},dl_dst=02:ff:00:00:{:02x}:{:02x}",
            i >> 8,
            i & 255
        ),
        _ => format!("udp,tp_src={}", 20_000 + i),
    };
    format!("table=0,priority={prio},{m},actions={action}")
}

/// A prefix rule with a length from 8 to 24 (so 17 different masks: the
/// classifier's worst shape), dropping; its first octet (30 + j / 17)
/// makes every rule distinct, and none covers the lab's 10.213.77.0/24 or
/// 192.168.0.1 (for j below 17 * 160).
fn prefix_rule(j: u64) -> String {
    let len = 8 + (j % 17) as u32;
    let v = ((30 + (j / 17) as u32) << 24) & (!0u32 << (32 - len));
    format!(
        "table=0,priority={},ip,nw_dst={}.{}.{}.{}/{len},actions=drop",
        10 + len,
        v >> 24,
        (v >> 16) & 255,
        (v >> 8) & 255,
        v & 255
    )
}

/// How the frames of a capture spread over its flows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// Every flow equally likely.
    Uniform,
    /// Flow k (from 0) with probability proportional to 1/(k+1).
    Zipf,
}

impl std::str::FromStr for Dist {
    type Err = String;
    fn from_str(s: &str) -> Result<Dist, String> {
        match s {
            "uniform" => Ok(Dist::Uniform),
            "zipf" => Ok(Dist::Zipf),
            _ => Err(format!("--dist {s}: uniform or zipf")),
        }
    }
}

/// xorshift64*: enough randomness for a traffic mix, and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The flow numbers of `frames` frames over `flows` flows. Uniform draws
/// visit the flows in a random order and go round again, so every flow is
/// seen when there are at least as many frames as flows; Zipf draws invert
/// the cumulative distribution by binary search.
pub fn flow_sequence(flows: u64, frames: u64, dist: Dist) -> Vec<u64> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    match dist {
        Dist::Uniform => {
            let mut order: Vec<u64> = (0..flows).collect();
            let mut out = Vec::with_capacity(frames as usize);
            while (out.len() as u64) < frames {
                for i in (1..order.len()).rev() {
                    order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
                }
                let take = (frames - out.len() as u64).min(flows) as usize;
                out.extend_from_slice(&order[..take]);
            }
            out
        }
        Dist::Zipf => {
            let mut cdf = Vec::with_capacity(flows as usize);
            let mut sum = 0.0;
            for k in 0..flows {
                sum += 1.0 / (k + 1) as f64;
                cdf.push(sum);
            }
            (0..frames)
                .map(|_| {
                    let u = rng.unit() * sum;
                    cdf.partition_point(|&c| c <= u).min(flows as usize - 1) as u64
                })
                .collect()
        }
    }
}

/// The 60-byte TCP/IPv4 frame of flow `i`: 10.A.B.C:12345 -> 192.168.0.1:80
/// (the 5-tuple rule `i` matches it), Ethernet 02:00:00:00:00:01 ->
/// 02:00:00:00:00:02, with a valid IPv4 header checksum.
pub fn flow_frame(i: u64) -> [u8; 60] {
    let mut f = [0u8; 60];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[..12].copy_from_slice(&[0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0]);
    ip[12..16].copy_from_slice(&[10, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
    ip[16..20].copy_from_slice(&[192, 168, 0, 1]);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    let tcp = &mut f[34..54];
    tcp[..4].copy_from_slice(&[0x30, 0x39, 0, 80]);
    tcp[12] = 0x50;
    tcp[13] = 0x10;
    f
}

/// The most frames a capture may hold (its flow sequence is built in memory).
pub const MAX_FRAMES: u64 = 1 << 27;

/// Writes a capture of `frames` frames over `flows` flows; returns how many
/// distinct flows it holds (fewer than `flows` when there are fewer frames
/// than flows, or with Zipf's long tail).
pub fn write_traffic(path: &Path, flows: u64, frames: u64, dist: Dist) -> Result<u64, String> {
    if flows == 0 || flows > 1 << 24 {
        return Err(format!("--flows {flows}: from 1 to {}", 1u64 << 24));
    }
    if frames == 0 || frames > MAX_FRAMES {
        return Err(format!("--frames {frames}: from 1 to {MAX_FRAMES}"));
    }
    let err = |e: String| format!("{}: {e}", path.display());
    let f = File::create(path).map_err(|e| err(e.to_string()))?;
    let mut w =
        PcapWriter::new(BufWriter::with_capacity(1 << 20, f)).map_err(|e| err(e.to_string()))?;
    let mut seen = vec![false; flows as usize];
    let mut distinct = 0;
    for i in flow_sequence(flows, frames, dist) {
        if !std::mem::replace(&mut seen[i as usize], true) {
            distinct += 1;
        }
        w.write_packet(&PcapPacket::new(Default::default(), 60, &flow_frame(i)))
            .map_err(|e| err(e.to_string()))?;
    }
    Ok(distinct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_reports_its_distinct_flows_and_refuses_bad_sizes() {
        let d = std::env::temp_dir().join(format!("sluice-traffic-{}", std::process::id()));
        assert_eq!(write_traffic(&d, 100, 50, Dist::Uniform), Ok(50));
        assert_eq!(write_traffic(&d, 100, 300, Dist::Uniform), Ok(100));
        assert!(write_traffic(&d, 1000, 1000, Dist::Zipf).unwrap() < 1000);
        assert!(write_traffic(&d, 100, 0, Dist::Uniform).is_err());
        assert!(write_traffic(&d, 0, 10, Dist::Uniform).is_err());
        assert!(write_traffic(&d, 10, MAX_FRAMES + 1, Dist::Uniform).is_err());
        std::fs::remove_file(&d).ok();
    }

    #[test]
    fn uniform_visits_every_flow() {
        let s = flow_sequence(1000, 2500, Dist::Uniform);
        assert_eq!(s.len(), 2500);
        let mut seen = vec![0u32; 1000];
        for &i in &s {
            seen[i as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n == 2 || n == 3), "{seen:?}");
    }

    #[test]
    fn zipf_favours_the_first_flows() {
        let s = flow_sequence(1000, 100_000, Dist::Zipf);
        let first = s.iter().filter(|&&i| i == 0).count() as f64 / 1e5;
        // 1 / H(1000) = 0.1336.
        assert!((first - 0.1336).abs() < 0.01, "{first}");
        assert!(s.iter().all(|&i| i < 1000));
        let tenth = s.iter().filter(|&&i| i == 9).count() as f64 / 1e5;
        assert!((tenth - 0.01336).abs() < 0.004, "{tenth}");
    }

    #[test]
    fn the_frame_has_the_rule_s_fields_and_a_valid_checksum() {
        let f = flow_frame(0x01_02_03);
        assert_eq!(&f[26..30], &[10, 1, 2, 3]);
        assert_eq!(&f[30..34], &[192, 168, 0, 1]);
        assert_eq!(&f[36..38], &[0, 80]);
        let mut sum: u32 = f[14..34]
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff, "the header sums to all ones");
        assert!(five_tuple_rule(0x01_02_03).contains("nw_src=10.1.2.3,"));
    }

    #[test]
    fn rule_sets_have_their_size_and_parse() {
        let d = std::env::temp_dir().join(format!("sluice-labrules-{}", std::process::id()));
        for (name, _, total) in SETS.iter().take(2) {
            write_rules(&d, name).unwrap();
            let text = std::fs::read_to_string(&d).unwrap();
            assert_eq!(text.lines().count() as u64, *total);
            for line in text.lines() {
                ofp::text::parse_flow_mod(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            }
        }
        // The 100k1k set: every rule distinct (a duplicate would replace
        // an earlier rule and leave the table smaller than its name).
        write_rules(&d, "100k1k").unwrap();
        let text = std::fs::read_to_string(&d).unwrap();
        let lines: std::collections::HashSet<&str> = text.lines().collect();
        assert_eq!(lines.len(), 101_000);
        std::fs::remove_file(&d).ok();
        for j in 0..1000 {
            let fm = ofp::text::parse_flow_mod(&prefix_rule(j)).unwrap();
            assert!(
                !prefix_rule(j).contains("nw_dst=10.") && !prefix_rule(j).contains("nw_dst=192.")
            );
            drop(fm);
        }
        assert!(write_rules(&d, "3p").is_err());
    }
}
