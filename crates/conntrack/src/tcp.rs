//! TCP state and sequence-window tracking.
//!
//! The algorithm is the one Open vSwitch's userspace tracker and OpenBSD's
//! pf use (Guido van Rooij, "Real Stateful TCP Packet Filtering in IP
//! Filter"): each end's highest sequence number sent (`seqlo`) and the
//! highest the other end's ACK plus window allows (`seqhi`); a segment is
//! in the window when its last byte is at most `seqhi`, its first no more
//! than one window behind `seqlo`, and its ACK neither more than one
//! window ahead of nor far behind what was sent. A segment outside is
//! invalid; so is a bad combination of flags (SYN with RST or FIN; FIN,
//! PSH or URG without ACK; neither ACK nor RST without SYN). A connection
//! picked up in the middle (its first packet not a SYN) is tracked with
//! window scaling unknown: the largest scale is assumed, as Open vSwitch
//! does, so that its packets are not refused.

use crate::key::{tcp_flags as f, Tcp};

/// One end's state, in the order a connection goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
#[repr(u8)]
pub enum PeerState {
    #[default]
    Closed = 0,
    SynSent = 1,
    Established = 2,
    /// This end sent a FIN.
    Closing = 3,
    /// This end's FIN was acknowledged.
    FinWait2 = 4,
    TimeWait = 5,
}

const WSCALE_KNOWN: u8 = 0x80;
const WSCALE_UNKNOWN: u8 = 0x40;
const WSCALE_MASK: u8 = 0x0f;
const MAX_WSCALE: u8 = 14;
/// How far an ACK may lag (a window of 64 KiB and one MTU).
const MAX_ACK_WINDOW: i64 = 0xffff + 1500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Peer {
    seqlo: u32,
    seqhi: u32,
    max_win: u16,
    wscale: u8,
    pub state: PeerState,
}

/// A tracked TCP connection: the originator's end, then the responder's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpConn {
    pub peer: [Peer; 2],
    /// A reset closed it (the short "close" timeout applies).
    pub reset: bool,
}

/// What a segment did to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// In the window: the connection is established (or closing).
    Valid,
    /// In the window, but the connection is still opening (a repeated SYN).
    ValidNew,
    /// Outside the window or with bad flags.
    Invalid,
    /// A SYN after both ends closed: the old connection is over, this
    /// packet opens a new one.
    Reopen,
}

/// The timeout class a connection is in now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Opening,
    Established,
    Closing,
    TimeWait,
    Close,
}

fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}
fn seq_le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}
fn seq_ge(a: u32, b: u32) -> bool {
    seq_le(b, a)
}
fn seq_gt(a: u32, b: u32) -> bool {
    seq_lt(b, a)
}

/// Whether a combination of flags is one no TCP sends.
pub fn bad_flags(fl: u16) -> bool {
    if fl & f::SYN != 0 {
        if fl & (f::RST | f::FIN) != 0 {
            return true;
        }
    } else if fl & (f::ACK | f::RST) == 0 {
        return true;
    }
    fl & f::ACK == 0 && fl & (f::FIN | f::PSH | f::URG) != 0
}

/// Whether a segment may open a connection: good flags and not a SYN-ACK
/// (a half-open connection is not picked up; an established one is).
pub fn valid_new(t: &Tcp) -> bool {
    !(bad_flags(t.flags) || (t.flags & f::SYN != 0 && t.flags & f::ACK != 0))
}

/// The bytes of sequence space a segment uses (data, SYN, FIN).
fn seq_len(t: &Tcp) -> u32 {
    t.payload
        .wrapping_add((t.flags & f::SYN != 0) as u32)
        .wrapping_add((t.flags & f::FIN != 0) as u32)
}

/// A segment taken: the sender's largest window and highest sequence
/// number, and how far the receiver may now send.
fn slide(src: &mut Peer, dst: &mut Peer, win: u32, end: u32, ack: u32, swin: u32) {
    if (src.max_win as u32) < win {
        src.max_win = win.min(u16::MAX as u32) as u16;
    }
    if seq_gt(end, src.seqlo) {
        src.seqlo = end;
    }
    if seq_ge(ack.wrapping_add(swin), dst.seqhi) {
        dst.seqhi = ack.wrapping_add(swin.max(1));
    }
}

impl TcpConn {
    /// A reset taken: both ends closed.
    fn reset_both(&mut self, src: &mut Peer, dst: &mut Peer) {
        src.state = PeerState::TimeWait;
        dst.state = PeerState::TimeWait;
        self.reset = true;
    }

