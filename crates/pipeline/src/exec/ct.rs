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
//! and changes nothing ([`conntrack::Tracker::peek`]); its recirculations
//! resume with the `--ct-next` state planned for them, else `trk|new`, as
//! Open vSwitch's trace does, and each writes its steps in a block of its
//! own ([`RecircRun`], [`CtRun`]: [`crate::trace`] prints them).

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

/// A trace's recirculation after a `ct(table=N)`: the block Open
/// vSwitch's trace prints for it.
#[derive(Debug, Clone)]
pub(crate) struct RecircRun {
    /// The block that queued it: 0 the packet's first pass, `i + 1` the
    /// `i`th recirculation.
    pub parent: usize,
    /// Where it is in the tree of recirculations: its parent's path, then
    /// its place among those its parent queued (from 0). The same pass
    /// traced again with other states gives the same path to the same
    /// `ct`, as long as the passes before it went the same way.
    pub path: Vec<u32>,
    /// The table it resumes from.
    pub table: u8,
    /// The `--ct-next` state it resumes with (None: the default
    /// `trk|new`).
    pub given: Option<u32>,
    /// The packet's key and bytes as it resumes (connection fields set).
    pub key: FlowKey,
    pub frame: Vec<u8>,
    /// For a `ct` with `nat`, how Open vSwitch's trace simulates it: the
    /// packet's addresses and ports, then the same with the first address
    /// and port of the range put in (`nat_lines`).
    pub nat: Option<(String, String)>,
    /// Its steps, as a pass of their own.
    pub steps: Vec<String>,
    /// The outputs it made: `outputs[outs.0..outs.1]`, less those of the
    /// recirculations it queued.
    pub outs: (usize, usize),
    /// The key as it ended.
    pub final_key: FlowKey,
}

/// A trace's `ct`, for the datapath actions of its block.
#[derive(Debug, Clone)]
pub(crate) struct CtRun {
    /// The block it ran in (as [`RecircRun::parent`]).
    pub block: usize,
    /// It came before the output of this index (and after those before).
    pub before_output: usize,
    /// The packet as the `ct` got it (the block's changes so far are
    /// committed before it), and as it left it (NAT's translation is the
    /// datapath `ct`'s own: no set action writes it).
    pub frame: Vec<u8>,
    pub after: Vec<u8>,
    /// Open vSwitch's datapath action: `ct(commit,zone=5,mark=0x1/0xff)`.
    pub text: String,
    /// The recirculation it queued, an index in the trace's list.
    pub recirc: Option<usize>,
}

/// A `ct` as Open vSwitch's datapath action writes it
/// (`format_odp_conntrack_action`): `ct`, or `ct(` commit, zone, the mark
/// and label `exec` writes (value/mask), `nat(...)` `)`.
pub(crate) fn odp_ct(
    ct: &Ct,
    zone: u16,
    mark: Option<(u128, u128)>,
    label: Option<(u128, u128)>,
) -> String {
    let mut parts = Vec::new();
    if ct.force() {
        parts.push("force_commit".to_string());
    } else if ct.commit() {
        parts.push("commit".to_string());
    }
    if zone != 0 {
        parts.push(format!("zone={zone}"));
    }
    if let Some((v, m)) = mark.filter(|(_, m)| *m != 0) {
        parts.push(format!("mark={:#x}/{:#x}", v & m, m));
    }
    if let Some((v, m)) = label.filter(|(_, m)| *m != 0) {
        parts.push(format!("label={:#x}/{:#x}", v & m, m));
    }
    if let Some(n) = ct.nat() {
        parts.push(odp_nat(n));
    }
    if parts.is_empty() {
        "ct".into()
    } else {
        format!("ct({})", parts.join(","))
    }
}

/// What Open vSwitch's trace prints of a recirculation after `nat`
/// (`oftrace_print_ip_flow`): the packet's addresses and ports before,
/// and with the range's first address (and port, if it has ports) put in
/// the source or destination; both empty for a `nat` without a range.
fn nat_lines(n: &ofp::ct::Nat, k: &FlowKey) -> (String, String) {
    let Some((lo, _)) = n.addrs() else {
        return (String::new(), String::new());
    };
    let port = n.ports().map(|(p, _)| p);
    let v6 = lo.is_ipv6();
    let addr = |hi: packet::Slot, lo_: packet::Slot, v4: packet::Slot| -> std::net::IpAddr {
        if v6 {
            std::net::Ipv6Addr::from((k.get(hi) as u128) << 64 | k.get(lo_) as u128).into()
        } else {
            std::net::Ipv4Addr::from(k.get(v4) as u32).into()
        }
    };
    let mut src = (
        addr(s::IPV6_SRC_HI, s::IPV6_SRC_LO, s::NW_SRC),
        k.get(s::TP_SRC) as u16,
    );
    let mut dst = (
        addr(s::IPV6_DST_HI, s::IPV6_DST_LO, s::NW_DST),
        k.get(s::TP_DST) as u16,
    );
    let text = |src: (std::net::IpAddr, u16), dst: (std::net::IpAddr, u16)| match (src.0, dst.0) {
        (std::net::IpAddr::V6(a), std::net::IpAddr::V6(b)) => {
            format!(
                "ipv6_src=[{a}],tp_src={},ipv6_dst=[{b}],tp_dst={}",
                src.1, dst.1
            )
        }
        (a, b) => format!("nw_src={a},tp_src={},nw_dst={b},tp_dst={}", src.1, dst.1),
    };
    let initial = text(src, dst);
    let side = if n.src() {
        Some(&mut src)
    } else if n.dst() {
        Some(&mut dst)
    } else {
        None
    };
    if let Some(side) = side {
        side.0 = lo;
        if let Some(p) = port {
            side.1 = p;
        }
    }
    (initial, text(src, dst))
}

