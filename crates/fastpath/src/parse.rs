//! The generated parser: writes the packet's [`packet::FlowKey`] on the
//! program's stack, word for word as `packet::extract` writes it, for the
//! frames whose headers it knows; every other frame goes up.
//!
//! Mirrored exactly (the differential test holds it to this): Ethernet
//! with up to two VLAN tags, IPv4 (options, fragments, a total length
//! shorter than the frame), IPv6 without extension headers, ARP, and TCP,
//! UDP, SCTP, ICMP, ICMPv6 (but neighbour discovery) with the pipeline's
//! truncation rules: a header cut short leaves its layer's flag unset and
//! its fields zero. Sent up instead: frames shorter than 14 bytes, a
//! third VLAN tag, MPLS, PBB, IPv6 extension headers, ND. The TCP flags
//! slot is not written: no OpenFlow 1.3 match reads it.
//!
//! Registers: r6 = ctx, r7 = data, r8 = data_end (set by the caller);
//! r9 = offset of the L3 header, r5 = EtherType; r0-r5 scratch.

use packet::parse::{ethertype, ipproto};
use packet::{flags, PACKET_WORDS as KEY_WORDS};

use crate::asm::{Alu, Asm, Cond, Label, Reg, Size, FP, R0, R1, R2, R3, R4, R5, R7, R8, R9};

/// Stack offset of key word `w` (from the frame pointer).
pub const fn key_off(w: usize) -> i16 {
    -(8 * KEY_WORDS as i16) + 8 * w as i16
}

/// Stack slots where the parser leaves the offsets of the IPv4 header
/// (set with `flags::IPV4`) and of the transport header (set with
/// `flags::L4`) for the actions that edit them; zero otherwise. Below the
/// key and the matcher's words (`compile`: hash key, scratch, opaque).
pub const L3_SLOT: i16 = key_off(0) - 8 * KEY_WORDS as i16 - 24;
pub const L4_SLOT: i16 = L3_SLOT - 8;

/// `word w |= r`.
fn or_word(a: &mut Asm, w: usize, r: Reg) {
    a.ldx(Size::DW, R0, FP, key_off(w));
    a.alu_reg(Alu::Or, R0, r);
    a.stx(Size::DW, FP, key_off(w), R0);
}

fn or_flag(a: &mut Asm, flag: u64) {
    a.ldx(Size::DW, R0, FP, key_off(6));
    a.alu_imm(Alu::Or, R0, flag as i32);
    a.stx(Size::DW, FP, key_off(6), R0);
}

/// `if (base + n > data_end) goto l` (base is r7 or a packet pointer).
fn need(a: &mut Asm, base: Reg, n: i32, l: Label) {
    a.mov(R1, base);
    a.alu_imm(Alu::Add, R1, n);
    a.jmp_reg(Cond::Gt, R1, R8, l);
}

/// `dst = 48-bit big-endian value at base + off`, clobbering `tmp`.
fn load48(a: &mut Asm, dst: Reg, tmp: Reg, base: Reg, off: i16) {
    a.ldx(Size::W, dst, base, off);
    a.be(dst, 32);
    a.alu_imm(Alu::Lsh, dst, 16);
    a.ldx(Size::H, tmp, base, off + 4);
    a.be(tmp, 16);
    a.alu_reg(Alu::Or, dst, tmp);
}

fn is_tag(a: &mut Asm, r: Reg, l: Label) {
    for t in [ethertype::VLAN, ethertype::QINQ, ethertype::QINQ_OLD] {
        a.jmp_imm(Cond::Eq, r, t as i32, l);
    }
}

