//! Open vSwitch's `learn`: the flow a packet teaches ([`ofp::learn`]).
//!
//! The worker builds the flow from the packet as it is when the action
//! runs (its headers, registers and ingress port) and hands it to the
//! control plane ([`Worker::take_learned`]); it never changes the tables
//! itself (the pipeline knows no threads, the tables have one writer).
//! The control plane adds it ([`crate::Pipeline::learn`]), within the
//! limits that keep a flood of distinct packets from filling the tables.
//! The learned flow is seen by the packets after it is published, not by
//! the one that taught it; until then the worker that taught it holds it
//! for its own next packets ([`super::unpublished`]), as Open vSwitch, which
//! adds it at once, lets the next packet see it.
//!
//! A learned match holds the packet's bits for each spec; the fields'
//! OpenFlow prerequisites (eth_type for an IP address, ip_proto for a
//! port) are added from the packet where the specs leave them out, since
//! an OXM match cannot name a port without its protocol. Open vSwitch
//! matches the bare field; for a packet of that protocol the two agree.
//!
//! Each worker forgets a flow it taught in the last second
//! ([`RELEARN_NS`]): the packets of one connection teach the same flow
//! over and over, and only the first one needs to reach the control plane.
//!
//! [`Worker::take_learned`]: super::Worker::take_learned

use std::collections::HashMap;

use ofp::action::{bits_mask, Action, LoadForm, RegLoad};
use ofp::learn::{flags, Learn, LearnDst, LearnSrc};
use ofp::msg::flow::{flow_mod_flags, FlowMod, FlowModCommand};
use ofp::oxm::{Match, MatchEntry, Oxm, OxmField};
use ofp::resubmit::Resubmit;
use ofp::Instruction;

use crate::lookup::classifier::RuleId;

/// A flow a packet taught, for the control plane to add.
#[derive(Debug, Clone, PartialEq)]
pub struct Learned {
    /// An ADD of the learned flow.
    pub flow_mod: FlowMod,
    /// The flow whose `learn` action taught it (for `delete_learned` and
    /// `limit`).
    pub learner: RuleId,
    pub delete_learned: bool,
    /// Most flows the learner may have taught that are still installed
    /// (0: no limit).
    pub limit: u32,
    /// The worker that holds the flow until it is published, and its
    /// sequence number there (0: no worker holds it), for the control
    /// plane to acknowledge ([`super::unpublished`]).
    pub worker: usize,
    pub seq: u64,
}

/// How long a worker keeps a flow it taught from being taught again.
pub const RELEARN_NS: u64 = 1_000_000_000;

/// Flows a worker remembers having taught (a bound on its memory).
const REMEMBERED: usize = 4096;

/// Flows a worker has taught and not yet handed over (a bound on its
/// memory between two hand-overs; more are dropped and counted).
pub const PENDING_MAX: usize = 1024;

/// The learned flows of one worker.
#[derive(Default)]
pub(super) struct Teach {
    pub(super) pending: Vec<Learned>,
    recent: HashMap<u64, u64>,
    /// Flows not handed over because `PENDING_MAX` were waiting.
    pub(super) dropped: u64,
    /// Flows not handed over because this worker taught them within
    /// [`RELEARN_NS`].
    pub(super) repeated: u64,
}

impl Teach {
    /// Queues `l` unless it was taught lately.
    pub(super) fn push(&mut self, l: Learned, now_ns: u64) {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        l.flow_mod.table_id.hash(&mut h);
        l.flow_mod.priority.hash(&mut h);
        l.flow_mod.match_.hash(&mut h);
        l.flow_mod.instructions.hash(&mut h);
        l.learner.hash(&mut h);
        let key = h.finish();
        if let Some(&t) = self.recent.get(&key) {
            if now_ns.saturating_sub(t) < RELEARN_NS {
                self.repeated += 1;
                return;
            }
        }
        if self.pending.len() >= PENDING_MAX {
            self.dropped += 1;
            return;
        }
        if self.recent.len() >= REMEMBERED {
            self.recent.clear();
        }
        self.recent.insert(key, now_ns);
        self.pending.push(l);
    }

    /// Heap bytes held (the memory of recent flows, the pending list; not
    /// what the pending flows point to).
    pub(super) fn heap_bytes(&self) -> usize {
        self.recent.capacity() * (std::mem::size_of::<(u64, u64)>() + 1)
            + self.pending.capacity() * std::mem::size_of::<Learned>()
    }
}

/// The bits `[ofs, ofs + n)` of `v`.
fn bits(v: u128, ofs: u16, n: u16) -> u128 {
    v.checked_shr(ofs as u32).unwrap_or(0) & bits_mask(0, n)
}

