//! Groups as a packet meets them: which buckets it takes (all, select by
//! hash and weight among live buckets with the group's selection method,
//! `crate::select`, indirect, fast failover by liveness from the
//! snapshot) and running each bucket on its own copy of the packet,
//! within the per-packet limits.

use super::*;
use crate::exec::multipath::{hash_add, hash_add64, hash_finish};
use crate::select::{hash_bytes, rendezvous, Selector};
use ofp::msg::selection::HashField;

impl Exec {
    /// Which buckets of group `g` are live (none if the snapshot has no
    /// entry for it): looked up once per group a packet meets.
    fn liveness(snap: &Snapshot, g: u32) -> &[bool] {
        snap.bucket_live.get(&g).map_or(&[], |v| v)
    }

    /// Whether the packet meets `f`'s prerequisites (its EtherType, its
    /// IP protocol, ...), theirs included.
    fn meets(&mut self, f: OxmField, frame: &[u8], cx: &mut Ctx<'_>) -> bool {
        f.prerequisites().iter().all(|(need, values)| {
            values.contains(&self.field_value(*need, frame, cx)) && self.meets(*need, frame, cx)
        })
    }

    /// `dp_hash`'s hash of the packet: Open vSwitch's `flow_hash_5tuple`
    /// (IPv4, IPv6 or ARP addresses, the protocol, and the transport ports
    /// or ICMP type and code as one word), or its symmetric L4 hash.
    fn dp_hash(&mut self, symmetric: bool, basis: u32, frame: &[u8], cx: &mut Ctx<'_>) -> u32 {
        if symmetric {
            return self.hash_input(frame, cx).symmetric_l4(basis);
        }
        use OxmField as F;
        let mut get = |f| self.field_value(f, frame, cx);
        let eth = get(F::EthType) as u16;
        let word = |v: u128| u32::from_le_bytes((v as u32).to_be_bytes());
        let mut h = basis;
        let proto = match eth {
            0x86dd => {
                for f in [F::Ipv6Src, F::Ipv6Dst] {
                    let b = get(f).to_be_bytes();
                    for half in b.chunks(8) {
                        let mut w = [0u8; 8];
                        w.copy_from_slice(half);
                        h = hash_add64(h, u64::from_le_bytes(w));
                    }
                }
                get(F::IpProto) as u8
            }
            0x0800 => {
                h = hash_add(h, word(get(F::Ipv4Src)));
                h = hash_add(h, word(get(F::Ipv4Dst)));
                get(F::IpProto) as u8
            }
            0x0806 => {
                h = hash_add(h, word(get(F::ArpSpa)));
                h = hash_add(h, word(get(F::ArpTpa)));
                get(F::ArpOp) as u8
            }
            _ => return hash_finish(h, 42),
        };
        h = hash_add(h, u32::from(proto));
        let ports = match (eth, proto) {
            (0x0806, 1 | 6 | 17 | 58 | 132) => Some((0, 0)),
            (_, 6) => Some((get(F::TcpSrc), get(F::TcpDst))),
            (_, 17) => Some((get(F::UdpSrc), get(F::UdpDst))),
            (_, 132) => Some((get(F::SctpSrc), get(F::SctpDst))),
            (0x0800, 1) => Some((get(F::Icmpv4Type), get(F::Icmpv4Code))),
            (0x86dd, 58) => Some((get(F::Icmpv6Type), get(F::Icmpv6Code))),
            _ => None,
        };
        if let Some((src, dst)) = ports {
            let (s, d) = ((src as u16).to_be_bytes(), (dst as u16).to_be_bytes());
            h = hash_add(h, u32::from_le_bytes([s[0], s[1], d[0], d[1]]));
        }
        hash_finish(h, 42)
    }

    /// `hash`'s hash of the packet: each field it meets the prerequisites
    /// of, masked, in order, over `basis`.
    fn fields_hash(
        &mut self,
        basis: u32,
        fields: &[HashField],
        frame: &[u8],
        cx: &mut Ctx<'_>,
    ) -> u32 {
        let mut h = basis;
        for f in fields {
            if !self.meets(f.field, frame, cx) {
                continue;
            }
            let w = f.field.info().map_or(0, |i| i.width as usize);
            let v = self.field_value(f.field, frame, cx) & f.mask;
            h = hash_bytes(&v.to_be_bytes()[16 - w..], h);
        }
        h
    }

