//! A packet from the command line, for `trace` and `packet-out`: either
//! the frame in hex (`0002...`, separators `:` `.` `-` and spaces allowed)
//! or a flow description in the match syntax
//! (`tcp,nw_src=10.0.0.1,tp_dst=80`, like the flow ofproto/trace takes),
//! from which a well-formed frame is built: Ethernet (addresses default to
//! zero), an 802.1Q tag if vlan_vid names one (`dl_vlan=N`; Open
//! vSwitch's `vlan_tci=5`, a TCI without CFI, is no frame's: see
//! [`tci_without_cfi`]), then ARP, IPv4 or IPv6 with
//! TCP, UDP, SCTP, ICMP or ICMPv6, with valid checksums. Fields a frame
//! cannot carry are refused by name.
//!
//! Here, next to [`crate::trace`], because both `sluice-ctl` and the
//! daemon's `ofproto/trace` (unixctl) read packets this way.

use ofp::oxm::{MatchEntry, OxmField as F, OFPVID_PRESENT};
use ofp::Match;
use packet::wire::build::{self as wb, Ip, IpFields, Transport};

/// A packet read from the command line, and the in_port its description
/// named (if any).
#[derive(Debug)]
pub struct Described {
    pub frame: Vec<u8>,
    pub in_port: Option<u32>,
    /// [`tci_without_cfi`]: the key's TCI where no frame can say it.
    pub tci: Option<(u16, u8)>,
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
            tci: None,
        });
    }
    let m = ofp::text::parse_match(s).map_err(|e| format!("packet: {e}"))?;
    m.validate()
        .map_err(|e| format!("packet {s:?}: {}", e.detail))?;
    build(&m).map(|frame| Described {
        frame,
        in_port: m.get(F::InPort).map(|o| o.value as u32),
        tci: tci_without_cfi(&m),
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

/// The TCI Open vSwitch's flow holds for a description whose `vlan_tci`
/// has VID bits but no CFI (`vlan_tci=5`): a packet that is neither
/// tagged (`dl_vlan=5` does not match it) nor untagged (`vlan_tci=0` does
/// not), which no frame can be. The 13 bits of the key's `vlan_vid`
/// (VID, present bit clear) and its PCP.
pub fn tci_without_cfi(m: &Match) -> Option<(u16, u8)> {
    let vid = exact(m, F::VlanVid).ok()?? as u16;
    let pcp = exact(m, F::VlanPcp).ok().flatten().unwrap_or(0) as u8;
    (vid & OFPVID_PRESENT == 0 && vid & 0xfff != 0).then_some((vid & 0xfff, pcp))
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
    // A tag when the description asks for one: `dl_vlan=N` (vlan_vid
    // with OFPVID_PRESENT). A TCI without CFI but with VID bits
    // (`vlan_tci=5`) is no frame's: the frame is untagged, the key's
    // TCI is for the caller to set ([`tci_without_cfi`]).
    let vid = get(m, F::VlanVid)? as u16;
    let tci = match vid & OFPVID_PRESENT {
        0 => None,
        _ => Some((get(m, F::VlanPcp)? as u16) << 13 | (vid & 0xfff)),
    };
    let eth_type = get(m, F::EthType)? as u16;
    let body = match eth_type {
        0x0806 => arp(m)?,
        0x0800 | 0x86dd => ip(m, eth_type == 0x86dd)?,
        _ => Vec::new(),
    };
    let dst = get(m, F::EthDst)? as u64;
    let src = get(m, F::EthSrc)? as u64;
    let mut f = wb::ethernet(dst, src, tci, eth_type, &body);
    // Pad to the Ethernet minimum as a NIC would.
    if f.len() < 60 {
        f.resize(60, 0);
    }
    Ok(f)
}

fn arp(m: &Match) -> Result<Vec<u8>, String> {
    let op = exact(m, F::ArpOp)?.unwrap_or(1) as u16;
    let (sha, spa) = (get(m, F::ArpSha)? as u64, get(m, F::ArpSpa)? as u32);
    let (tha, tpa) = (get(m, F::ArpTha)? as u64, get(m, F::ArpTpa)? as u32);
    Ok(wb::arp(op, sha, spa, tha, tpa).to_vec())
}

/// The transport header for `proto`, from the match (defaults: a TCP
/// SYN with sequence 1 and window 65535, an ICMP echo request).
fn transport(m: &Match, proto: u8) -> Result<Transport<'static>, String> {
    let port =
        |s: F, d: F| -> Result<(u16, u16), String> { Ok((get(m, s)? as u16, get(m, d)? as u16)) };
    Ok(match proto {
        6 => {
            let (sport, dport) = port(F::TcpSrc, F::TcpDst)?;
            Transport::Tcp {
                sport,
                dport,
                seq: 1,
                ack: 0,
                flags: 0x02,
                window: 0xffff,
                options: &[],
            }
        }
        17 => {
            let (sport, dport) = port(F::UdpSrc, F::UdpDst)?;
            Transport::Udp { sport, dport }
        }
        132 => {
            let (sport, dport) = port(F::SctpSrc, F::SctpDst)?;
            Transport::Sctp { sport, dport }
        }
        // ICMP in either family, as Open vSwitch composes it.
        1 => Transport::Icmp {
            v6: false,
            ty: exact(m, F::Icmpv4Type)?.unwrap_or(8) as u8,
            code: get(m, F::Icmpv4Code)? as u8,
            rest: [0, 0, 0, 1],
        },
        58 => Transport::Icmp {
            v6: true,
            ty: exact(m, F::Icmpv6Type)?.unwrap_or(128) as u8,
            code: get(m, F::Icmpv6Code)? as u8,
            rest: [0, 0, 0, 1],
        },
        p => Transport::Other(p),
    })
}

fn ip(m: &Match, v6: bool) -> Result<Vec<u8>, String> {
    let proto = get(m, F::IpProto)? as u8;
    let t = transport(m, proto)?;
    let fields = IpFields {
        tos: (get(m, F::IpDscp)? as u8) << 2 | get(m, F::IpEcn)? as u8,
        flow_label: get(m, F::Ipv6Flabel)? as u32,
        ..IpFields::default()
    };
    let (src, dst) = if v6 {
        (
            Ip::V6(get(m, F::Ipv6Src)?.to_be_bytes()),
            Ip::V6(get(m, F::Ipv6Dst)?.to_be_bytes()),
        )
    } else {
        (
            Ip::V4((get(m, F::Ipv4Src)? as u32).to_be_bytes()),
            Ip::V4((get(m, F::Ipv4Dst)? as u32).to_be_bytes()),
        )
    };
    Ok(wb::ip(src, dst, &fields, &t, &[]))
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
        assert_eq!(packet::checksum::internet(&d.frame[14..34]), 0);

        let k = key(&parse("dl_vlan=5,udp6,ipv6_dst=2001:db8::1,udp_dst=53")
            .unwrap()
            .frame);
        assert_eq!(k.get(s::VLAN_VID), 0x1005);
        assert_eq!(k.get(s::TP_DST), 53);
        // Open vSwitch's TCI forms: with CFI a tag; without, no frame's
        // (untagged, the TCI handed back); zero none.
        for (flow, vid, tci) in [
            ("vlan_tci=5", 0, Some((5, 0))),
            ("vlan_tci=0x1014", 0x1014, None),
            ("vlan_tci=0xb014", 0x1014, None),
            ("vlan_tci=0", 0, None),
            ("dl_vlan=0xffff", 0, None),
        ] {
            let d = parse(flow).unwrap();
            assert_eq!(key(&d.frame).get(s::VLAN_VID), vid, "{flow}");
            assert_eq!(d.tci, tci, "{flow}");
        }
        let k = key(&parse("vlan_tci=0xb014").unwrap().frame);
        assert_eq!(k.get(s::VLAN_PCP), 5);
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