    /// The connection a first segment (`valid_new`) opens.
    pub fn new(t: &Tcp) -> TcpConn {
        let mut c = TcpConn::default();
        let (src, dst) = c.peer.split_at_mut(1);
        let (src, dst) = (&mut src[0], &mut dst[0]);
        src.seqlo = t.seq;
        src.seqhi = t.seq.wrapping_add(seq_len(t)).wrapping_add(1);
        if t.flags & f::SYN != 0 {
            src.wscale = t.wscale.map_or(0, |w| w.min(MAX_WSCALE) | WSCALE_KNOWN);
        } else {
            src.wscale = WSCALE_UNKNOWN;
            dst.wscale = WSCALE_UNKNOWN;
        }
        src.max_win = t.win.max(1);
        let sws = src.wscale & WSCALE_MASK;
        if src.wscale & WSCALE_KNOWN != 0 && sws > 0 {
            src.max_win = (src.max_win as u32).div_ceil(1 << sws).max(1) as u16;
        }
        dst.seqhi = 1;
        dst.max_win = 1;
        src.state = PeerState::SynSent;
        dst.state = PeerState::Closed;
        c
    }

    /// The timeout class now.
    pub fn phase(&self) -> Phase {
        let [a, b] = self.peer;
        if self.reset {
            Phase::Close
        } else if a.state >= PeerState::FinWait2 && b.state >= PeerState::FinWait2 {
            Phase::TimeWait
        } else if a.state >= PeerState::Closing || b.state >= PeerState::Closing {
            Phase::Closing
        } else if a.state < PeerState::Established || b.state < PeerState::Established {
            Phase::Opening
        } else {
            Phase::Established
        }
    }