/// Emits the parser. Falls through to the matcher when the key is ready;
/// jumps to `up` for frames it does not mirror.
pub fn emit(a: &mut Asm, in_port: u32, up: Label) {
    let done = a.label();
    for w in 0..KEY_WORDS {
        a.st_imm(Size::DW, FP, key_off(w), 0);
    }
    a.st_imm(Size::DW, FP, L3_SLOT, 0);
    a.st_imm(Size::DW, FP, L4_SLOT, 0);
    a.ld_imm64(R0, ((in_port as u64) << 32) | in_port as u64);
    a.stx(Size::DW, FP, key_off(0), R0);

    // Ethernet and VLAN tags.
    need(a, R7, 14, up);
    a.ldx(Size::H, R5, R7, 12);
    a.be(R5, 16);
    a.mov_imm(R9, 14);
    let (tag1, tag2, eth) = (a.label(), a.label(), a.label());
    is_tag(a, R5, tag1);
    a.ja(eth);
    a.bind(tag1);
    need(a, R7, 18, up);
    a.ldx(Size::H, R2, R7, 14);
    a.be(R2, 16);
    a.mov(R3, R2);
    a.alu_imm(Alu::And, R3, 0x0fff);
    a.alu_imm(Alu::Or, R3, 0x1000);
    a.alu_imm(Alu::Lsh, R3, 3);
    a.alu_imm(Alu::Rsh, R2, 13);
    a.alu_reg(Alu::Or, R3, R2);
    or_word(a, 3, R3);
    or_flag(a, flags::VLAN);
    a.ldx(Size::H, R5, R7, 16);
    a.be(R5, 16);
    a.mov_imm(R9, 18);
    is_tag(a, R5, tag2);
    a.ja(eth);
    a.bind(tag2);
    need(a, R7, 22, up);
    a.ldx(Size::H, R5, R7, 20);
    a.be(R5, 16);
    a.mov_imm(R9, 22);
    is_tag(a, R5, up);
    a.bind(eth);
    load48(a, R1, R2, R7, 0);
    a.alu_imm(Alu::Lsh, R1, 16);
    a.alu_reg(Alu::Or, R1, R5);
    or_word(a, 2, R1);
    load48(a, R1, R2, R7, 6);
    a.alu_imm(Alu::Lsh, R1, 16);
    or_word(a, 3, R1);
    or_flag(a, flags::ETH);
    let (v4, v6, arp) = (a.label(), a.label(), a.label());
    a.jmp_imm(Cond::Eq, R5, ethertype::IPV4 as i32, v4);
    a.jmp_imm(Cond::Eq, R5, ethertype::IPV6 as i32, v6);
    a.jmp_imm(Cond::Eq, R5, ethertype::ARP as i32, arp);
    a.jmp_imm(Cond::Eq, R5, ethertype::RARP as i32, arp);
    for t in [ethertype::MPLS, ethertype::MPLS_MCAST, ethertype::PBB] {
        a.jmp_imm(Cond::Eq, R5, t as i32, up);
    }
    a.ja(done);

    // IPv4: r4 = header, r1 = its length, r3 = total length.
    a.bind(v4);
    a.mov(R4, R7);
    a.alu_reg(Alu::Add, R4, R9);
    need(a, R4, 20, done);
    a.ldx(Size::B, R1, R4, 0);
    a.mov(R2, R1);
    a.alu_imm(Alu::Rsh, R2, 4);
    a.jmp_imm(Cond::Ne, R2, 4, done);
    a.alu_imm(Alu::And, R1, 0x0f);
    a.alu_imm(Alu::Lsh, R1, 2);
    a.jmp_imm(Cond::Lt, R1, 20, done);
    a.mov(R2, R4);
    a.alu_reg(Alu::Add, R2, R1);
    a.jmp_reg(Cond::Gt, R2, R8, done);
    a.ldx(Size::H, R3, R4, 2);
    a.be(R3, 16);
    a.jmp_reg(Cond::Lt, R3, R1, done);
    // dscp << 32 | ecn << 24 | proto << 40
    a.ldx(Size::B, R2, R4, 1);
    a.mov(R5, R2);
    a.alu_imm(Alu::Rsh, R5, 2);
    a.alu_imm(Alu::Lsh, R5, 32);
    a.alu_imm(Alu::And, R2, 3);
    a.alu_imm(Alu::Lsh, R2, 24);
    a.alu_reg(Alu::Or, R5, R2);
    a.ldx(Size::B, R2, R4, 9);
    a.alu_imm(Alu::Lsh, R2, 40);
    a.alu_reg(Alu::Or, R5, R2);
    or_word(a, 5, R5);
    a.ldx(Size::W, R2, R4, 12);
    a.be(R2, 32);
    a.alu_imm(Alu::Lsh, R2, 32);
    a.ldx(Size::W, R5, R4, 16);
    a.be(R5, 32);
    a.alu_reg(Alu::Or, R2, R5);
    or_word(a, 4, R2);
    // nw_ttl: word 15, bits 24-31.
    a.ldx(Size::B, R2, R4, 8);
    a.alu_imm(Alu::Lsh, R2, 24);
    or_word(a, 15, R2);
    or_flag(a, flags::IPV4);
    a.stx(Size::DW, FP, L3_SLOT, R9);
    a.ldx(Size::H, R2, R4, 6);
    a.be(R2, 16);
    let whole = a.label();
    a.mov(R5, R2);
    a.alu_imm(Alu::And, R5, 0x3fff);
    a.jmp_imm(Cond::Eq, R5, 0, whole);
    or_flag(a, flags::FRAG);
    a.alu_imm(Alu::And, R2, 0x1fff);
    a.jmp_imm(Cond::Eq, R2, 0, whole);
    or_flag(a, flags::LATER_FRAG);
    a.ja(done);
    a.bind(whole);
    // r2 = end of the IP packet, r9 = transport header, r3 = protocol.
    a.mov(R2, R9);
    a.alu_reg(Alu::Add, R2, R3);
    a.alu_reg(Alu::Add, R9, R1);
    a.ldx(Size::B, R3, R4, 9);
    l4(a, false, up, done);

    // IPv6 without extension headers.
    a.bind(v6);
    a.mov(R4, R7);
    a.alu_reg(Alu::Add, R4, R9);
    need(a, R4, 40, done);
    a.ldx(Size::W, R1, R4, 0);
    a.be(R1, 32);
    a.mov(R2, R1);
    a.alu_imm(Alu::Rsh, R2, 28);
    a.jmp_imm(Cond::Ne, R2, 6, done);
    a.mov(R2, R1);
    a.alu_imm(Alu::Rsh, R2, 22);
    a.alu_imm(Alu::And, R2, 0x3f);
    a.alu_imm(Alu::Lsh, R2, 32);
    a.mov(R3, R1);
    a.alu_imm(Alu::Rsh, R3, 20);
    a.alu_imm(Alu::And, R3, 3);
    a.alu_imm(Alu::Lsh, R3, 24);
    a.alu_reg(Alu::Or, R2, R3);
    a.alu_imm(Alu::And, R1, 0x000f_ffff);
    a.alu_reg(Alu::Or, R2, R1);
    a.ldx(Size::B, R1, R4, 6);
    for x in [
        ipproto::HOPOPTS,
        ipproto::ROUTING,
        ipproto::FRAGMENT,
        ipproto::ESP,
        ipproto::AH,
        ipproto::NONE,
        ipproto::DSTOPTS,
    ] {
        a.jmp_imm(Cond::Eq, R1, x as i32, up);
    }
    a.mov(R3, R1);
    a.alu_imm(Alu::Lsh, R1, 40);
    a.alu_reg(Alu::Or, R2, R1);
    or_word(a, 5, R2);
    for (w, off) in [(7, 8), (8, 16), (9, 24), (10, 32)] {
        a.ldx(Size::DW, R1, R4, off);
        a.be(R1, 64);
        a.stx(Size::DW, FP, key_off(w), R1);
    }
    // nw_ttl (the hop limit): word 15, bits 24-31.
    a.ldx(Size::B, R1, R4, 7);
    a.alu_imm(Alu::Lsh, R1, 24);
    or_word(a, 15, R1);
    or_flag(a, flags::IPV6);
    a.ldx(Size::H, R2, R4, 4);
    a.be(R2, 16);
    a.alu_reg(Alu::Add, R2, R9);
    a.alu_imm(Alu::Add, R2, 40);
    a.alu_imm(Alu::Add, R9, 40);
    l4(a, true, up, done);

    // ARP for Ethernet/IPv4.
    a.bind(arp);
    a.mov(R4, R7);
    a.alu_reg(Alu::Add, R4, R9);
    need(a, R4, 28, done);
    a.ldx(Size::W, R1, R4, 0);
    a.be(R1, 32);
    a.jmp_imm(Cond::Ne, R1, 0x0001_0800, done);
    a.ldx(Size::H, R1, R4, 4);
    a.be(R1, 16);
    a.jmp_imm(Cond::Ne, R1, 0x0604, done);
    a.ldx(Size::H, R1, R4, 6);
    a.be(R1, 16);
    a.alu_imm(Alu::Lsh, R1, 48);
    or_word(a, 5, R1);
    load48(a, R1, R2, R4, 8);
    a.alu_imm(Alu::Lsh, R1, 16);
    or_word(a, 13, R1);
    a.ldx(Size::W, R1, R4, 14);
    a.be(R1, 32);
    a.alu_imm(Alu::Lsh, R1, 32);
    a.ldx(Size::W, R2, R4, 24);
    a.be(R2, 32);
    a.alu_reg(Alu::Or, R1, R2);
    or_word(a, 4, R1);
    load48(a, R1, R2, R4, 18);
    a.alu_imm(Alu::Lsh, R1, 16);
    or_word(a, 14, R1);
    or_flag(a, flags::ARP);

    a.bind(done);
}