/// A `nat(...)` as Open vSwitch's datapath action writes it
/// (`format_odp_ct_nat`): `nat`, or `nat(src=A-B:P-Q,persistent,random)`.
fn odp_nat(n: &ofp::ct::Nat) -> String {
    use ofp::ct::{NX_NAT_F_PERSISTENT, NX_NAT_F_PROTO_HASH, NX_NAT_F_PROTO_RANDOM};
    let kind = if n.src() {
        "src"
    } else if n.dst() {
        "dst"
    } else {
        return "nat".into();
    };
    let mut s = format!("nat({kind}");
    if let Some((lo, hi)) = n.addrs() {
        let ports = n.ports();
        let addr = |a: std::net::IpAddr| match a {
            std::net::IpAddr::V6(a) if ports.is_some() => format!("[{a}]"),
            a => a.to_string(),
        };
        s += &format!("={}", addr(lo));
        if hi != lo {
            s += &format!("-{}", addr(hi));
        }
        if let Some((p, q)) = ports.filter(|(p, _)| *p != 0) {
            s += &format!(":{p}");
            if q != p && q != 0 {
                s += &format!("-{q}");
            }
        }
    }
    for (flag, name) in [
        (NX_NAT_F_PERSISTENT, "persistent"),
        (NX_NAT_F_PROTO_HASH, "hash"),
        (NX_NAT_F_PROTO_RANDOM, "random"),
    ] {
        if n.flags & flag != 0 {
            s += &format!(",{name}");
        }
    }
    s + ")"
}

impl Exec {
    /// The path ([`RecircRun::path`]) of the next recirculation the
    /// current block queues.
    fn next_path(&self) -> Vec<u32> {
        let mut path = match self.block {
            0 => Vec::new(),
            b => self.recircs[b - 1].path.clone(),
        };
        path.push(
            self.recircs
                .iter()
                .filter(|r| r.parent == self.block)
                .count() as u32,
        );
        path
    }

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
        // The packet before the tracker translates it, for a trace's
        // account of NAT.
        let before = T.then_some(self.key);
        let before_frame = if T { frame[..].to_vec() } else { Vec::new() };
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
        // A trace resumes each recirculation as Open vSwitch's does: with
        // the next `--ct-next` state given, else `trk|new` (the tracker's
        // answer, asked without changing it, gives the rest: zone, mark,
        // label, the original direction).
        let mut v = v;
        let mut given = None;
        if T && ct.table().is_some() {
            let path = self.next_path();
            given = self
                .ct_plan
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, st)| *st);
            v.state = given.unwrap_or(state::TRK | state::NEW);
        }
        self.set_ct_fields(&v);
        if T {
            // As Open vSwitch lists them: the nested actions (`drop` for
            // none), then what the `ct` does to this pass.
            let mut nested: Vec<String> = ct.exec().map(ofp::text::format_action).collect();
            if ct.nat().is_some() {
                nested.push("nat".into());
            }
            if nested.is_empty() {
                nested.push("drop".into());
            }
            for n in nested {
                self.note(n);
            }
            if let Some(table) = ct.table() {
                self.note(format!(
                    " -> A clone of the packet is forked to recirculate. The forked pipeline will be resumed at table {table}."
                ));
            }
            self.note(
                " -> Sets the packet to an untracked state, and clears all the conntrack fields."
                    .into(),
            );
            // The recirculation's flow is the packet as the tracker left it
            // (translated by NAT): read now, as the walk would read it.
            if cx.key_stale && ct.table().is_some() {
                self.reextract(&frame[..], cx.in_port);
                cx.key_stale = false;
            }
            let recirc = ct.table().map(|table| {
                self.recircs.push(RecircRun {
                    path: self.next_path(),
                    parent: self.block,
                    table,
                    given,
                    key: self.key,
                    frame: frame[..].to_vec(),
                    nat: ct.nat().zip(before).map(|(n, k)| nat_lines(n, &k)),
                    steps: Vec::new(),
                    outs: (0, 0),
                    final_key: self.key,
                });
                self.recircs.len() - 1
            });
            self.cts.push(CtRun {
                block: self.block,
                before_output: self.outputs.len(),
                frame: before_frame,
                after: frame[..].to_vec(),
                text: odp_ct(ct, zone, mark, label),
                recirc,
            });
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
                self.note(" -> the packet is dropped: over the resubmit limits".into());
                // No block for a recirculation that does not run.
                self.recircs.pop();
                if let Some(c) = self.cts.last_mut() {
                    c.recirc = None;
                }
            }
            self.over_limit += 1;
            cx.failed = true;
            cx.dropped = true;
            return;
        }
        // A trace writes the recirculation's steps in a block of its own
        // (the last `RecircRun`, just pushed), as Open vSwitch traces each
        // recirculation after the pass that queued it.
        let mut saved = None;
        if T {
            let me = self.recircs.len() - 1;
            self.recircs[me].outs.0 = self.outputs.len();
            saved = Some((
                std::mem::take(&mut self.log),
                std::mem::replace(&mut self.indent, 0),
                std::mem::replace(&mut self.block, me + 1),
            ));
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
        if let Some((log, indent, block)) = saved {
            let me = self.block - 1;
            let mut end = self.key;
            end.set(s::METADATA, self.metadata);
            packet::extract(&frame[..], cx.in_port, &mut end);
            end.set_tunnel(&self.tun);
            let r = &mut self.recircs[me];
            r.outs.1 = self.outputs.len();
            r.final_key = end;
            r.steps = std::mem::replace(&mut self.log, log);
            (self.indent, self.block) = (indent, block);
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
