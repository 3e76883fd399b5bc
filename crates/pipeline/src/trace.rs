//! `trace`: what the pipeline would do with one packet, step by step, the
//! way Open vSwitch's `ofproto/trace` tells it.
//!
//! A trace runs the packet through a published [`Snapshot`] with the same
//! code as the fast path (the executor is generic over tracing, so the
//! fast path carries no trace code), but changes nothing: no rule, table or
//! group counter moves, no meter is charged, no cache is filled. The
//! result names, for every table visited, the rule that matched (or the
//! miss), each instruction and action as it ran, the buckets a group took,
//! where each output went, the packet's final flow, the datapath actions
//! a datapath would run for it ([`datapath`]), and the flows its `learn`
//! actions taught (handed back, for `-generate`, never added here).
//! [`ovs_layout`] lays the steps out as `ofproto/trace` does.
//!
//! A `ct(table=N)` splits the trace into blocks, as Open vSwitch's trace
//! splits it: the packet's first pass ends its block with the `ct`'s
//! datapath actions (`ct(commit,zone=5),recirc(0x1)`), and each
//! recirculation is a block of its own after it, in the order Open
//! vSwitch queues them (those the first pass queued, then those each of
//! them queued, and so on), numbered `recirc(0x1)`, `recirc(0x2)`, ... in
//! that order (Open vSwitch's ids come from its running pool: the same
//! order, other numbers). A recirculation resumes with the next
//! `--ct-next` state, else `trk|new`, as Open vSwitch's trace assumes;
//! its `Flow:` is the packet as the `ct` left it, with `recirc_id` and the
//! connection fields (state, zone, mark, label; not the original
//! direction's tuple). sluice runs the recirculation where the `ct` is
//! (the pass after the `ct` sees the packet as the recirculation left
//! it); only the text is laid out in Open vSwitch's order.

use packet::{FlowKey, TunnelDst, TunnelMeta};

use crate::describe::{describe_key, describe_tunnel};
use crate::exec::{trace_run, CtRun, Learned, RecircRun};
use crate::snapshot::{Output, Snapshot};

mod datapath;
mod layout;
mod options;
use datapath::{commit, Headers};
pub use layout::ovs_layout;
pub use options::{parse_ct_state, Options};

/// The account of one packet's trip through the pipeline.
#[derive(Debug, Clone)]
pub struct Trace {
    /// What happened, one line per step, indented by nesting.
    pub steps: Vec<String>,
    /// Where copies of the packet went (reserved ports unresolved:
    /// CONTROLLER, LOCAL and NORMAL are reported as such).
    pub outputs: Vec<Output>,
    /// The packet as it left the last action.
    pub final_frame: Vec<u8>,
    /// Its flow key then (registers and metadata included).
    pub final_key: FlowKey,
    /// The packet as it came in.
    pub frame: Vec<u8>,
    /// The flows its `learn` actions taught, for the control plane to add
    /// when the trace is to have side effects (`ofproto/trace -generate`:
    /// [`crate::Pipeline::learn`], as a packet's are); nothing is added
    /// otherwise.
    pub learned: Vec<Learned>,
    /// Its recirculations, in the order they began (each with its
    /// steps), and its `ct`s.
    recircs: Vec<RecircRun>,
    cts: Vec<CtRun>,
    /// The switch's ports, when the caller said ([`Trace::set_ports`]):
    /// an output to another port number leaves nothing in the datapath
    /// actions.
    ports: Option<Vec<u32>>,
}

/// Recirculations (indices in `recircs`) in Open vSwitch's queue order:
/// those the first pass queued, then those each of them queued, and so
/// on (`recircs` is in the order they began: each after its parent).
pub(crate) fn queue_order(recircs: &[RecircRun]) -> Vec<usize> {
    let mut order = Vec::with_capacity(recircs.len());
    let mut parents = vec![0usize];
    let mut at = 0;
    while at < parents.len() {
        let b = parents[at];
        for (i, r) in recircs.iter().enumerate() {
            if r.parent == b {
                order.push(i);
                parents.push(i + 1);
            }
        }
        at += 1;
    }
    order
}

/// The `=` line around a recirculation's header.
const RULE: usize = 79;

/// Where the NORMAL action sends one packet, as the MAC table and the
/// ports' VLAN settings say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalHop {
    /// Why, in words ("dst 02:..:0b learned on port 2").
    pub why: String,
    /// The frame's outer VLAN header as NORMAL got it.
    pub came: Option<VlanHeader>,
    /// The ports, each with the outer VLAN header the frame leaves it
    /// with (empty: dropped).
    pub outs: Vec<(u32, Option<VlanHeader>)>,
}

