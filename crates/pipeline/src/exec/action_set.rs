//! The action set (OpenFlow 1.3 5.10): what write-actions leaves for the
//! end of the pipeline, one action per type, executed in the spec's
//! order.

use ofp::oxm::{MatchEntry, Oxm};
use ofp::Action;

/// A set_field (a load is one with a mask) or a move in an action set:
/// `Copy`, so that emptying the set for each packet costs no drop code
/// (a `Vec<Action>` here measured 5-10 ns per packet more).
#[derive(Clone, Copy)]
pub(super) enum SetOrMove {
    Set(Oxm),
    Move(ofp::action::RegMove),
}

#[derive(Default, Clone)]
pub(super) struct ActionSet {
    /// Whether anything was written since the last clear: most packets
    /// meet no write-actions, and their set is cleared and tested with
    /// this one flag.
    written: bool,
    copy_ttl_in: bool,
    pop_vlan: bool,
    pop_mpls: Option<u16>,
    pop_pbb: bool,
    push_mpls: Option<u16>,
    push_pbb: Option<u16>,
    push_vlan: Option<u16>,
    copy_ttl_out: bool,
    dec_mpls_ttl: bool,
    dec_nw_ttl: bool,
    /// The set's dec_ttl is a `dec_ttl(ids)`, whose packet-ins on expiry
    /// are for the controller ids in `dec_ttl_ids`.
    dec_nw_ttl_has_ids: bool,
    /// Those ids (the vector kept from packet to packet, as
    /// `set_or_move`: a plain dec_ttl allocates nothing).
    dec_ttl_ids: Vec<u16>,
    set_mpls_ttl: Option<u8>,
    set_nw_ttl: Option<u8>,
    /// set_field, load and move actions, in the order written: a
    /// set_field replaces an earlier set_field of its field (one action
    /// per type, spec 5.10); loads and moves are kept in order as Open
    /// vSwitch keeps them (a 128-bit load is two 64-bit ones).
    set_or_move: Vec<SetOrMove>,
    set_queue: Option<u32>,
    group: Option<u32>,
    output: Option<(u32, u16)>,
    /// `ct` and `ct_clear`: final actions as Open vSwitch ranks them (one
    /// final action runs: group, else output, else ct_clear, else ct).
    ct: Option<Box<ofp::ct::Ct>>,
    ct_clear: bool,
}

impl ActionSet {
    #[inline]
    pub(super) fn clear(&mut self) {
        if !self.written {
            return;
        }
        let fields = std::mem::take(&mut self.set_or_move);
        let ids = std::mem::take(&mut self.dec_ttl_ids);
        *self = ActionSet {
            set_or_move: fields,
            dec_ttl_ids: ids,
            ..ActionSet::default()
        };
        self.set_or_move.clear();
        self.dec_ttl_ids.clear();
    }

    pub(super) fn is_empty(&self) -> bool {
        if !self.written {
            return true;
        }
        !(self.copy_ttl_in
            || self.pop_vlan
            || self.pop_pbb
            || self.copy_ttl_out
            || self.dec_mpls_ttl
            || self.dec_nw_ttl)
            && self.pop_mpls.is_none()
            && self.push_mpls.is_none()
            && self.push_pbb.is_none()
            && self.push_vlan.is_none()
            && self.set_mpls_ttl.is_none()
            && self.set_nw_ttl.is_none()
            && self.set_or_move.is_empty()
            && self.set_queue.is_none()
            && self.group.is_none()
            && self.output.is_none()
            && self.ct.is_none()
            && !self.ct_clear
    }

