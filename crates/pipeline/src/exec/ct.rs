//! Open vSwitch's `ct` and `ct_clear` in the pipeline.
//!
//! `ct(...)` sends the packet through the pipeline's connection tracker
//! ([`conntrack::Tracker`], one per pipeline, shared by the workers) in a
//! zone (a number, or 16 bits of a field), committing the connection with
//! `commit`, setting its `ct_mark`/`ct_label` (the writes nested in
//! `exec(...)`), and translating the packet with `nat(...)`. Then, as in
//! Open vSwitch:
//!
//! - with `table=N` a copy of the packet goes on in table N (a
//!   recirculation: a lookup from table N, which drops it if no flow
//!   matches) with the connection fields set (`ct_state`, `ct_zone`,
//!   `ct_mark`, `ct_label`, the original direction's `ct_nw_*`/`ct_ipv6_*`/
//!   `ct_tp_*`); outputs, the action set and the packet's bytes are the
//!   packet's own (the copy's edits show on the actions after the `ct`:
//!   Open vSwitch's actions after it see the packet as the `ct` left it);
//! - then, with or without `table=`, the packet's connection fields are
//!   cleared (Open vSwitch's "the ct_* fields are only available in the
//!   scope of the recirc_table call chain") and the actions after the `ct`
//!   go on;
//! - a packet that is not IPv4 or IPv6 is `+trk+inv`.
//!
//! A walk that ran a `ct` depends on the tracker's state, not only on the
//! packet: it is never recorded in the walk cache ([`crate::lookup::paths`]).
//! Recirculations count against the resubmit limits (a loop of `ct` is a
//! bounded amount of work). A trace asks the tracker what it would say
//! and changes nothing ([`conntrack::Tracker::peek`]).

use super::*;
use conntrack::{state, NatKind, NatRange, NatSpec, Request, Verdict};
use ofp::ct::{Ct, CtZone};

/// The `conntrack` crate's form of a `nat(...)`.
fn nat_spec(n: &ofp::ct::Nat) -> NatSpec {
    let ip = |a: std::net::IpAddr| match a {
        std::net::IpAddr::V4(a) => u32::from(a) as u128,
        std::net::IpAddr::V6(a) => u128::from(a),
    };
    let range = match (n.src() || n.dst(), n.addrs()) {
        (true, Some((lo, hi))) => {
            let (port_min, port_max) = n.ports().unwrap_or((0, 0));
            Some(NatRange {
                kind: if n.src() { NatKind::Src } else { NatKind::Dst },
                addr_min: ip(lo),
                addr_max: ip(hi),
                port_min,
                port_max,
                random: n.flags & ofp::ct::NX_NAT_F_PROTO_RANDOM != 0,
                persistent: n.flags & ofp::ct::NX_NAT_F_PERSISTENT != 0,
            })
        }
        _ => None,
    };
    NatSpec { range }
}

/// Merges a masked write into a (value, mask) pair.
fn merge(acc: &mut Option<(u128, u128)>, value: u128, mask: u128) {
    let (v, m) = acc.unwrap_or((0, 0));
    *acc = Some(((v & !mask) | (value & mask), m | mask));
}

/// `ct_state` as the trace prints it.
pub(super) fn state_names(st: u32) -> String {
    let names: Vec<&str> = ofp::ct::state::NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| st & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    names.join("|")
}