/// An outer VLAN header (802.1Q or 802.1ad) as NORMAL reads and writes
/// it. The DEI bit is not part of it: a header NORMAL leaves alone keeps
/// its DEI, one it writes has none (as in Open vSwitch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VlanHeader {
    pub tpid: u16,
    pub vid: u16,
    pub pcp: u8,
}

impl VlanHeader {
    /// The frame's outer VLAN header: an 802.1Q (0x8100) or 802.1ad
    /// (0x88a8) tag after the MACs, if it has one whole.
    #[inline]
    pub fn of(frame: &[u8]) -> Option<VlanHeader> {
        let tpid = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
        if tpid != 0x8100 && tpid != 0x88a8 {
            return None;
        }
        let tci = u16::from_be_bytes([*frame.get(14)?, *frame.get(15)?]);
        Some(VlanHeader {
            tpid,
            vid: tci & 0x0fff,
            pcp: (tci >> 13) as u8,
        })
    }

    /// The tag control information as written (DEI clear).
    pub fn tci(&self) -> u16 {
        (self.pcp as u16 & 7) << 13 | self.vid & 0x0fff
    }
}

/// NORMAL's outputs as Open vSwitch's datapath actions write them: each
/// port after the VLAN actions that make the frame's header what it
/// leaves that port with, from the header the previous one left with
/// (`pop_vlan,2,push_vlan(vid=10,pcp=0),3`).
pub fn normal_actions(hop: &NormalHop) -> Vec<String> {
    let mut vlans: Vec<(u16, u16)> = hop.came.iter().map(|h| (h.tpid, h.tci())).collect();
    let mut acts = Vec::new();
    normal_into(hop, &mut vlans, &mut acts);
    acts
}

/// [`normal_actions`] from the VLAN stack `vlans` (outermost first, its
/// first the header NORMAL got when `hop.came` says there is one), left
/// as the last port's.
fn normal_into(hop: &NormalHop, vlans: &mut Vec<(u16, u16)>, acts: &mut Vec<String>) {
    for (port, h) in &hop.outs {
        let mut now = vlans.clone();
        if hop.came.is_some() && !now.is_empty() {
            now.remove(0);
        }
        if let Some(h) = h {
            now.insert(0, (h.tpid, h.tci()));
        }
        datapath::vlans(vlans, &now, acts);
        *vlans = now;
        acts.push(ofp::text::format_port(*port));
    }
}

/// Traces `frame` received on `in_port` through `snap`.
pub fn trace(snap: &Snapshot, in_port: u32, frame: &[u8]) -> Trace {
    trace_tunneled(snap, in_port, &TunnelMeta::default(), frame)
}

/// [`trace`] with `opts`.
pub fn trace_with(snap: &Snapshot, in_port: u32, frame: &[u8], opts: &Options) -> Trace {
    run(snap, in_port, &TunnelMeta::default(), frame, opts)
}

/// Traces `frame` received on tunnel port `in_port` with metadata `tun`.
pub fn trace_tunneled(snap: &Snapshot, in_port: u32, tun: &TunnelMeta, frame: &[u8]) -> Trace {
    run(snap, in_port, tun, frame, &Options::default())
}

fn run(snap: &Snapshot, in_port: u32, tun: &TunnelMeta, frame: &[u8], opts: &Options) -> Trace {
    let r = trace_run(snap, in_port, tun, frame, opts);
    Trace {
        steps: r.steps,
        outputs: r.outputs,
        final_frame: r.final_frame,
        final_key: r.final_key,
        frame: frame.to_vec(),
        learned: r.learned,
        recircs: r.recircs,
        cts: r.cts,
        ports: None,
    }
}

impl Trace {
    /// The datapath actions of the packet's first pass (see
    /// [`datapath`]): before each output or `ct`, the header changes since
    /// the one before as set, pop and push actions, then the port (a
    /// `ct` with its `recirc(0xN)`); `drop` if nothing leaves.
    pub fn datapath_actions(&self) -> String {
        self.datapath_actions_with(0, &|_| None)
    }

    /// Each block's datapath actions, as its `Datapath actions:` line
    /// writes them: the first pass's, then each recirculation's in Open
    /// vSwitch's order (NORMAL outputs as NORMAL).
    pub fn datapath_actions_blocks(&self) -> Vec<String> {
        std::iter::once(0)
            .chain(self.queue().into_iter().map(|i| i + 1))
            .map(|b| self.datapath_actions_with(b, &|_| None))
            .collect()
    }

