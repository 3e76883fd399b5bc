//! Tunnel metadata and the VXLAN (RFC 7348) and Geneve (RFC 8926) headers.
//!
//! [`TunnelMeta`] is what a packet carries besides its bytes when it came
//! out of a tunnel or is about to go into one, as Open vSwitch's flow-based
//! tunnels define it: the tunnel id (VXLAN/Geneve VNI) and the outer IPv4
//! or IPv6 source and destination. On receive the source is the remote
//! endpoint and the destination the local one; on send, flows set the
//! destination (`tun_dst`) to say where the packet goes.
//!
//! Geneve options travel beside the metadata as their raw bytes (the
//! options of the header, in order): a tunnel port hands a received
//! frame's options to the pipeline, which reads the ones its option table
//! maps into `tun_metadataN` and refuses a frame whose critical options it
//! does not map (`pipeline::tlv`); the pipeline hands a frame to send its
//! options, which the port writes after the fixed header ([`Proto::header_with`]).
//!
//! The header codecs are pure functions on bytes (no I/O), over the views
//! of [`crate::wire::vxlan`] and [`crate::wire::geneve`]: the tunnel port
//! in `netdev` receives UDP payloads with the host's IP stack and hands
//! them here. Decoding never panics and never reads past the slice.

use crate::wire::geneve::{self, Geneve};
use crate::wire::vxlan::{self, Vxlan};

/// UDP port IANA assigned to VXLAN.
pub const VXLAN_PORT: u16 = 4789;
/// UDP port IANA assigned to Geneve.
pub const GENEVE_PORT: u16 = 6081;
/// Bytes of a VXLAN header, and of a Geneve header without options.
pub const HEADER_LEN: usize = 8;
/// Geneve's protocol type for an Ethernet payload (transparent Ethernet
/// bridging).
pub const ETH_BRIDGING: u16 = geneve::ETH_BRIDGING;
/// The largest VNI (24 bits).
pub const MAX_VNI: u32 = 0x00ff_ffff;

/// A packet's tunnel metadata (all zero: not from, or not yet for, a
/// tunnel). IPv4 addresses are held as host-order numbers of their four
/// bytes, IPv6 addresses as 128-bit numbers of their sixteen, as the flow
/// key holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TunnelMeta {
    /// `tun_id`: the VNI on receive; the low 24 bits are the VNI sent.
    pub id: u64,
    /// `tun_src`.
    pub ipv4_src: u32,
    /// `tun_dst`.
    pub ipv4_dst: u32,
    /// `tun_ipv6_src`.
    pub ipv6_src: u128,
    /// `tun_ipv6_dst`.
    pub ipv6_dst: u128,
}

impl TunnelMeta {
    /// Where a tunnel port sends a packet with this metadata.
    #[inline]
    pub fn dst(&self) -> TunnelDst {
        TunnelDst {
            id: self.id,
            ipv4_dst: self.ipv4_dst,
            ipv6_dst: self.ipv6_dst.to_be_bytes(),
        }
    }
}

/// What a tunnel port needs of a packet's metadata to send it: the VNI
/// (`tun_id`) and the remote endpoint (`tun_dst`, else `tun_ipv6_dst`; all
/// zero: none). Kept apart from [`TunnelMeta`] because every output of
/// the pipeline carries one: 32 bytes aligned to 8 instead of 48 aligned
/// to 16 (measured: the larger one cost 4-6 ns per packet on every path).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TunnelDst {
    pub id: u64,
    pub ipv4_dst: u32,
    /// Big-endian bytes.
    pub ipv6_dst: [u8; 16],
}

impl TunnelDst {
    /// The same as a packet's metadata (no sources).
    pub fn meta(&self) -> TunnelMeta {
        TunnelMeta {
            id: self.id,
            ipv4_dst: self.ipv4_dst,
            ipv6_dst: u128::from_be_bytes(self.ipv6_dst),
            ..TunnelMeta::default()
        }
    }
}