/// The transport header: r3 = protocol, r9 = its offset, r2 = where the
/// IP packet ends (an offset, the IP length's bound).
fn l4(a: &mut Asm, v6: bool, up: Label, done: Label) {
    a.mov(R4, R7);
    a.alu_reg(Alu::Add, R4, R9);
    let (tcp, udp, sctp, icmp, ports, l4ok) = (
        a.label(),
        a.label(),
        a.label(),
        a.label(),
        a.label(),
        a.label(),
    );
    a.jmp_imm(Cond::Eq, R3, ipproto::TCP as i32, tcp);
    a.jmp_imm(Cond::Eq, R3, ipproto::UDP as i32, udp);
    a.jmp_imm(Cond::Eq, R3, ipproto::SCTP as i32, sctp);
    let icmp_proto = if v6 { ipproto::ICMPV6 } else { ipproto::ICMP };
    a.jmp_imm(Cond::Eq, R3, icmp_proto as i32, icmp);
    a.ja(done);
    // `n` bytes of transport header within the IP packet and the frame.
    let within = |a: &mut Asm, n: i32| {
        a.mov(R1, R9);
        a.alu_imm(Alu::Add, R1, n);
        a.jmp_reg(Cond::Gt, R1, R2, done);
        need(a, R4, n, done);
    };
    a.bind(tcp);
    within(a, 20);
    a.ldx(Size::H, R1, R4, 12);
    a.be(R1, 16);
    a.mov(R5, R1);
    a.alu_imm(Alu::Rsh, R1, 12);
    a.jmp_imm(Cond::Lt, R1, 5, done);
    // tcp_flags: word 13, bits 0-11.
    a.alu_imm(Alu::And, R5, 0x0fff);
    or_word(a, 13, R5);
    a.ja(ports);
    a.bind(udp);
    within(a, 8);
    a.ja(ports);
    a.bind(sctp);
    within(a, 12);
    a.bind(ports);
    a.ldx(Size::H, R1, R4, 0);
    a.be(R1, 16);
    a.alu_imm(Alu::Lsh, R1, 48);
    a.ldx(Size::H, R5, R4, 2);
    a.be(R5, 16);
    a.alu_imm(Alu::Lsh, R5, 32);
    a.alu_reg(Alu::Or, R1, R5);
    a.ja(l4ok);
    a.bind(icmp);
    within(a, 4);
    a.ldx(Size::B, R1, R4, 0);
    if v6 {
        // Neighbour discovery: its options are not parsed here.
        a.jmp_imm(Cond::Eq, R1, 135, up);
        a.jmp_imm(Cond::Eq, R1, 136, up);
    }
    a.alu_imm(Alu::Lsh, R1, 48);
    a.ldx(Size::B, R5, R4, 1);
    a.alu_imm(Alu::Lsh, R5, 32);
    a.alu_reg(Alu::Or, R1, R5);
    a.bind(l4ok);
    or_word(a, 6, R1);
    or_flag(a, flags::L4);
    a.stx(Size::DW, FP, L4_SLOT, R9);
    a.ja(done);
}