impl Exec {
    /// Runs `ct`.
    pub(super) fn conntrack<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        ct: &Ct,
        frame: &mut B,
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        if cx.failed {
            return;
        }
        // The walk now depends on the tracker: not cached.
        cx.record = false;
        self.uncacheable = true;
        let zone = match &ct.zone {
            CtZone::Imm(z) => *z,
            CtZone::Field(sf) => (self.field_value(sf.field, frame, cx) >> sf.ofs) as u16,
        };
        let (mut mark, mut label) = (None, None);
        for a in ct.exec() {
            let (field, value, mask) = match a {
                Action::SetField(MatchEntry::Basic(o)) => {
                    (o.field, o.value, o.mask.unwrap_or(o.field.width_mask()))
                }
                Action::RegLoad(l) => {
                    let m = l.masked();
                    (l.dst, m.value, m.mask.unwrap_or(0))
                }
                Action::RegMove(m) => {
                    let v = self.field_value(m.src, frame, cx) >> m.src_ofs;
                    let mask = ofp::action::bits_mask(m.dst_ofs, m.n_bits);
                    (
                        m.dst,
                        v.checked_shl(m.dst_ofs as u32).unwrap_or(0) & mask,
                        mask,
                    )
                }
                _ => continue,
            };
            match field {
                OxmField::CtMark => merge(&mut mark, value, mask),
                OxmField::CtLabel => merge(&mut label, value, mask),
                _ => {}
            }
        }
        if cx.key_stale {
            self.reextract(frame, cx.in_port);
            cx.key_stale = false;
        }
        let req = Request {
            zone,
            commit: ct.commit(),
            force: ct.force(),
            nat: ct.nat().map(nat_spec),
            mark: mark.map(|(v, m)| (v as u32, m as u32)),
            label,
            prev_state: self.key.get(s::CT_STATE) as u32,
            prev_zone: self.key.get(s::CT_ZONE) as u16,
        };
        let flags = self.key.flags();
        let ip = match (
            self.off.l3,
            flags & packet::flags::IPV4 != 0,
            flags & packet::flags::IPV6 != 0,
        ) {
            (Some(l3), true, _) => Some((l3 as usize, false)),
            (Some(l3), _, true) => Some((l3 as usize, true)),
            _ => None,
        };
        let v = match ip {
            None => Verdict {
                state: state::TRK | state::INV,
                zone,
                ..Verdict::default()
            },
            Some((l3, v6)) => {
                if req.nat.is_some() {
                    self.before_change(frame, cx);
                }
                let tracker = &cx.snap.conntrack;
                let now_ms = cx.now_ns / 1_000_000;
                let b = &mut frame[l3..];
                if T {
                    tracker.peek(b, v6, &req, now_ms)
                } else {
                    tracker.track(b, v6, &req, now_ms)
                }
            }
        };
        if v.rewritten {
            cx.key_stale = true;
        }
        // A trace given `--ct-next` states resumes each recirculation with
        // the next of them, not with the tracker's answer.
        let mut v = v;
        let chosen = T && ct.table().is_some() && !self.ct_next.is_empty();
        if chosen {
            v.state = self.ct_next.remove(0);
        }
        self.set_ct_fields(&v);
        if T {
            let mut line = format!(
                "    -> ct_state={} ct_zone={}",
                state_names(v.state),
                v.zone
            );
            if v.mark != 0 {
                line += &format!(" ct_mark={:#x}", v.mark);
            }
            if v.label != 0 {
                line += &format!(" ct_label={:#x}", v.label);
            }
            if v.rewritten {
                line += " (translated)";
            }
            if chosen {
                line += " (--ct-next)";
            }
            if ct.commit() {
                line += " (a trace commits nothing)";
            }
            self.note(line);
        }
        if let Some(table) = ct.table() {
            self.recirculate::<T, B>(table, frame, cx, depth);
        }
        self.key.clear_ct();
    }

    /// The packet's connection fields from a verdict.
    fn set_ct_fields(&mut self, v: &Verdict) {
        let k = &mut self.key;
        k.clear_ct();
        k.set(s::CT_STATE, v.state as u64);
        k.set(s::CT_ZONE, v.zone as u64);
        k.set(s::CT_MARK, v.mark as u64);
        k.set128(s::CT_LABEL_HI, s::CT_LABEL_LO, v.label);
        if let Some(o) = v.orig {
            k.set(s::CT_NW_PROTO, o.proto as u64);
            k.set(s::CT_TP_SRC, o.sport as u64);
            k.set(s::CT_TP_DST, o.dport as u64);
            if o.is_icmp() {
                // ICMP: type and code, as Open vSwitch reports them.
                k.set(s::CT_TP_SRC, (o.dport >> 8) as u64);
                k.set(s::CT_TP_DST, (o.dport & 0xff) as u64);
            } else if !o.has_ports() {
                k.set(s::CT_TP_SRC, 0);
                k.set(s::CT_TP_DST, 0);
            }
            if o.v6 {
                k.set128(s::CT_IPV6_SRC_HI, s::CT_IPV6_SRC_LO, o.src_addr());
                k.set128(s::CT_IPV6_DST_HI, s::CT_IPV6_DST_LO, o.dst_addr());
            } else {
                k.set(s::CT_NW_SRC, o.src_addr() as u64);
                k.set(s::CT_NW_DST, o.dst_addr() as u64);
            }
        }
    }

    /// `ct(table=N)`: the tracked packet looked up from table `table`.
    fn recirculate<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        table: u8,
        frame: &mut B,
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        cx.resubmits += 1;
        if cx.resubmit_depth >= resubmit::MAX_RESUBMIT_DEPTH
            || cx.resubmits > resubmit::MAX_RESUBMITS
        {
            if T {
                self.note("    -> the packet is dropped: over the resubmit limits".into());
            }
            self.over_limit += 1;
            cx.failed = true;
            cx.dropped = true;
            return;
        }
        if T {
            self.note(format!("    -> recirculated to table {table}"));
            self.indent += 1;
        }
        let outer = (cx.table_id, cx.cookie, cx.table_miss, cx.exited);
        // A recirculation is a pipeline pass of its own: where no flow
        // matches it ends (not the packet's other branches); `exit` ends
        // it alone. It nests like a resubmit, under the same limits.
        cx.resubmit_depth += 1;
        cx.in_resubmit += 1;
        if (table as usize) < cx.snap.tables.len() {
            self.walk::<T, B>(table as usize, None, frame, cx, None, depth);
        } else if T {
            self.note(format!("{table:>2}. No such table: dropped."));
        }
        cx.resubmit_depth -= 1;
        cx.in_resubmit -= 1;
        if T {
            self.indent -= 1;
        }
        (cx.table_id, cx.cookie, cx.table_miss, cx.exited) = outer;
        // A pause in the recirculation stops the packet's other branches.
        cx.exited |= cx.paused;
        if !cx.failed {
            // A meter's drop in the copy is the copy's.
            cx.dropped = false;
        }
    }
}