/// The tunnel protocols sluice speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    Vxlan,
    Geneve,
}

impl Proto {
    /// The protocol's name in configuration and logs.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Vxlan => "vxlan",
            Proto::Geneve => "geneve",
        }
    }

    /// The protocol's IANA UDP port.
    pub fn default_port(self) -> u16 {
        match self {
            Proto::Vxlan => VXLAN_PORT,
            Proto::Geneve => GENEVE_PORT,
        }
    }

    /// The 8-byte header that carries an Ethernet frame with `vni` (its
    /// low 24 bits), with no Geneve options.
    pub fn header(self, vni: u32) -> [u8; HEADER_LEN] {
        match self {
            Proto::Vxlan => vxlan::header(vni),
            Proto::Geneve => geneve::header(vni),
        }
    }

    /// [`Proto::header`] for a frame sent with Geneve options `opts`
    /// (whole options, at most [`MAX_OPTIONS`] bytes; the caller writes
    /// them after the header): their length in words, and the C bit when
    /// one of them is critical. VXLAN carries no options: `opts` is
    /// ignored (the caller sends none).
    pub fn header_with(self, vni: u32, opts: &[u8]) -> [u8; HEADER_LEN] {
        let mut h = self.header(vni);
        if self == Proto::Geneve && !opts.is_empty() {
            let words = (opts.len().min(MAX_OPTIONS) / 4) as u8;
            h[0] |= words;
            if has_critical(opts) {
                h[1] |= 0x40;
            }
        }
        h
    }
}

/// The most bytes of Geneve options a header can announce (63 words).
pub const MAX_OPTIONS: usize = 252;

/// Whether one of the options in `opts` is critical (its type's high
/// bit, RFC 8926 3.5).
pub fn has_critical(opts: &[u8]) -> bool {
    geneve::options(opts).any(|o| o.ty & 0x80 != 0)
}

/// Why a received tunnel header was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// Shorter than its header (options included).
    Short,
    /// VXLAN without the I flag (no valid VNI).
    NoVni,
    /// Geneve of a version other than 0.
    Version,
    /// Geneve carrying something other than Ethernet.
    NotEthernet,
    /// A Geneve control message (O bit): not data for the bridge.
    Control,
}

/// A decoded header: the VNI and where the Ethernet frame starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    pub vni: u32,
    /// Bytes of header (with Geneve options) before the inner frame.
    pub len: usize,
}

/// Decodes the header at the start of a UDP payload (options included:
/// a payload shorter than its header is [`HeaderError::Short`]). Geneve
/// options are counted, not interpreted: the C bit (critical options) is
/// no reason to refuse here, the pipeline decides on each critical option
/// whether it knows it (as Open vSwitch's option table does); reserved
/// bits are ignored on receive as both RFCs ask.
pub fn decode(proto: Proto, b: &[u8]) -> Result<Decoded, HeaderError> {
    let fixed: &[u8; HEADER_LEN] = b
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or(HeaderError::Short)?;
    let d = decode_fixed(proto, fixed)?;
    if b.len() < d.len {
        return Err(HeaderError::Short);
    }
    Ok(d)
}

