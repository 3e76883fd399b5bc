//! How a select group picks its bucket: the selection methods of Open
//! vSwitch (its `NTRT_SELECTION_METHOD` group property), worked out once
//! when the group is installed ([`Selector::new`]) and applied per packet
//! by `exec::groups`.
//!
//! Contract, Open vSwitch 3.1's in spirit (ofproto/ofproto-dpif.c
//! `group_set_selection_method`, ofproto/ofproto-dpif-xlate.c
//! `pick_*_select_group`): one flow always gets the same bucket while the
//! group and its buckets' liveness stay as they are; different flows
//! spread over the live buckets in proportion to their weights; a bucket
//! of weight 0 is never chosen. The hash values are not Open vSwitch's
//! bit for bit (its dp_hash comes from the datapath), so a flow may take
//! another bucket there than here.
//!
//! * `dp_hash`: a hash of the packet's 5-tuple (`flow_hash_5tuple`: IP
//!   addresses, protocol, and the transport ports or ICMP type and code;
//!   the symmetric L4 hash when the parameter's high 32 bits say algorithm
//!   1, `OVS_HASH_ALG_SYM_L4`), with the parameter's low 32 bits as basis,
//!   looks up a table of 16 to 256 slots (a power of two) shared out
//!   among the buckets by weight with Webster's method, from the slot the
//!   hash names onward to the first live bucket. When the weights would
//!   need more than 256 slots (one bucket's weight under a 256th of the
//!   total), or none is above 0, the group falls back to the default, as
//!   Open vSwitch does.
//! * `hash` with fields: the fields, each masked, in Open vSwitch's order,
//!   hashed with the parameter as basis (a field whose prerequisites the
//!   packet does not meet, TCP ports of a UDP packet, is left out); each
//!   live bucket scores `(hash of its id and that hash & 0xffff) * weight`,
//!   and the highest (the last of equals) wins: rendezvous hashing, so a
//!   bucket coming or going moves only the flows it takes or gives.
//! * No selection method, or `hash` without fields: sluice's own hash of
//!   the flow (Ethernet and IP addresses, IP protocol, transport ports)
//!   over the live buckets' weights. Open vSwitch uses its dp_hash table
//!   there when the weights allow (with the symmetric L4 hash), its
//!   default hash otherwise.

use ofp::msg::group::{Bucket, GroupType};
use ofp::msg::selection::{HashField, Method, SelectionMethod};

use crate::exec::multipath::{hash_add, hash_add64, hash_finish};

/// Open vSwitch's `MAX_SELECT_GROUP_HASH_VALUES`.
pub const MAX_HASH_VALUES: usize = 256;

/// A select group's way of choosing, worked out when it is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// sluice's own hash, by weight (also every group other than select).
    Default,
    /// `dp_hash`: slot `hash & (table.len() - 1)` onward.
    DpHash {
        /// `OVS_HASH_ALG_SYM_L4` rather than `OVS_HASH_ALG_L4`.
        symmetric: bool,
        basis: u32,
        /// Bucket indexes, a power of two of them.
        table: Box<[u16]>,
    },
    /// `hash` with fields.
    Fields {
        basis: u32,
        fields: Box<[HashField]>,
    },
}

impl Selector {
    /// The selector of a group of `group_type` with `selection` and
    /// `buckets`.
    pub fn new(
        group_type: GroupType,
        selection: Option<&SelectionMethod>,
        buckets: &[Bucket],
    ) -> Selector {
        let Some(s) = selection.filter(|_| group_type == GroupType::Select) else {
            return Selector::Default;
        };
        match s.method {
            Method::DpHash => {
                let weights: Vec<u16> = buckets.iter().map(|b| b.weight).collect();
                match webster(&weights) {
                    Some(table) => Selector::DpHash {
                        // Algorithms past Open vSwitch's last (1) are its L4.
                        symmetric: s.param >> 32 == 1,
                        basis: s.param as u32,
                        table,
                    },
                    None => Selector::Default,
                }
            }
            Method::Hash if s.fields.is_empty() => Selector::Default,
            Method::Hash => Selector::Fields {
                basis: hash_u64(s.param),
                fields: s.fields.clone().into_boxed_slice(),
            },
        }
    }
}

/// Shares out 16 to [`MAX_HASH_VALUES`] slots (a power of two, enough
/// that the lightest bucket above weight 0 gets one) among the buckets in
/// proportion to `weights`, by Webster's method (each slot to the bucket
/// whose weight over its divisor 1, 3, 5, ... is highest, the first of
/// equals). None without a weight above 0 or when more slots are needed.
pub fn webster(weights: &[u16]) -> Option<Box<[u16]>> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    let min = weights.iter().copied().filter(|&w| w > 0).min()?;
    let n = total.div_ceil(u64::from(min)).next_power_of_two().max(16);
    if n > MAX_HASH_VALUES as u64 {
        return None;
    }
    let mut divisor = vec![1u64; weights.len()];
    let mut table = Vec::with_capacity(n as usize);
    for _ in 0..n {
        // weight / divisor, compared without division: a/b > c/d <=> a*d > c*b.
        let mut best = 0;
        for i in 1..weights.len() {
            if u64::from(weights[i]) * divisor[best] > u64::from(weights[best]) * divisor[i] {
                best = i;
            }
        }
        divisor[best] += 2;
        table.push(best as u16);
    }
    Some(table.into_boxed_slice())
}