    /// Which buckets of `grp` this packet takes.
    pub(super) fn choose<const T: bool>(
        &mut self,
        snap: &Snapshot,
        g: u32,
        grp: &GroupRt,
        frame: &[u8],
        cx: &mut Ctx<'_>,
    ) -> Option<std::ops::Range<usize>> {
        let live = Self::liveness(snap, g);
        let live_bucket = |i: usize| live.get(i).copied().unwrap_or(false);
        match grp.group_type {
            GroupType::All => Some(0..grp.buckets.len()),
            // Every bucket, as Open vSwitch runs an indirect group (one,
            // unless INSERT_BUCKET gave it more).
            GroupType::Indirect => (!grp.buckets.is_empty()).then_some(0..grp.buckets.len()),
            GroupType::FastFailover => grp
                .buckets
                .iter()
                .enumerate()
                .position(|(i, _)| live_bucket(i))
                .map(|i| i..i + 1),
            GroupType::Select if grp.selector != Selector::Default => {
                let pick = match &grp.selector {
                    Selector::DpHash {
                        symmetric,
                        basis,
                        table,
                    } => {
                        let h = self.dp_hash(*symmetric, *basis, frame, cx);
                        let n = table.len();
                        // From the slot the hash names on, the first live
                        // bucket (weights keep their share among the live).
                        let i = (0..n)
                            .map(|k| table[(h as usize).wrapping_add(k) & (n - 1)] as usize)
                            .find(|&b| live_bucket(b) && grp.buckets[b].weight > 0);
                        if T {
                            self.note(format!("    dp_hash {h:#010x} -> bucket {i:?}"));
                        }
                        i
                    }
                    Selector::Fields { basis, fields } => {
                        let h = self.fields_hash(*basis, fields, frame, cx);
                        let i = rendezvous(&grp.buckets, live_bucket, h);
                        if T {
                            self.note(format!("    hash {h:#010x} -> bucket {i:?}"));
                        }
                        i
                    }
                    Selector::Default => None,
                };
                pick.map(|i| i..i + 1)
            }
            GroupType::Select => {
                // Hash the flow so that one flow keeps one bucket; weight the choice.
                let live: u32 = grp
                    .buckets
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| live_bucket(*i))
                    .map(|(_, b)| b.weight as u32)
                    .sum();
                if live == 0 {
                    return None;
                }
                let k = &self.key;
                let mut h = 0xcbf2_9ce4_8422_2325u64;
                for w in [
                    k.w[2],
                    k.w[3],
                    k.w[4],
                    k.get(s::IP_PROTO),
                    k.w[6] >> 32,
                    k.w[7],
                    k.w[8],
                    k.w[9],
                    k.w[10],
                ] {
                    h = (h ^ w).wrapping_mul(0x1000_0000_01b3);
                    h ^= h >> 29;
                }
                let mut pick = (h % live as u64) as u32;
                for (i, b) in grp.buckets.iter().enumerate() {
                    if !live_bucket(i) {
                        continue;
                    }
                    if pick < b.weight as u32 {
                        return Some(i..i + 1);
                    }
                    pick -= b.weight as u32;
                }
                None
            }
            GroupType::Unknown(_) => None,
        }
    }

    #[inline(never)] // a group runs buckets: its call costs nothing beside them, and inline it grew every run_actions call
    pub(super) fn group<const T: bool>(
        &mut self,
        g: u32,
        frame: &[u8],
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        if depth >= MAX_GROUP_DEPTH {
            if T {
                self.note(format!("group:{g} -> dropped: groups nested too deep"));
            }
            return;
        }
        if cx.buckets_run >= MAX_BUCKETS_PER_PACKET {
            if T {
                self.note(format!(
                    "group:{g} -> dropped: more than {MAX_BUCKETS_PER_PACKET} buckets for one packet"
                ));
            }
            self.over_limit += 1;
            return;
        }
        let snap = cx.snap;
        let Some(grp) = snap.groups.get(&g) else {
            if T {
                self.note(format!("group:{g} -> no such group: nothing"));
            }
            return;
        };
        if !T {
            grp.counters.hit(cx.worker, frame.len() as u64, cx.now_ns);
        }
        let Some(range) = self.choose::<T>(snap, g, grp, frame, cx) else {
            if T {
                self.note(format!("group:{g} -> no live bucket: nothing"));
            }
            return;
        };
        if T {
            let (ty, first, n) = (grp.group_type, range.start, range.len());
            self.note(format!(
                "group:{g} (type={ty}): {n} bucket(s) from bucket {first}"
            ));
        }
        // Each bucket works on its own copy of the packet; the packet the
        // rule goes on with is not changed by the group.
        let (saved_key, saved_off, saved_queue, saved_tun, saved_meta, saved_stale) = (
            self.key,
            self.off,
            cx.queue,
            self.tun,
            self.metadata,
            cx.key_stale,
        );
        let end = range.end;
        for i in range {
            if cx.buckets_run >= MAX_BUCKETS_PER_PACKET {
                if T {
                    self.note(format!(
                        "bucket {i} and after -> dropped: more than {MAX_BUCKETS_PER_PACKET} buckets for one packet"
                    ));
                }
                self.over_limit += (end - i) as u64;
                break;
            }
            cx.buckets_run += 1;
            let b = &grp.buckets[i];
            if T {
                self.note(format!("bucket {i}:"));
                self.indent += 1;
            } else if let Some(c) = grp.bucket_counters.get(i) {
                c.hit(cx.worker, frame.len() as u64, cx.now_ns);
            }
            let mut copy = frame.to_vec();
            let first_out = self.outputs.len();
            let outer_from = std::mem::replace(&mut cx.pending_from, first_out);
            self.run_actions::<T, _>(&b.actions, &mut copy, cx, depth + 1);
            if T {
                self.indent -= 1;
            }
            // This bucket's outputs carry this bucket's packet.
            self.outputs_carry(first_out, copy);
            cx.pending_from = outer_from;
            cx.dropped = false;
            // An exit in a bucket ends that bucket only (ovs-actions(7)).
            cx.exited = false;
            self.key = saved_key;
            self.off = saved_off;
            cx.queue = saved_queue;
            // A bucket runs on a copy of the packet, metadata included.
            self.tun = saved_tun;
            self.metadata = saved_meta;
            cx.key_stale = saved_stale;
        }
    }
}