/// Decodes the fixed 8 bytes of a header; `len` then counts the Geneve
/// options that follow, which the caller must check are there.
pub fn decode_fixed(proto: Proto, b: &[u8; HEADER_LEN]) -> Result<Decoded, HeaderError> {
    match proto {
        Proto::Vxlan => {
            let h = Vxlan::at(b, 0).ok_or(HeaderError::Short)?;
            if h.flags() & vxlan::FLAG_VNI == 0 {
                return Err(HeaderError::NoVni);
            }
            Ok(Decoded {
                vni: h.vni(),
                len: HEADER_LEN,
            })
        }
        Proto::Geneve => {
            let h = Geneve::at(b, 0).ok_or(HeaderError::Short)?;
            if h.version() != 0 {
                return Err(HeaderError::Version);
            }
            if h.is_control() {
                return Err(HeaderError::Control);
            }
            if h.protocol() != ETH_BRIDGING {
                return Err(HeaderError::NotEthernet);
            }
            Ok(Decoded {
                vni: h.vni(),
                len: HEADER_LEN + h.options_len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        for p in [Proto::Vxlan, Proto::Geneve] {
            let h = p.header(0x12_3456);
            assert_eq!(
                decode(p, &h),
                Ok(Decoded {
                    vni: 0x12_3456,
                    len: 8
                })
            );
        }
        // Only the low 24 bits of an id are a VNI.
        assert_eq!(Proto::Vxlan.header(0xff00_0001)[4..7], [0, 0, 1]);
        // RFC 7348's layout: flags 0x08, VNI in bytes 4-6.
        assert_eq!(Proto::Vxlan.header(21), [8, 0, 0, 0, 0, 0, 21, 0]);
    }

    #[test]
    fn bad_headers_are_refused() {
        assert_eq!(decode(Proto::Vxlan, &[8, 0, 0]), Err(HeaderError::Short));
        assert_eq!(
            decode(Proto::Vxlan, &[0, 0, 0, 0, 0, 0, 1, 0]),
            Err(HeaderError::NoVni)
        );
        let g = |b0: u8, b1: u8, ty: u16| {
            let t = ty.to_be_bytes();
            [b0, b1, t[0], t[1], 0, 0, 7, 0]
        };
        assert_eq!(
            decode(Proto::Geneve, &g(0x40, 0, 0x6558)),
            Err(HeaderError::Version)
        );
        // The C bit is the pipeline's to judge, option by option.
        assert_eq!(
            decode(Proto::Geneve, &g(0, 0x40, 0x6558)),
            Ok(Decoded { vni: 7, len: 8 })
        );
        assert_eq!(
            decode(Proto::Geneve, &g(0, 0x80, 0x6558)),
            Err(HeaderError::Control)
        );
        assert_eq!(
            decode(Proto::Geneve, &g(0, 0, 0x0800)),
            Err(HeaderError::NotEthernet)
        );
        // Two words of options announced, one present.
        let mut b = g(2, 0, 0x6558).to_vec();
        b.extend_from_slice(&[0; 4]);
        assert_eq!(decode(Proto::Geneve, &b), Err(HeaderError::Short));
        b.extend_from_slice(&[0; 4]);
        assert_eq!(decode(Proto::Geneve, &b), Ok(Decoded { vni: 7, len: 16 }));
    }

    #[test]
    fn a_header_with_options_counts_them_and_flags_critical_ones() {
        // OVN's option: class 0x0102, type 0x80 (critical), 4 bytes.
        let ovn = [1, 2, 0x80, 1, 0, 1, 0, 2];
        let h = Proto::Geneve.header_with(5, &ovn);
        assert_eq!(h[0], 2, "two words of options, version 0");
        assert_eq!(h[1], 0x40, "the C bit");
        assert_eq!(
            decode_fixed(Proto::Geneve, &h),
            Ok(Decoded { vni: 5, len: 16 })
        );
        let plain = [1, 2, 0x01, 0];
        assert_eq!(Proto::Geneve.header_with(5, &plain)[..2], [1, 0]);
        assert_eq!(Proto::Geneve.header_with(5, &[]), Proto::Geneve.header(5));
        assert_eq!(Proto::Vxlan.header_with(5, &ovn), Proto::Vxlan.header(5));
    }

    #[test]
    fn decoding_never_panics_on_any_short_input() {
        for n in 0..20 {
            for fill in [0u8, 0xff, 0x08, 0x3f] {
                let b = vec![fill; n];
                let _ = decode(Proto::Vxlan, &b);
                let _ = decode(Proto::Geneve, &b);
            }
        }
    }
}
