//! `trace`: what the pipeline would do with one packet, step by step, the
//! way Open vSwitch's `ofproto/trace` tells it.
//!
//! A trace runs the packet through a published [`Snapshot`] with the same
//! code as the fast path (the executor is generic over tracing, so the
//! fast path carries no trace code), but changes nothing: no rule, table or
//! group counter moves, no meter is charged, no cache is filled. The
//! result names, for every table visited, the rule that matched (or the
//! miss), each instruction and action as it ran, the buckets a group took,
//! where each output went, and the packet's final flow.

use packet::{FlowKey, TunnelDst, TunnelMeta};

use crate::describe::{describe_key, describe_tunnel};
use crate::exec::trace_run;
use crate::snapshot::{Output, Snapshot};

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
}

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

    /// As Open vSwitch's datapath actions write it:
    /// `push_vlan(vid=10,pcp=0)`, with `tpid=0x88a8,` first for 802.1ad.
    pub fn push_text(&self) -> String {
        let tpid = if self.tpid == 0x8100 {
            String::new()
        } else {
            format!("tpid={:#06x},", self.tpid)
        };
        format!("push_vlan({tpid}vid={},pcp={})", self.vid, self.pcp)
    }
}

/// NORMAL's outputs as Open vSwitch's datapath actions write them: each
/// port after the VLAN actions that make the frame's header what it
/// leaves that port with, from the header the previous one left with
/// (`pop_vlan,2,push_vlan(vid=10,pcp=0),3`).
pub fn normal_actions(hop: &NormalHop) -> Vec<String> {
    let mut now = hop.came;
    let mut out = Vec::new();
    for (port, h) in &hop.outs {
        if *h != now {
            if now.is_some() {
                out.push("pop_vlan".to_string());
            }
            if let Some(h) = h {
                out.push(h.push_text());
            }
            now = *h;
        }
        out.push(ofp::text::format_port(*port));
    }
    out
}

/// Traces `frame` received on `in_port` through `snap`.
pub fn trace(snap: &Snapshot, in_port: u32, frame: &[u8]) -> Trace {
    trace_tunneled(snap, in_port, &TunnelMeta::default(), frame)
}

/// Traces `frame` received on tunnel port `in_port` with metadata `tun`.
pub fn trace_tunneled(snap: &Snapshot, in_port: u32, tun: &TunnelMeta, frame: &[u8]) -> Trace {
    let (steps, outputs, final_frame) = trace_run(snap, in_port, tun, frame);
    Trace {
        steps,
        outputs,
        final_frame,
    }
}

impl Trace {
    /// The datapath actions: the output ports in order, `drop` if none.
    pub fn datapath_actions(&self) -> String {
        self.datapath_actions_with(&|_| None)
    }

    /// [`Trace::datapath_actions`] with NORMAL outputs replaced by what
    /// `normal` resolves them to.
    fn datapath_actions_with(&self, normal: &dyn Fn(&Output) -> Option<NormalHop>) -> String {
        if self.outputs.is_empty() {
            return "drop".into();
        }
        let outs: Vec<String> = self
            .outputs
            .iter()
            .filter_map(|o| {
                let mut s = ofp::text::format_port(o.port);
                if let Some(c) = &o.controller {
                    s = format!("controller(reason={},table={})", c.reason, c.table_id);
                    if c.controller_id != 0 {
                        s.insert_str(s.len() - 1, &format!(",id={}", c.controller_id));
                    }
                }
                if let Some(hop) = normal(o) {
                    if hop.outs.is_empty() {
                        return None;
                    }
                    s = normal_actions(&hop).join(",");
                }
                if o.tunnel != TunnelDst::default() && o.controller.is_none() {
                    s = format!("set(tunnel({})),{s}", describe_tunnel(&o.tunnel.meta()));
                }
                Some(match o.queue {
                    Some(q) => format!("set_queue:{q},{s}"),
                    None => s,
                })
            })
            .collect();
        if outs.is_empty() {
            return "drop".into();
        }
        outs.join(",")
    }

    /// The whole trace as text, ending with the final flow (when the
    /// packet changed) and the datapath actions.
    pub fn text(&self, in_port: u32) -> String {
        self.text_with(in_port, &|_| None)
    }

    /// [`Trace::text`], following each NORMAL output through `normal` (the
    /// MAC table's answer, which lives in the datapath): a line saying why
    /// it went where it went, and its ports in the datapath actions.
    pub fn text_with(&self, in_port: u32, normal: &dyn Fn(&Output) -> Option<NormalHop>) -> String {
        let mut out = self.steps.join("\n");
        let mut k = FlowKey::default();
        packet::extract(&self.final_frame, in_port, &mut k);
        let final_flow = describe_key(&k);
        let first = self
            .steps
            .first()
            .and_then(|l| l.strip_prefix("Flow: "))
            .unwrap_or("");
        out.push_str("\n\n");
        if final_flow == first {
            out.push_str("Final flow: unchanged\n");
        } else {
            out.push_str(&format!("Final flow: {final_flow}\n"));
        }
        for o in self
            .outputs
            .iter()
            .filter(|o| o.port == ofp::port::port_no::NORMAL)
        {
            if let Some(hop) = normal(o) {
                out.push_str(&format!("NORMAL: {}\n", hop.why));
            }
        }
        out.push_str(&format!(
            "Datapath actions: {}\n",
            self.datapath_actions_with(normal)
        ));
        out
    }
}
