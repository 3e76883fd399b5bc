//! Open vSwitch's Nicira actions as a packet meets them (their codec is
//! `ofp::nicira`; `note`, `sample` and `exit` are in `run_actions`):
//!
//! - `output:FIELD[..]`: outputs to the port the bits hold, a 16-bit
//!   Open vSwitch port (0xff00 and up are the reserved ones); a value
//!   above 65535, or no port (0, `NONE`, `TABLE`, OpenFlow 1.0's unused
//!   reserved numbers) outputs nothing, as in Open vSwitch.
//! - `push:`/`pop:`: a stack per packet, kept as Open vSwitch keeps it
//!   (each value's bytes, then their count, so 64 KiB hold as many values
//!   as Open vSwitch's). A push onto [`MAX_STACK_BYTES`] or more, or a
//!   resubmit with that much on the stack ("stack too deep"), drops the
//!   packet whole, as the resubmit limits do. A pop of an empty stack
//!   changes nothing and the actions go on (what Open vSwitch 3.1 does;
//!   its manual calls it an error that stops the actions).
//! - `clone(...)`: the actions run on a copy of the packet, its metadata
//!   (registers, tunnel, in_port, metadata), the stack and the action set;
//!   at the end of the clone its copy of the action set runs, as in Open
//!   vSwitch; then all of it is as before the clone. Outputs made inside
//!   carry the clone's packet. An `exit` inside ends the packet's actions
//!   outside too (as Open vSwitch 3.1's translation does). Clones nest at
//!   most [`ofp::nicira::MAX_NESTING`] deep for one packet, resubmits
//!   between them included; deeper, the packet is dropped whole.
//! - `controller(...)`: a packet-in with the action's reason (Open
//!   vSwitch's action_set, group and packet_out are `OFPR_ACTION` in
//!   OpenFlow 1.3, as Open vSwitch sends them; `OFPR_ACTION` from a
//!   table-miss flow is `OFPR_NO_MATCH`, Open vSwitch's explicit miss) and
//!   max_len, through its meter if it names one that exists, for the
//!   connections of its controller id (the agent picks them), with its
//!   userdata and the packet's pipeline fields ([`PacketInExtra`]).
//!   pause needs continuations, which sluice does not have: validation
//!   refuses it.

use super::*;
use crate::meter::Verdict;
use ofp::action::{Controller, OutputReg, Subfield};

/// Bytes the stack may hold before a push or resubmit fails: Open
/// vSwitch's limit (its check is `stack.size >= 65536` at a resubmit).
pub const MAX_STACK_BYTES: usize = 65536;

impl Exec {
    /// The bits of `f`, at bit 0.
    pub(super) fn read_subfield(&mut self, f: &Subfield, frame: &[u8], cx: &mut Ctx<'_>) -> u128 {
        let v = self.field_value(f.field, frame, cx);
        v.checked_shr(f.ofs as u32).unwrap_or(0) & ofp::action::bits_mask(0, f.n_bits)
    }

