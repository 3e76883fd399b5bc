//! A packet from the command line, for `trace` and `packet-out`: either
//! the frame in hex (`0002...`, separators `:` `.` `-` and spaces allowed)
//! or a flow description in the match syntax
//! (`tcp,nw_src=10.0.0.1,tp_dst=80`, like the flow ofproto/trace takes),
//! from which a well-formed frame is built: Ethernet (addresses default to
//! zero), an 802.1Q tag if vlan_vid names one, then ARP, IPv4 or IPv6 with
//! TCP, UDP, SCTP, ICMP or ICMPv6, with valid checksums. Fields a frame
//! cannot carry are refused by name.
//!
//! Here, next to [`crate::trace`], because both `sluice-ctl` and the
//! daemon's `ofproto/trace` (unixctl) read packets this way.

use ofp::oxm::{MatchEntry, OxmField as F, OFPVID_PRESENT};
use ofp::Match;
use packet::checksum;

/// A packet read from the command line, and the in_port its description
/// named (if any).
#[derive(Debug)]
pub struct Described {
    pub frame: Vec<u8>,
    pub in_port: Option<u32>,
}

/// Reads PACKET: hex bytes or a flow description.
pub fn parse(s: &str) -> Result<Described, String> {
    let s = s.trim();
    let hex: String = s.chars().filter(|c| !":.- \t".contains(*c)).collect();
    if !hex.is_empty()
        && hex.len().is_multiple_of(2)
        && hex.chars().all(|c| c.is_ascii_hexdigit())
        && hex.len() >= 28
    {
        let frame = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("checked hex digits"))
            .collect();
        return Ok(Described {
            frame,
            in_port: None,
        });
    }
    let m = ofp::text::parse_match(s).map_err(|e| format!("packet: {e}"))?;
    m.validate()
        .map_err(|e| format!("packet {s:?}: {}", e.detail))?;
    build(&m).map(|frame| Described {
        frame,
        in_port: m.get(F::InPort).map(|o| o.value as u32),
    })
}

fn exact(m: &Match, f: F) -> Result<Option<u128>, String> {
    match m.get(f) {
        None => Ok(None),
        Some(o) if o.mask.is_some() => Err(format!(
            "packet: {f:?} has a mask; a packet needs exact values"
        )),
        Some(o) => Ok(Some(o.value)),
    }
}

fn get(m: &Match, f: F) -> Result<u128, String> {
    Ok(exact(m, f)?.unwrap_or(0))
}

/// Builds the frame a match describes (exact fields only).
pub fn build(m: &Match) -> Result<Vec<u8>, String> {
    for e in &m.entries {
        let MatchEntry::Basic(o) = e else {
            return Err("packet: experimenter fields cannot be put in a frame".into());
        };
        if matches!(
            o.field,
            F::Metadata
                | F::TunnelId
                | F::InPhyPort
                | F::PbbIsid
                | F::PbbUca
                | F::MplsLabel
                | F::MplsTc
                | F::MplsBos
                | F::Ipv6Exthdr
                | F::Ipv6NdTarget
                | F::Ipv6NdSll
                | F::Ipv6NdTll
        ) {
            return Err(format!(
                "packet: {:?} cannot be described here (give the frame in hex)",
                o.field
            ));
        }
    }
    let mut f = Vec::with_capacity(128);
    f.extend_from_slice(&mac(get(m, F::EthDst)?));
    f.extend_from_slice(&mac(get(m, F::EthSrc)?));
    let vid = get(m, F::VlanVid)? as u16;
    if vid & OFPVID_PRESENT != 0 {
        let tci = (get(m, F::VlanPcp)? as u16) << 13 | (vid & 0xfff);
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&tci.to_be_bytes());
    }
    let eth_type = get(m, F::EthType)? as u16;
    f.extend_from_slice(&eth_type.to_be_bytes());
    match eth_type {
        0x0806 => arp(m, &mut f)?,
        0x0800 => ipv4(m, &mut f)?,
        0x86dd => ipv6(m, &mut f)?,
        _ => {}
    }
    // Pad to the Ethernet minimum as a NIC would.
    if f.len() < 60 {
        f.resize(60, 0);
    }
    Ok(f)
}

fn mac(v: u128) -> [u8; 6] {
    let b = (v as u64).to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

fn arp(m: &Match, f: &mut Vec<u8>) -> Result<(), String> {
    let op = exact(m, F::ArpOp)?.unwrap_or(1) as u16;
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4]);
    f.extend_from_slice(&op.to_be_bytes());
    f.extend_from_slice(&mac(get(m, F::ArpSha)?));
    f.extend_from_slice(&(get(m, F::ArpSpa)? as u32).to_be_bytes());
    f.extend_from_slice(&mac(get(m, F::ArpTha)?));
    f.extend_from_slice(&(get(m, F::ArpTpa)? as u32).to_be_bytes());
    Ok(())
}