    /// Tells the trace which ports the switch has: the datapath actions
    /// then leave out an output to a port number it lacks (the datapath
    /// has nowhere to send it; Open vSwitch's translation drops it too).
    /// Reserved ports (LOCAL, CONTROLLER, ...) are kept.
    pub fn set_ports(&mut self, ports: Vec<u32>) {
        self.ports = Some(ports);
    }

    /// The number of blocks: the first pass and one per recirculation.
    pub fn blocks(&self) -> usize {
        1 + self.recircs.len()
    }

    /// The recirculations (indices in `recircs`) in Open vSwitch's queue
    /// order ([`queue_order`]).
    fn queue(&self) -> Vec<usize> {
        queue_order(&self.recircs)
    }

    /// The recirculation id of `recircs[i]`: 1 + its place in the queue.
    fn recirc_id(&self, i: usize) -> usize {
        1 + self.queue().iter().position(|&x| x == i).unwrap_or(i)
    }

    /// The block an output belongs to: the innermost recirculation that
    /// made it, else the first pass (0).
    fn block_of(&self, output: usize) -> usize {
        self.recircs
            .iter()
            .rposition(|r| (r.outs.0..r.outs.1).contains(&output))
            .map_or(0, |i| i + 1)
    }

    /// [`Trace::datapath_actions`] of block `block` (0 the first pass,
    /// `i + 1` `recircs[i]`), with NORMAL outputs replaced by what
    /// `normal` resolves them to.
    fn datapath_actions_with(
        &self,
        block: usize,
        normal: &dyn Fn(&Output) -> Option<NormalHop>,
    ) -> String {
        let start = match block {
            0 => &self.frame,
            b => &self.recircs[b - 1].frame,
        };
        let mut base = Headers::of(start);
        let mut acts: Vec<String> = Vec::new();
        // The block's outputs and `ct`s, in the order they ran.
        enum Ev<'a> {
            Out(&'a Output),
            Ct(&'a CtRun),
        }
        let mut evs: Vec<(usize, u8, Ev)> = self
            .outputs
            .iter()
            .enumerate()
            .filter(|(i, _)| self.block_of(*i) == block)
            .map(|(i, o)| (i, 1, Ev::Out(o)))
            .chain(
                self.cts
                    .iter()
                    .filter(|c| c.block == block)
                    .map(|c| (c.before_output, 0, Ev::Ct(c))),
            )
            .collect();
        evs.sort_by_key(|(at, kind, _)| (*at, *kind));
        for (_, _, ev) in evs {
            let o = match ev {
                Ev::Ct(c) => {
                    commit(&mut base, &Headers::of(&c.frame), &mut acts);
                    base = Headers::of(&c.after);
                    acts.push(c.text.clone());
                    if let Some(r) = c.recirc {
                        acts.push(format!("recirc({:#x})", self.recirc_id(r)));
                    }
                    continue;
                }
                Ev::Out(o) => o,
            };
            let missing = self.ports.as_ref().is_some_and(|ps| {
                o.port < ofp::port::port_no::MAX && o.controller.is_none() && !ps.contains(&o.port)
            });
            if missing {
                continue;
            }
            let data = o.data.as_deref().unwrap_or(&self.final_frame);
            // Only a NORMAL output is the MAC table's to resolve.
            let hop = (o.port == ofp::port::port_no::NORMAL)
                .then(|| normal(o))
                .flatten();
            if hop.as_ref().is_some_and(|h| h.outs.is_empty()) {
                continue;
            }
            commit(&mut base, &Headers::of(data), &mut acts);
            if o.tunnel != TunnelDst::default() && o.controller.is_none() {
                acts.push(format!(
                    "set(tunnel({}))",
                    describe_tunnel(&o.tunnel.meta())
                ));
            }
            if let Some(q) = o.queue {
                acts.push(format!("set_queue:{q}"));
            }
            if let Some(c) = &o.controller {
                let mut s = format!("controller(reason={},table={})", c.reason, c.table_id);
                if c.controller_id != 0 {
                    s.insert_str(s.len() - 1, &format!(",id={}", c.controller_id));
                }
                acts.push(s);
                continue;
            }
            let Some(hop) = hop else {
                acts.push(ofp::text::format_port(o.port));
                continue;
            };
            normal_into(&hop, &mut base.vlans, &mut acts);
        }
        if acts.is_empty() || !acts.iter().any(|a| is_send(a)) {
            return "drop".into();
        }
        acts.join(",")
    }

    /// The whole trace as text, ending with the final flow (when the
    /// packet changed) and the datapath actions.
    pub fn text(&self, in_port: u32) -> String {
        self.text_with(in_port, &|_| None)
    }

    /// The packet's flow as it ended, as the trace's `Flow:` line writes
    /// one (registers and metadata included).
    pub fn final_flow(&self) -> String {
        describe_key(&self.final_key)
    }

    /// [`Trace::text`], following each NORMAL output through `normal` (the
    /// MAC table's answer, which lives in the datapath): a line saying why
    /// it went where it went, and its ports in the datapath actions. A
    /// trace through `ct(table=N)` goes on with a block per recirculation,
    /// each after a header as Open vSwitch writes it.
    pub fn text_with(
        &self,
        _in_port: u32,
        normal: &dyn Fn(&Output) -> Option<NormalHop>,
    ) -> String {
        let mut out = self.steps.join("\n");
        let first = self
            .steps
            .first()
            .and_then(|l| l.strip_prefix("Flow: "))
            .unwrap_or("");
        self.block_end(0, first, &self.final_flow(), normal, &mut out);
        for i in self.queue() {
            let r = &self.recircs[i];
            let id = self.recirc_id(i);
            let rule = "=".repeat(RULE);
            let why = match r.given {
                None => "default ct_state=trk|new (use --ct-next to customize)".to_string(),
                Some(st) => format!("ct_state={}", options::names(st)),
            };
            out.push_str(&format!(
                "\n{rule}\nrecirc({id:#x}) - resume conntrack with {why}\n"
            ));
            if let Some((initial, modified)) = &r.nat {
                out.push_str(&format!(
                    "Replacing src/dst IP/ports to simulate NAT:\n Initial flow: {initial}\n Modified flow: {modified}\n"
                ));
            }
            out.push_str(&format!("{rule}\n\n"));
            let flow = recirc_flow(id, &r.key);
            out.push_str(&format!(
                "Flow: {flow}\nthaw\n    Resuming from table {}",
                r.table
            ));
            for l in &r.steps {
                out.push('\n');
                out.push_str(l);
            }
            self.block_end(
                i + 1,
                &flow,
                &recirc_flow(id, &r.final_key),
                normal,
                &mut out,
            );
        }
        out
    }

    /// A block's end: `Final flow:` (`unchanged` when it is `first`), the
    /// NORMAL lines of its outputs and its `Datapath actions:`.
    fn block_end(
        &self,
        block: usize,
        first: &str,
        last: &str,
        normal: &dyn Fn(&Output) -> Option<NormalHop>,
        out: &mut String,
    ) {
        out.push_str("\n\n");
        if last == first {
            out.push_str("Final flow: unchanged\n");
        } else {
            out.push_str(&format!("Final flow: {last}\n"));
        }
        for (_, o) in self
            .outputs
            .iter()
            .enumerate()
            .filter(|(i, o)| o.port == ofp::port::port_no::NORMAL && self.block_of(*i) == block)
        {
            if let Some(hop) = normal(o) {
                out.push_str(&format!("NORMAL: {}\n", hop.why));
            }
        }
        out.push_str(&format!(
            "Datapath actions: {}\n",
            self.datapath_actions_with(block, normal)
        ));
    }
}

/// A recirculated packet's flow as Open vSwitch's trace writes it:
/// `recirc_id`, the connection fields that are set, `eth`, then the rest.
fn recirc_flow(id: usize, key: &FlowKey) -> String {
    use packet::slots as sl;
    let mut s = format!("recirc_id={id:#x},");
    let st = key.get(sl::CT_STATE) as u32;
    if st != 0 {
        s += &format!("ct_state={},", options::names(st));
    }
    let zone = key.get(sl::CT_ZONE);
    if zone != 0 {
        s += &format!("ct_zone={zone},");
    }
    let mark = key.get(sl::CT_MARK);
    if mark != 0 {
        s += &format!("ct_mark={mark:#x},");
    }
    let label = (key.get(sl::CT_LABEL_HI) as u128) << 64 | key.get(sl::CT_LABEL_LO) as u128;
    if label != 0 {
        s += &format!("ct_label={label:#x},");
    }
    s + "eth," + &describe_key(key)
}

/// Whether a datapath action sends the packet somewhere (a port or the
/// controller), rather than changing it.
fn is_send(a: &str) -> bool {
    !(a.starts_with("set(")
        || a.starts_with("set_queue:")
        || a.starts_with("push_")
        || a.starts_with("pop_"))
}