    /// Write-actions: each action replaces the set's action of its type.
    pub(super) fn write(&mut self, actions: &[Action]) {
        self.written = true;
        for a in actions {
            // Validation refuses these in write_actions; never in a set.
            if !a.allowed_in_set() {
                continue;
            }
            match a {
                Action::CopyTtlIn => self.copy_ttl_in = true,
                Action::PopVlan => self.pop_vlan = true,
                Action::PopMpls(e) => self.pop_mpls = Some(*e),
                Action::PopPbb => self.pop_pbb = true,
                Action::PushMpls(e) => self.push_mpls = Some(*e),
                Action::PushPbb(e) => self.push_pbb = Some(*e),
                Action::PushVlan(e) => self.push_vlan = Some(*e),
                Action::CopyTtlOut => self.copy_ttl_out = true,
                Action::DecMplsTtl => self.dec_mpls_ttl = true,
                Action::DecNwTtl => {
                    self.dec_nw_ttl = true;
                    self.dec_nw_ttl_has_ids = false;
                }
                Action::DecTtlIds(ids) => {
                    self.dec_nw_ttl = true;
                    self.dec_nw_ttl_has_ids = true;
                    self.dec_ttl_ids.clear();
                    self.dec_ttl_ids.extend_from_slice(ids);
                }
                Action::SetMplsTtl(t) => self.set_mpls_ttl = Some(*t),
                Action::SetNwTtl(t) => self.set_nw_ttl = Some(*t),
                Action::SetField(MatchEntry::Basic(o)) => {
                    self.set_or_move
                        .retain(|x| !matches!(x, SetOrMove::Set(y) if y.field == o.field && y.mask.is_none()));
                    self.set_or_move.push(SetOrMove::Set(*o));
                }
                Action::RegLoad(l) => self.set_or_move.push(SetOrMove::Set(l.masked())),
                Action::RegMove(m) => self.set_or_move.push(SetOrMove::Move(*m)),
                Action::SetQueue(q) => self.set_queue = Some(*q),
                Action::Group(g) => self.group = Some(*g),
                Action::Output { port, max_len } => self.output = Some((*port, *max_len)),
                // Not an action of the set: Open vSwitch takes it in
                // write_actions and leaves it out of the set's execution.
                Action::Resubmit(_) => {}
                Action::SetField(MatchEntry::Other(_)) | Action::Experimenter { .. } => {}
                Action::Ct(c) => self.ct = Some(c.clone()),
                Action::CtClear => self.ct_clear = true,
                // Kept out above (`Action::allowed_in_set`).
                _ => {}
            }
        }
    }

    /// The set as an ordered action list (spec 5.10).
    pub(super) fn ordered(&self, out: &mut Vec<Action>) {
        out.clear();
        if self.copy_ttl_in {
            out.push(Action::CopyTtlIn);
        }
        if self.pop_vlan {
            out.push(Action::PopVlan);
        }
        if let Some(e) = self.pop_mpls {
            out.push(Action::PopMpls(e));
        }
        if self.pop_pbb {
            out.push(Action::PopPbb);
        }
        if let Some(e) = self.push_mpls {
            out.push(Action::PushMpls(e));
        }
        if let Some(e) = self.push_pbb {
            out.push(Action::PushPbb(e));
        }
        if let Some(e) = self.push_vlan {
            out.push(Action::PushVlan(e));
        }
        if self.copy_ttl_out {
            out.push(Action::CopyTtlOut);
        }
        if self.dec_mpls_ttl {
            out.push(Action::DecMplsTtl);
        }
        if self.dec_nw_ttl && self.dec_nw_ttl_has_ids {
            out.push(Action::DecTtlIds(self.dec_ttl_ids.clone()));
        } else if self.dec_nw_ttl {
            out.push(Action::DecNwTtl);
        }
        if let Some(t) = self.set_mpls_ttl {
            out.push(Action::SetMplsTtl(t));
        }
        if let Some(t) = self.set_nw_ttl {
            out.push(Action::SetNwTtl(t));
        }
        out.extend(self.set_or_move.iter().map(|x| match x {
            SetOrMove::Set(o) => Action::SetField(MatchEntry::Basic(*o)),
            SetOrMove::Move(m) => Action::RegMove(*m),
        }));
        if let Some(q) = self.set_queue {
            out.push(Action::SetQueue(q));
        }
        match (self.group, self.output) {
            (Some(g), _) => out.push(Action::Group(g)),
            (None, Some((port, max_len))) => out.push(Action::Output { port, max_len }),
            (None, None) if self.ct_clear => out.push(Action::CtClear),
            (None, None) if self.ct.is_some() => {
                out.extend(self.ct.iter().map(|c| Action::Ct(c.clone())))
            }
            (None, None) => {}
        }
    }
}