/// Open vSwitch's `hash_uint64` (basis 0).
pub fn hash_u64(x: u64) -> u32 {
    hash_finish(hash_add64(0, x), 8)
}

/// Open vSwitch's `hash_bytes`: 32-bit words (little-endian, the last
/// padded with zeros) through `hash_add`, finished with the length.
pub fn hash_bytes(p: &[u8], basis: u32) -> u32 {
    let mut h = basis;
    for c in p.chunks(4) {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        h = hash_add(h, u32::from_le_bytes(w));
    }
    hash_finish(h, p.len() as u32)
}

/// The rendezvous choice of `hash` with fields: among the buckets `live`
/// says may be taken and whose weight is above 0, the highest
/// `(hash_2words(id, basis) & 0xffff) * weight`, the last of equals.
pub fn rendezvous(buckets: &[Bucket], live: impl Fn(usize) -> bool, basis: u32) -> Option<usize> {
    let mut best: Option<(usize, u32)> = None;
    for (i, b) in buckets.iter().enumerate() {
        if b.weight == 0 || !live(i) {
            continue;
        }
        let score = (crate::exec::multipath::hash_2words(b.bucket_id, basis) & 0xffff)
            * u32::from(b.weight);
        if best.is_none_or(|(_, s)| score >= s) {
            best = Some((i, score));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::oxm::OxmField;

    fn buckets(weights: &[u16]) -> Vec<Bucket> {
        weights
            .iter()
            .enumerate()
            .map(|(i, &w)| Bucket {
                bucket_id: i as u32,
                weight: w,
                ..Bucket::default()
            })
            .collect()
    }

    #[test]
    fn webster_shares_slots_by_weight() {
        // Equal weights: 16 slots, alternating.
        let t = webster(&[100, 100]).unwrap();
        assert_eq!(t.len(), 16);
        assert_eq!(t.iter().filter(|&&b| b == 0).count(), 8);
        assert_eq!(&t[..4], &[0, 1, 0, 1]);
        // 1:3 in 16 slots: 4 and 12.
        let t = webster(&[1, 3]).unwrap();
        assert_eq!(t.iter().filter(|&&b| b == 0).count(), 4);
        // Weight 0 gets nothing; the slots are what the lightest needs.
        let t = webster(&[0, 10, 1000]).unwrap();
        assert_eq!(t.len(), 128);
        assert!(!t.contains(&0));
        assert!(t.contains(&1));
        // Past 256 slots, or nothing above 0: no table.
        assert_eq!(webster(&[1, 300]), None);
        assert_eq!(webster(&[0, 0]), None);
        assert_eq!(webster(&[]), None);
    }

    #[test]
    fn selectors_as_open_vswitch_sets_them_up() {
        let b = buckets(&[100, 100]);
        let dp = SelectionMethod::new(Method::DpHash);
        assert!(matches!(
            Selector::new(GroupType::Select, Some(&dp), &b),
            Selector::DpHash {
                symmetric: false,
                basis: 0,
                ..
            }
        ));
        let sym = SelectionMethod {
            param: 1 << 32 | 7,
            ..dp.clone()
        };
        assert!(matches!(
            Selector::new(GroupType::Select, Some(&sym), &b),
            Selector::DpHash {
                symmetric: true,
                basis: 7,
                ..
            }
        ));
        // Weights needing more than 256 slots: the default.
        assert_eq!(
            Selector::new(GroupType::Select, Some(&dp), &buckets(&[1, 1000])),
            Selector::Default
        );
        // hash without fields, no method, another type: the default.
        let hash = SelectionMethod::new(Method::Hash);
        assert_eq!(
            Selector::new(GroupType::Select, Some(&hash), &b),
            Selector::Default
        );
        assert_eq!(
            Selector::new(GroupType::Select, None, &b),
            Selector::Default
        );
        assert_eq!(
            Selector::new(GroupType::All, Some(&dp), &b),
            Selector::Default
        );
        let fields = SelectionMethod {
            fields: vec![HashField::whole(OxmField::Ipv4Src)],
            ..hash
        };
        assert!(matches!(
            Selector::new(GroupType::Select, Some(&fields), &b),
            Selector::Fields { .. }
        ));
    }

    #[test]
    fn rendezvous_spreads_by_weight_and_skips_the_dead() {
        let b = buckets(&[1, 3, 0]);
        let mut n = [0u32; 3];
        for basis in 0..4000u32 {
            n[rendezvous(&b, |_| true, hash_bytes(&basis.to_le_bytes(), 0)).unwrap()] += 1;
        }
        assert_eq!(n[2], 0, "weight 0 never");
        // Bucket 1 weighs 3: it wins well over half.
        assert!(n[1] > 2 * n[0], "{n:?}");
        assert_eq!(rendezvous(&b, |i| i == 0, 5), Some(0));
        assert_eq!(rendezvous(&b, |i| i == 2, 5), None);
    }
}
