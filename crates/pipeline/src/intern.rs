//! Sharing instruction lists between rules.
//!
//! Tables of many rules usually carry few distinct instruction lists (a
//! million 5-tuple rules that all `output:2`). Each rule owning its own
//! `Vec<Instruction>` (and that list's `Vec<Action>`) costs two allocations
//! and ~150 bytes per rule; sharing one `Arc` costs nothing per rule. The
//! cache is direct-mapped and bounded: a list is found again if it was
//! among the recent ones that hash to its slot, otherwise it is stored
//! anew (correct either way, only less shared).

use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use ofp::Instruction;

const SLOTS: usize = 64;

/// A bounded cache of recently stored instruction lists.
#[derive(Debug, Default, Clone)]
pub(crate) struct Interner {
    slots: Vec<Option<Arc<Vec<Instruction>>>>,
}

impl Interner {
    /// An `Arc` holding a list equal to `ins`, shared with earlier rules
    /// when the cache still holds one.
    pub(crate) fn get(&mut self, ins: &[Instruction]) -> Arc<Vec<Instruction>> {
        if self.slots.is_empty() {
            self.slots = vec![None; SLOTS];
        }
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        ins.hash(&mut h);
        let slot = &mut self.slots[std::hash::Hasher::finish(&h) as usize % SLOTS];
        match slot {
            Some(a) if a.as_slice() == ins => a.clone(),
            _ => {
                let a = Arc::new(ins.to_vec());
                *slot = Some(a.clone());
                a
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::Action;

    fn out(p: u32) -> Vec<Instruction> {
        vec![Instruction::ApplyActions(vec![Action::Output {
            port: p,
            max_len: 0,
        }])]
    }

    #[test]
    fn equal_lists_share_one_allocation_and_different_ones_do_not() {
        let mut i = Interner::default();
        let a = i.get(&out(2));
        let b = i.get(&out(2));
        let c = i.get(&out(3));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(*c, out(3));
        assert_eq!(*i.get(&[]), Vec::<Instruction>::new());
    }
}