/// Whether the generated parser sends `frame` up, and why: the same
/// decisions as [`emit`]'s jumps to `up`, in Rust (for `sluice-ctl trace`;
/// the differential test holds the two to each other).
pub fn goes_up(frame: &[u8]) -> Option<&'static str> {
    let be16 = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let tag = |t: u16| matches!(t, ethertype::VLAN | ethertype::QINQ | ethertype::QINQ_OLD);
    let mut ty = match be16(12) {
        Some(t) if frame.len() >= 14 => t,
        _ => return Some("a frame shorter than an Ethernet header"),
    };
    let mut at = 14;
    for _ in 0..2 {
        if !tag(ty) {
            break;
        }
        match be16(at + 2) {
            Some(t) => ty = t,
            None => return Some("a VLAN tag cut short"),
        }
        at += 4;
    }
    if tag(ty) {
        return Some("a third VLAN tag");
    }
    match ty {
        ethertype::MPLS | ethertype::MPLS_MCAST => Some("MPLS"),
        ethertype::PBB => Some("PBB"),
        ethertype::IPV6 => {
            let h = frame.get(at..at + 40)?;
            if h[0] >> 4 != 6 {
                return None;
            }
            let next = h[6];
            if matches!(
                next,
                ipproto::HOPOPTS
                    | ipproto::ROUTING
                    | ipproto::FRAGMENT
                    | ipproto::ESP
                    | ipproto::AH
                    | ipproto::NONE
                    | ipproto::DSTOPTS
            ) {
                return Some("IPv6 extension headers");
            }
            let l4 = at + 40;
            let end = l4 + u16::from_be_bytes([h[4], h[5]]) as usize;
            if next == ipproto::ICMPV6
                && l4 + 4 <= end
                && l4 + 4 <= frame.len()
                && matches!(frame[l4], 135 | 136)
            {
                return Some("neighbour discovery");
            }
            None
        }
        _ => None,
    }
}
