//! Groups as a packet meets them: which buckets it takes (all, select by
//! hash and weight among live buckets, indirect, fast failover by
//! liveness from the snapshot) and running each bucket on its own copy of
//! the packet, within the per-packet limits.

use super::*;

impl Exec {
    /// Which buckets of group `g` are live (none if the snapshot has no
    /// entry for it): looked up once per group a packet meets.
    fn liveness(snap: &Snapshot, g: u32) -> &[bool] {
        snap.bucket_live.get(&g).map_or(&[], |v| v)
    }

    /// Which buckets of `grp` this packet takes.
    pub(super) fn choose(
        &self,
        snap: &Snapshot,
        g: u32,
        grp: &GroupRt,
    ) -> Option<std::ops::Range<usize>> {
        let live = Self::liveness(snap, g);
        let live_bucket = |i: usize| live.get(i).copied().unwrap_or(false);
        match grp.group_type {
            GroupType::All => Some(0..grp.buckets.len()),
            GroupType::Indirect => (!grp.buckets.is_empty()).then_some(0..1),
            GroupType::FastFailover => grp
                .buckets
                .iter()
                .enumerate()
                .position(|(i, _)| live_bucket(i))
                .map(|i| i..i + 1),
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
        let Some(range) = self.choose(snap, g, grp) else {
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