    /// Writes the low bits of `v` into `f` (a `move`, a `pop`, a
    /// multipath or bundle_load destination): `NXM_OF_VLAN_TCI` as a load
    /// writes it (a tag pushed or popped by its CFI bit).
    pub(super) fn write_subfield<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        f: &Subfield,
        v: u128,
        frame: &mut B,
        cx: &mut Ctx<'_>,
    ) {
        let mask = f.mask();
        let o = Oxm::masked(
            f.field,
            v.checked_shl(f.ofs as u32).unwrap_or(0) & mask,
            mask,
        );
        if T {
            self.note(format!(
                "    -> {}",
                ofp::text::format_action(&Action::SetField(MatchEntry::Basic(o)))
            ));
        }
        self.write_any::<T, _>(&o, frame, cx);
    }

    pub(super) fn output_reg<const T: bool>(
        &mut self,
        o: &OutputReg,
        frame: &[u8],
        cx: &mut Ctx<'_>,
    ) {
        let v = self.read_subfield(&o.src, frame, cx);
        let port = (v <= 0xffff).then(|| ofp::resubmit::Resubmit::port_from_u16(v as u16));
        match port {
            Some(p) if crate::validate::valid_output_port(p) => {
                if T {
                    self.note(format!("    -> port {}", ofp::text::format_port(p)));
                }
                self.output::<T>(p, o.max_len, cx);
            }
            _ if T => self.note(format!("    -> {v:#x}: no such port, nothing")),
            _ => {}
        }
    }

    /// Fails the packet (dropped whole) when the stack is full.
    pub(super) fn stack_full<const T: bool>(&mut self, cx: &mut Ctx<'_>) -> bool {
        if self.stack.len() < MAX_STACK_BYTES {
            return false;
        }
        if T {
            self.note(format!(
                "    -> the packet is dropped: stack too deep ({MAX_STACK_BYTES} bytes, Open vSwitch's limit)"
            ));
        }
        self.over_limit += 1;
        cx.failed = true;
        cx.dropped = true;
        true
    }

    pub(super) fn stack_push<const T: bool>(
        &mut self,
        f: &Subfield,
        frame: &[u8],
        cx: &mut Ctx<'_>,
    ) {
        if self.stack_full::<T>(cx) {
            return;
        }
        let v = self.read_subfield(f, frame, cx);
        let n = (f.n_bits as usize).div_ceil(8).clamp(1, 16);
        self.stack.extend_from_slice(&v.to_be_bytes()[16 - n..]);
        self.stack.push(n as u8);
        if T {
            self.note(format!("    -> pushed {v:#x}"));
        }
    }

    pub(super) fn stack_pop<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        f: &Subfield,
        frame: &mut B,
        cx: &mut Ctx<'_>,
    ) {
        let Some(&n) = self.stack.last() else {
            if T {
                self.note("    -> stack underflow: nothing changes".into());
            }
            return;
        };
        let n = (n as usize).min(16).min(self.stack.len() - 1);
        let start = self.stack.len() - 1 - n;
        let mut b = [0u8; 16];
        b[16 - n..].copy_from_slice(&self.stack[start..start + n]);
        self.stack.truncate(start);
        self.write_subfield::<T, _>(f, u128::from_be_bytes(b), frame, cx);
    }

    pub(super) fn clone_actions<const T: bool>(
        &mut self,
        list: &[Action],
        frame: &[u8],
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        if cx.failed {
            return;
        }
        if cx.clone_depth + 1 >= ofp::nicira::MAX_NESTING {
            if T {
                self.note(format!(
                    "    -> the packet is dropped: clones nested over {} deep",
                    ofp::nicira::MAX_NESTING
                ));
            }
            self.over_limit += 1;
            cx.failed = true;
            cx.dropped = true;
            return;
        }
        // Everything the clone may change, to put back after.
        let saved = (
            self.key,
            self.off,
            self.tun,
            self.metadata,
            self.stack.clone(),
            self.set.clone(),
        );
        let saved_cx = (cx.queue, cx.key_stale, cx.in_port);
        let mut copy = frame.to_vec();
        let first_out = self.outputs.len();
        let outer_from = std::mem::replace(&mut cx.pending_from, first_out);
        cx.clone_depth += 1;
        if T {
            self.indent += 1;
        }
        self.run_actions::<T, _>(list, &mut copy, cx, depth);
        // The clone's copy of the action set runs at its end (an exit in
        // the clone does not cancel it).
        if !cx.dropped && !self.set.is_empty() {
            let exited = std::mem::take(&mut cx.exited);
            let mut set = Vec::new();
            self.set.ordered(&mut set);
            if T {
                self.note(format!(
                    "Action set of the clone: {}",
                    ofp::text::format_actions(&set)
                ));
            }
            self.run_actions::<T, _>(&set, &mut copy, cx, depth);
            cx.exited |= exited;
        }
        if T {
            self.indent -= 1;
        }
        cx.clone_depth -= 1;
        // The clone's outputs carry the clone's packet.
        self.outputs_carry(first_out, copy);
        cx.pending_from = outer_from;
        if !cx.failed {
            // A TTL that expired in the clone ends the clone only.
            cx.dropped = false;
        }
        (
            self.key,
            self.off,
            self.tun,
            self.metadata,
            self.stack,
            self.set,
        ) = saved;
        (cx.queue, cx.key_stale, cx.in_port) = saved_cx;
    }

    pub(super) fn controller<const T: bool>(
        &mut self,
        c: &Controller,
        frame: &[u8],
        cx: &mut Ctx<'_>,
    ) {
        if c.meter_id != ofp::action::NX_CTLR_NO_METER {
            match cx.snap.meters.get(&c.meter_id) {
                Some(_) if T => {
                    self.note(format!("    meter {} (not charged by a trace)", c.meter_id))
                }
                Some(m) => {
                    if matches!(m.apply(frame.len(), cx.now_ns), Verdict::Drop) {
                        return;
                    }
                }
                None if T => self.note(format!("    no meter {}: not metered", c.meter_id)),
                None => {}
            }
        }
        // Open vSwitch's reasons in OpenFlow 1.3's terms (action_set,
        // group and packet_out are OFPR_ACTION there); OFPR_ACTION from a
        // table-miss flow is an explicit miss, OFPR_NO_MATCH
        // (xlate_controller_action).
        let reason = match c.reason {
            0 => PacketInReason::NoMatch,
            2 => PacketInReason::InvalidTtl,
            ofp::nicira::OFPR_ACTION if cx.table_miss => PacketInReason::NoMatch,
            _ => PacketInReason::Action,
        };
        if T && (c.id != 0 || !c.userdata.is_empty()) {
            let mut what = String::from("    packet-in");
            if c.id != 0 {
                what += &format!(" for controller id {}", c.id);
            }
            if !c.userdata.is_empty() {
                what += &format!(
                    " with userdata {}",
                    ofp::text::format_hex_dotted(&c.userdata)
                );
            }
            self.note(what);
        }
        let meta = ToController {
            controller_id: c.id,
            extra: self.packet_in_extra(c.userdata.clone()),
            ..ToController::new(reason, cx.table_id, cx.cookie, c.max_len)
        };
        self.push(port_no::CONTROLLER, cx, Some(meta));
    }
}
