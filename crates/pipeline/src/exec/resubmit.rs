//! Open vSwitch's `resubmit`: the packet is looked up again, in the table
//! named or the current one, as if it had come in on the port named or
//! its own (that lookup alone: the flow's actions, IN_PORT and the
//! no-output-to-the-ingress-port rule among them, and the lookups of a
//! goto_table after, see the packet's own port, as Open vSwitch restores
//! it right after the lookup); the matching flow's instructions run (apply-actions at once,
//! write-actions into the packet's one action set, goto_table followed),
//! and the actions after the resubmit go on with the packet as they left
//! it. A table without a matching rule does nothing here.
//!
//! Limits, as Open vSwitch counts them (`xlate_resubmit_resource_check`):
//! a resubmit to the current table or an earlier one nests one level
//! deeper, one to a later table does not (a pipeline that only moves
//! forward, as OVN's 40 tables do, never runs out of depth), and at most
//! [`MAX_RESUBMIT_DEPTH`] levels are allowed; one packet runs at most
//! [`MAX_RESUBMITS`] resubmits of either kind. Past either the packet is
//! dropped whole (what it had been sent to included) and counted in
//! [`crate::Worker::over_limit`], so a loop of resubmits costs a bounded
//! amount of work. Each resubmit is a Rust call level: the deepest walk
//! is [`MAX_RESUBMITS`] levels, which the threads that walk packets have
//! the stack for ([`crate::WALK_STACK`]).

use super::*;

/// How deep resubmits to the same or an earlier table nest (Open
/// vSwitch's `MAX_DEPTH`).
pub const MAX_RESUBMIT_DEPTH: u32 = 64;
/// Resubmits one packet runs (Open vSwitch's `MAX_RESUBMITS`).
pub const MAX_RESUBMITS: u32 = MAX_RESUBMIT_DEPTH * MAX_RESUBMIT_DEPTH;

impl Exec {
    pub(super) fn resubmit<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        r: &ofp::action::Resubmit,
        frame: &mut B,
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        if cx.failed {
            return;
        }
        cx.resubmits += 1;
        if cx.resubmit_depth >= MAX_RESUBMIT_DEPTH || cx.resubmits > MAX_RESUBMITS {
            if T {
                self.note(format!(
                    "    -> the packet is dropped: over {} (Open vSwitch's limits)",
                    if cx.resubmit_depth >= MAX_RESUBMIT_DEPTH {
                        format!(
                            "{MAX_RESUBMIT_DEPTH} nested resubmits to the same or an earlier table"
                        )
                    } else {
                        format!("{MAX_RESUBMITS} resubmits")
                    }
                ));
            }
            self.over_limit += 1;
            cx.failed = true;
            cx.dropped = true;
            return;
        }
        // Open vSwitch's next check: 64 KiB on the stack (push/pop).
        if self.stack_full::<T>(cx) {
            return;
        }
        let table = if r.table == ofp::action::Resubmit::CURRENT_TABLE {
            cx.table_id
        } else {
            r.table
        };
        // The port named is what the lookup sees; the flow's actions see
        // the packet's own ingress port (Open vSwitch restores it right
        // after the lookup, so IN_PORT and NORMAL behave).
        let lookup_port = (r.in_port != port_no::IN_PORT).then_some(r.in_port);
        let outer = (cx.table_id, cx.cookie, cx.table_miss);
        let deepens = u32::from(table <= cx.table_id);
        cx.resubmit_depth += deepens;
        cx.in_resubmit += 1;
        if (table as usize) < cx.snap.tables.len() {
            self.walk::<T, B>(table as usize, lookup_port, frame, cx, None, depth);
        } else if T {
            // The table a resubmit reaches is written beside the action
            // (at its level), as Open vSwitch lists it ([`crate::trace`]).
            self.note(format!("{table:>2}. No such table: nothing."));
        }
        cx.resubmit_depth -= deepens;
        cx.in_resubmit -= 1;
        (cx.table_id, cx.cookie, cx.table_miss) = outer;
    }
}