/// The transport header for `proto` (no checksum yet) and where its
/// checksum goes (offset within the header), if it has one.
fn l4(m: &Match, proto: u8) -> Result<(Vec<u8>, Option<usize>), String> {
    let port =
        |s: F, d: F| -> Result<(u16, u16), String> { Ok((get(m, s)? as u16, get(m, d)? as u16)) };
    Ok(match proto {
        6 => {
            let (s, d) = port(F::TcpSrc, F::TcpDst)?;
            let mut h = Vec::with_capacity(20);
            h.extend_from_slice(&s.to_be_bytes());
            h.extend_from_slice(&d.to_be_bytes());
            // seq 1, ack 0, 20-byte header, SYN, window 65535.
            h.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
            (h, Some(16))
        }
        17 => {
            let (s, d) = port(F::UdpSrc, F::UdpDst)?;
            let mut h = Vec::with_capacity(8);
            h.extend_from_slice(&s.to_be_bytes());
            h.extend_from_slice(&d.to_be_bytes());
            h.extend_from_slice(&[0, 8, 0, 0]);
            (h, Some(6))
        }
        132 => {
            let (s, d) = port(F::SctpSrc, F::SctpDst)?;
            let mut h = Vec::with_capacity(12);
            h.extend_from_slice(&s.to_be_bytes());
            h.extend_from_slice(&d.to_be_bytes());
            h.extend_from_slice(&[0; 8]);
            (h, None)
        }
        1 => {
            let t = exact(m, F::Icmpv4Type)?.unwrap_or(8) as u8;
            let c = get(m, F::Icmpv4Code)? as u8;
            (vec![t, c, 0, 0, 0, 0, 0, 1], Some(2))
        }
        58 => {
            let t = exact(m, F::Icmpv6Type)?.unwrap_or(128) as u8;
            let c = get(m, F::Icmpv6Code)? as u8;
            (vec![t, c, 0, 0, 0, 0, 0, 1], Some(2))
        }
        _ => (Vec::new(), None),
    })
}

fn ipv4(m: &Match, f: &mut Vec<u8>) -> Result<(), String> {
    let proto = get(m, F::IpProto)? as u8;
    let (mut seg, csum_at) = l4(m, proto)?;
    let src = (get(m, F::Ipv4Src)? as u32).to_be_bytes();
    let dst = (get(m, F::Ipv4Dst)? as u32).to_be_bytes();
    let tos = (get(m, F::IpDscp)? as u8) << 2 | get(m, F::IpEcn)? as u8;
    let total = (20 + seg.len()) as u16;
    let mut ip = vec![0x45, tos];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let sum = checksum::internet(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    if let Some(at) = csum_at {
        let sum = if proto == 1 {
            checksum::internet(&seg)
        } else {
            let pseudo = checksum::pseudo_v4(src, dst, proto, seg.len() as u16);
            checksum::finish(checksum::sum(&seg, pseudo))
        };
        seg[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    }
    f.extend_from_slice(&ip);
    f.extend_from_slice(&seg);
    Ok(())
}

fn ipv6(m: &Match, f: &mut Vec<u8>) -> Result<(), String> {
    let proto = get(m, F::IpProto)? as u8;
    let (mut seg, csum_at) = l4(m, proto)?;
    let src = get(m, F::Ipv6Src)?.to_be_bytes();
    let dst = get(m, F::Ipv6Dst)?.to_be_bytes();
    let tc = (get(m, F::IpDscp)? as u32) << 2 | get(m, F::IpEcn)? as u32;
    let first = 6u32 << 28 | tc << 20 | get(m, F::Ipv6Flabel)? as u32 & 0xfffff;
    if let Some(at) = csum_at {
        let pseudo = checksum::pseudo_v6(src, dst, proto, seg.len() as u32);
        let sum = checksum::finish(checksum::sum(&seg, pseudo));
        seg[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    }
    f.extend_from_slice(&first.to_be_bytes());
    f.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    f.extend_from_slice(&[proto, 64]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&seg);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::{slots as s, FlowKey};

    fn key(frame: &[u8]) -> FlowKey {
        let mut k = FlowKey::default();
        packet::extract(frame, 1, &mut k);
        k
    }

    #[test]
    fn descriptions_build_frames_that_parse_back() {
        let d = parse(
            "in_port=3,tcp,eth_src=02:00:00:00:00:01,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80",
        )
        .unwrap();
        assert_eq!(d.in_port, Some(3));
        let k = key(&d.frame);
        assert_eq!(k.get(s::TP_DST), 80);
        assert_eq!(k.get(s::NW_SRC), 0x0a00_0001);
        assert_eq!(k.flags() & packet::flags::L4, packet::flags::L4);
        // IPv4 header checksum verifies.
        assert_eq!(checksum::internet(&d.frame[14..34]), 0);

        let k = key(&parse("dl_vlan=5,udp6,ipv6_dst=2001:db8::1,udp_dst=53")
            .unwrap()
            .frame);
        assert_eq!(k.get(s::VLAN_VID), 0x1005);
        assert_eq!(k.get(s::TP_DST), 53);
        let k = key(&parse("arp,arp_tpa=10.0.0.9").unwrap().frame);
        assert_eq!(k.get(s::NW_DST), 0x0a00_0009);
        assert_eq!(k.get(s::ARP_OP), 1);
    }

    #[test]
    fn hex_and_errors() {
        let hex =
            "ffffffffffff020000000001080600010800060400010200000000010a0000010000000000000a000002";
        assert_eq!(parse(hex).unwrap().frame.len(), 42);
        assert!(parse("tcp,tp_dst=80/0xff").unwrap_err().contains("mask"));
        assert!(parse("tcp,bogus=1").unwrap_err().contains("bogus"));
        assert!(parse("tp_dst=80").is_err(), "prerequisites are checked");
    }
}