    /// Tracks a segment sent by the originator (`reply` false) or the
    /// responder.
    pub fn update(&mut self, reply: bool, t: &Tcp) -> Update {
        if bad_flags(t.flags) {
            return Update::Invalid;
        }
        let (si, di) = if reply { (1, 0) } else { (0, 1) };
        let fl = t.flags;
        if fl & (f::SYN | f::ACK) == f::SYN {
            let (s, d) = (self.peer[si].state, self.peer[di].state);
            if s >= PeerState::FinWait2 && d >= PeerState::FinWait2 {
                self.peer[si].state = PeerState::Closed;
                self.peer[di].state = PeerState::Closed;
                return Update::Reopen;
            }
            if s <= PeerState::SynSent {
                self.peer[si].state = PeerState::SynSent;
                return Update::ValidNew;
            }
        }
        let mut src = self.peer[si];
        let mut dst = self.peer[di];
        let mut win = t.win as u32;
        let (mut sws, mut dws) = (0u8, 0u8);
        if fl & f::SYN == 0 {
            if src.wscale & WSCALE_KNOWN != 0 && dst.wscale & WSCALE_KNOWN != 0 {
                sws = src.wscale & WSCALE_MASK;
                dws = dst.wscale & WSCALE_MASK;
            } else if src.wscale & WSCALE_UNKNOWN != 0 && dst.wscale & WSCALE_UNKNOWN != 0 {
                sws = MAX_WSCALE;
                dws = MAX_WSCALE;
            }
        }
        let orig_seq = t.seq;
        let mut seq = t.seq;
        let ack_in = t.ack;
        let mut end = seq.wrapping_add(seq_len(t));
        let mut strict_ack = true;
        if src.state < PeerState::SynSent {
            // This end's first segment (the responder's SYN-ACK).
            if fl & f::SYN != 0 && dst.wscale & WSCALE_KNOWN != 0 {
                match t.wscale {
                    Some(w) => {
                        src.wscale = w.min(MAX_WSCALE) | WSCALE_KNOWN;
                        sws = src.wscale & WSCALE_MASK;
                        win = win.div_ceil(1 << sws);
                        dws = dst.wscale & WSCALE_MASK;
                    }
                    None => {
                        // Scaling is off for both: undo the other's.
                        dst.max_win = ((dst.max_win as u32) << (dst.wscale & WSCALE_MASK))
                            .min(u16::MAX as u32) as u16;
                        dst.wscale = 0;
                    }
                }
            }
            src.seqlo = seq;
            src.state = PeerState::SynSent;
            let reach = end.wrapping_add(((dst.max_win as u32) << dws).max(1));
            if src.seqhi == 1 || seq_ge(reach, src.seqhi) {
                src.seqhi = reach;
                strict_ack = false;
            }
            if win > src.max_win as u32 {
                src.max_win = win.min(u16::MAX as u32) as u16;
            }
        }
        let ack = if fl & f::ACK == 0 || (ack_in == 0 && fl & (f::ACK | f::RST) == f::ACK | f::RST)
        {
            dst.seqlo
        } else {
            ack_in
        };
        if seq == end {
            // No data: ease the sequence checks.
            seq = src.seqlo;
            end = seq;
        }
        let ackskew: i64 = if strict_ack {
            dst.seqlo.wrapping_sub(ack) as i32 as i64
        } else {
            0
        };
        let back = src
            .seqlo
            .wrapping_sub(((dst.max_win as u32) << dws).min(u32::MAX >> 1));
        let rst_ok = fl & f::RST == 0
            || orig_seq == src.seqlo
            || orig_seq == src.seqlo.wrapping_add(1)
            || orig_seq.wrapping_add(1) == src.seqlo;
        let in_window = seq_ge(src.seqhi, end)
            && seq_ge(seq, back)
            && ackskew >= -MAX_ACK_WINDOW
            && ackskew <= (MAX_ACK_WINDOW << sws)
            && rst_ok;
        let swin = win << sws;
        if in_window {
            slide(&mut src, &mut dst, win, end, ack, swin);
            if fl & f::SYN != 0 && src.state < PeerState::SynSent {
                src.state = PeerState::SynSent;
            }
            if fl & f::FIN != 0 && src.state < PeerState::Closing {
                src.state = PeerState::Closing;
            }
            if fl & f::ACK != 0 {
                if dst.state == PeerState::SynSent {
                    dst.state = PeerState::Established;
                } else if dst.state == PeerState::Closing {
                    dst.state = PeerState::FinWait2;
                }
            }
            if fl & f::RST != 0 {
                self.reset_both(&mut src, &mut dst);
            }
        } else if (dst.state < PeerState::SynSent
            || dst.state >= PeerState::FinWait2
            || src.state >= PeerState::FinWait2)
            && seq_ge(src.seqhi.wrapping_add(MAX_ACK_WINDOW as u32), end)
            && seq_ge(seq, src.seqlo.wrapping_sub(MAX_ACK_WINDOW as u32))
        {
            // Loosely in the window: SYNs repeated before the peer
            // answered, a stream picked up late, stray segments after a
            // close. Sequencing follows; the states advance only on FIN
            // and RST.
            slide(&mut src, &mut dst, win, end, ack, swin);
            if fl & f::FIN != 0 && src.state < PeerState::Closing {
                src.state = PeerState::Closing;
            }
            if fl & f::RST != 0 {
                self.reset_both(&mut src, &mut dst);
            }
        } else {
            return Update::Invalid;
        }
        self.peer[si] = src;
        self.peer[di] = dst;
        Update::Valid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(flags: u16, seq: u32, ack: u32, payload: u32) -> Tcp {
        Tcp {
            flags,
            seq,
            ack,
            win: 65535,
            wscale: if flags & f::SYN != 0 { Some(7) } else { None },
            payload,
        }
    }

    #[test]
    fn handshake_data_and_close() {
        let syn = seg(f::SYN, 1000, 0, 0);
        assert!(valid_new(&syn));
        let mut c = TcpConn::new(&syn);
        assert_eq!(c.phase(), Phase::Opening);
        assert_eq!(c.update(false, &syn), Update::ValidNew, "a repeated SYN");
        assert_eq!(
            c.update(true, &seg(f::SYN | f::ACK, 5000, 1001, 0)),
            Update::Valid
        );
        assert_eq!(c.update(false, &seg(f::ACK, 1001, 5001, 0)), Update::Valid);
        assert_eq!(c.phase(), Phase::Established);
        assert_eq!(
            c.update(false, &seg(f::ACK | f::PSH, 1001, 5001, 100)),
            Update::Valid
        );
        assert_eq!(c.update(true, &seg(f::ACK, 5001, 1101, 0)), Update::Valid);
        // Far outside the window.
        assert_eq!(
            c.update(false, &seg(f::ACK, 1101 + 0x4000_0000, 5001, 10)),
            Update::Invalid
        );
        assert_eq!(
            c.update(false, &seg(f::FIN | f::ACK, 1101, 5001, 0)),
            Update::Valid
        );
        assert_eq!(c.phase(), Phase::Closing);
        assert_eq!(
            c.update(true, &seg(f::FIN | f::ACK, 5001, 1102, 0)),
            Update::Valid
        );
        assert_eq!(c.update(false, &seg(f::ACK, 1102, 5002, 0)), Update::Valid);
        assert_eq!(c.phase(), Phase::TimeWait);
        assert_eq!(c.update(false, &seg(f::SYN, 9000, 0, 0)), Update::Reopen);
    }

    #[test]
    fn bad_flags_are_invalid() {
        assert!(bad_flags(f::SYN | f::FIN));
        assert!(bad_flags(f::SYN | f::RST));
        assert!(bad_flags(f::FIN));
        assert!(bad_flags(0));
        assert!(!bad_flags(f::RST));
        assert!(!bad_flags(f::ACK | f::FIN));
        assert!(!valid_new(&seg(f::SYN | f::ACK, 1, 1, 0)));
        assert!(valid_new(&seg(f::ACK, 1, 1, 0)), "picked up mid-stream");
    }

    #[test]
    fn reset_closes() {
        let mut c = TcpConn::new(&seg(f::SYN, 10, 0, 0));
        assert_eq!(
            c.update(true, &seg(f::SYN | f::ACK, 50, 11, 0)),
            Update::Valid
        );
        assert_eq!(
            c.update(true, &seg(f::RST | f::ACK, 51, 11, 0)),
            Update::Valid
        );
        assert_eq!(c.phase(), Phase::Close);
    }
}