/// Builds the flow `l` teaches, reading the packet's fields with `read`.
pub(super) fn build(l: &Learn, learner: RuleId, mut read: impl FnMut(OxmField) -> u128) -> Learned {
    // Each matched field's value and mask, in the order first named.
    let mut fields: Vec<(OxmField, u128, u128)> = Vec::new();
    let mut actions = Vec::new();
    for s in &l.specs {
        let v = match s.src {
            LearnSrc::Field(f, ofs) => bits(read(f), ofs, s.n_bits),
            LearnSrc::Immediate(v) => v,
        };
        match s.dst {
            LearnDst::Match(f, ofs) => {
                let m = bits_mask(ofs, s.n_bits);
                let v = v.checked_shl(ofs as u32).unwrap_or(0) & m;
                match fields.iter_mut().find(|e| e.0 == f) {
                    Some(e) => {
                        e.1 = (e.1 & !m) | v;
                        e.2 |= m;
                    }
                    None => fields.push((f, v, m)),
                }
            }
            LearnDst::Load(f, ofs) => actions.push(Action::RegLoad(RegLoad {
                dst: f,
                ofs,
                n_bits: s.n_bits,
                value: v,
                form: LoadForm::RegLoad,
            })),
            LearnDst::Output => {
                let port = match s.src {
                    // The 16-bit port field: Open vSwitch's numbering.
                    LearnSrc::Field(OxmField::NxmInPort, _) => Resubmit::port_from_u16(v as u16),
                    _ => v as u32,
                };
                actions.push(Action::Output { port, max_len: 0 })
            }
        }
    }
    let mut m = Match::new();
    for (f, v, mask) in fields {
        push_match(&mut m, f, v, mask);
    }
    add_prerequisites(&mut m, &mut read);
    let mut fm = FlowMod {
        command: FlowModCommand::Add,
        table_id: l.table_id,
        priority: l.priority,
        cookie: l.cookie,
        idle_timeout: l.idle_timeout,
        hard_timeout: l.hard_timeout,
        match_: m,
        ..FlowMod::default()
    };
    if l.flags & flags::SEND_FLOW_REM != 0 {
        fm.flags |= flow_mod_flags::SEND_FLOW_REM;
    }
    if !actions.is_empty() {
        fm.instructions = vec![Instruction::ApplyActions(actions)];
    }
    Learned {
        flow_mod: fm,
        learner,
        delete_learned: l.flags & flags::DELETE_LEARNED != 0,
        limit: l.limit,
        worker: 0,
        seq: 0,
    }
}

/// Adds field `f` = `v`/`mask` to `m` as an OpenFlow 1.3 match holds it:
/// registers one by one, the TCI as vlan_vid and vlan_pcp, the 16-bit
/// ingress port as in_port.
fn push_match(m: &mut Match, f: OxmField, v: u128, mask: u128) {
    let oxm = |f: OxmField, v: u128, mask: u128| {
        let full = f.width_mask();
        let mask = mask & full;
        MatchEntry::Basic(if mask == full || mask == f.full_mask() {
            Oxm::exact(f, v & mask)
        } else {
            Oxm::masked(f, v & mask, mask)
        })
    };
    if let Some((first, n @ 2..)) = f.regs() {
        for (i, r) in (first..first + n).enumerate() {
            let shift = 32 * (n as u32 - 1 - i as u32);
            let rm = (mask >> shift) & 0xffff_ffff;
            if rm != 0 {
                m.entries.push(oxm(OxmField::Reg(r), (v >> shift) & rm, rm));
            }
        }
        return;
    }
    match f {
        OxmField::VlanTci => {
            let (vid, vmask) = (v & 0x1fff, mask & 0x1fff);
            if vmask != 0 {
                m.entries.push(oxm(OxmField::VlanVid, vid, vmask));
            }
            if mask & 0xe000 != 0 && vid & 0x1000 != 0 {
                m.entries.push(oxm(OxmField::VlanPcp, v >> 13, 7));
            }
        }
        OxmField::NxmInPort => m.entries.push(MatchEntry::Basic(Oxm::exact(
            OxmField::InPort,
            Resubmit::port_from_u16(v as u16) as u128,
        ))),
        _ => m.entries.push(oxm(f, v, mask)),
    }
}

/// Adds, from the packet, the exact fields the match's prerequisites ask
/// for and the specs left out (eth_type, then ip_proto, then the ICMPv6
/// type for ND fields).
fn add_prerequisites(m: &mut Match, read: &mut impl FnMut(OxmField) -> u128) {
    for _ in 0..3 {
        let mut missing = None;
        for o in m.basic() {
            for (need, _) in o.field.prerequisites() {
                if m.get(*need).is_none() {
                    missing = Some(*need);
                }
            }
        }
        match missing {
            Some(f) => m.entries.push(MatchEntry::Basic(Oxm::exact(f, read(f)))),
            None => return,
        }
    }
}
