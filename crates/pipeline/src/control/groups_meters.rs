//! Groups and meters: GROUP_MOD and METER_MOD (a delete takes the flows
//! that use them along, as the spec says), the reference counts their
//! statistics report, and which fast-failover buckets are live.
//!
//! Groups keep OpenFlow 1.5's bucket ids (a bucket without one gets the
//! lowest free; two alike are `OFPGMFC_BAD_BUCKET`) and selection method
//! (`crate::select` works out how a select group chooses). INSERT_BUCKET
//! and REMOVE_BUCKET change a group's buckets as Open vSwitch 3.1 does
//! (`Pipeline::bucket_command`).
//!
//! Contract: a refused modification changes nothing.

use super::*;
use crate::select::Selector;
use ofp::msg::group::{assign_bucket_ids, Bucket, BUCKET_ALL, BUCKET_FIRST, BUCKET_LAST};

impl Pipeline {
    /// Applies a GROUP_MOD. Deleting a group removes the rules that use it.
    pub fn group_mod(&mut self, gm: &GroupMod, now_ns: u64) -> Result<Vec<Removed>, OfpError> {
        self.liveness = None;
        let e =
            |c: GroupModFailedCode, d: &'static str| OfpError::new(ErrorCode::GroupModFailed(c), d);
        match gm.command {
            GroupModCommand::Add | GroupModCommand::Modify => {
                let add = gm.command == GroupModCommand::Add;
                if gm.group_id > group_no::MAX {
                    return Err(e(GroupModFailedCode::InvalidGroup, "reserved group id"));
                }
                presence(
                    add,
                    self.groups.contains_key(&gm.group_id),
                    e(GroupModFailedCode::GroupExists, "group exists"),
                    e(GroupModFailedCode::UnknownGroup, "no such group"),
                )?;
                if add && self.groups.len() >= self.config.max_groups {
                    return Err(e(GroupModFailedCode::OutOfGroups, "group table full"));
                }
                let mut buckets = gm.buckets.clone();
                assign_bucket_ids(&mut buckets, &[]);
                if repeats_an_id(&buckets) {
                    return Err(e(GroupModFailedCode::BadBucket, "bucket id repeated"));
                }
                let gm = GroupMod {
                    buckets,
                    ..gm.clone()
                };
                self.check_buckets(&gm, false)?;
                // MODIFY keeps the group's counters and age; buckets start afresh.
                let kept = self
                    .groups
                    .get(&gm.group_id)
                    .map(|old| (old.rt.counters.clone(), old.created_ns));
                self.install_group(&gm, kept, |_| None, now_ns);
                Ok(Vec::new())
            }
            GroupModCommand::InsertBucket | GroupModCommand::RemoveBucket => {
                self.bucket_command(gm, now_ns)?;
                Ok(Vec::new())
            }
            GroupModCommand::Delete => {
                let ids: HashSet<u32> = selected_ids(&self.groups, gm.group_id, group_no::ALL)
                    .into_iter()
                    .collect();
                // Deleting a group other groups still forward to would break
                // them (one pass over the groups that stay).
                let chained = self
                    .groups
                    .values()
                    .filter(|g| !ids.contains(&g.group_id))
                    .flat_map(|g| {
                        g.rt.buckets
                            .iter()
                            .flat_map(|b| ofp::action::flattened(&b.actions))
                    })
                    .any(|a| matches!(a, Action::Group(x) if ids.contains(x)));
                if chained {
                    return Err(e(
                        GroupModFailedCode::ChainedGroup,
                        "another group forwards to this group",
                    ));
                }
                for id in &ids {
                    self.groups.remove(id);
                }
                // One pass over the rules, however many groups go.
                Ok(self.remove_rules_where(
                    |r| {
                        r.actions()
                            .any(|a| matches!(a, Action::Group(g) if ids.contains(g)))
                    },
                    FlowRemovedReason::GroupDelete,
                ))
            }
            GroupModCommand::Unknown(_) => Err(e(
                GroupModFailedCode::BadCommand,
                "unknown group-mod command",
            )),
        }
    }

    /// Puts `gm`'s group in place (checked already): with the counters and
    /// creation time `kept` (a modified group's) or new ones, and each
    /// bucket's counters from `bucket_counters` (by bucket id) or new.
    fn install_group(
        &mut self,
        gm: &GroupMod,
        kept: Option<(Arc<Counters>, u64)>,
        bucket_counters: impl Fn(u32) -> Option<Arc<Counters>>,
        now_ns: u64,
    ) {
        let workers = self.config.workers;
        let (counters, created_ns) =
            kept.unwrap_or_else(|| (Arc::new(Counters::new(workers)), now_ns));
        let rt = GroupRt {
            group_type: gm.group_type,
            buckets: gm.buckets.clone(),
            selection: gm.selection.clone(),
            selector: Selector::new(gm.group_type, gm.selection.as_ref(), &gm.buckets),
            counters,
            bucket_counters: gm
                .buckets
                .iter()
                .map(|b| {
                    bucket_counters(b.bucket_id).unwrap_or_else(|| Arc::new(Counters::new(workers)))
                })
                .collect(),
            total_weight: gm.buckets.iter().map(|b| b.weight as u32).sum(),
        };
        self.groups.insert(
            gm.group_id,
            Group {
                group_id: gm.group_id,
                created_ns,
                rt: Arc::new(rt),
            },
        );
    }

    /// OpenFlow 1.5's INSERT_BUCKET and REMOVE_BUCKET, as Open vSwitch 3.1
    /// does them (ofproto.c `modify_group_start`,
    /// `copy_buckets_for_insert_bucket`/`_remove_bucket`; the message's own
    /// checks, lib/ofp-group.c `ofputil_check_group_mod`, first). The
    /// group keeps its type, selection method, counters and age, and the
    /// buckets that stay keep theirs.
    fn bucket_command(&mut self, gm: &GroupMod, now_ns: u64) -> Result<(), OfpError> {
        let e =
            |c: GroupModFailedCode, d: &'static str| OfpError::new(ErrorCode::GroupModFailed(c), d);
        let insert = gm.command == GroupModCommand::InsertBucket;
        // The message on its own, by the type it names (ovs-ofctl names
        // none: `all`); weights are not checked for INSERT_BUCKET.
        match gm.group_type {
            GroupType::Unknown(_) => {
                return Err(e(GroupModFailedCode::BadType, "unknown group type"))
            }
            GroupType::Indirect if gm.buckets.len() != 1 => {
                return Err(e(
                    GroupModFailedCode::InvalidGroup,
                    "an indirect group has exactly one bucket",
                ))
            }
            _ => {}
        }
        if !insert && !gm.buckets.is_empty() {
            return Err(e(
                GroupModFailedCode::BadBucket,
                "REMOVE_BUCKET names its bucket by command_bucket_id, it carries none",
            ));
        }
        for b in &gm.buckets {
            let watches = b.watch_port != port_no::ANY || b.watch_group != group_no::ANY;
            match gm.group_type {
                GroupType::All | GroupType::Indirect if watches => {
                    return Err(e(
                        GroupModFailedCode::WatchUnsupported,
                        "a watch in a bucket of an all or indirect group mod",
                    ))
                }
                GroupType::FastFailover if !watches => {
                    return Err(e(
                        GroupModFailedCode::InvalidGroup,
                        "a fast-failover bucket needs a watch port or group",
                    ))
                }
                _ => {}
            }
        }
        let Some(old) = self.groups.get(&gm.group_id) else {
            return Err(e(GroupModFailedCode::UnknownGroup, "no such group"));
        };
        let old_buckets = &old.rt.buckets;
        let position = |id: u32| {
            old_buckets
                .iter()
                .position(|b| b.bucket_id == id)
                .ok_or(e(GroupModFailedCode::UnknownBucket, "no such bucket"))
        };
        let buckets: Vec<Bucket> = if insert {
            let at = match gm.command_bucket_id {
                BUCKET_LAST => old_buckets.len(),
                // ALL (not in 1.5's INSERT_BUCKET) inserts first, as
                // Open vSwitch does.
                BUCKET_FIRST | BUCKET_ALL => 0,
                id => position(id)? + 1,
            };
            let taken: Vec<u32> = old_buckets.iter().map(|b| b.bucket_id).collect();
            let mut new = gm.buckets.clone();
            assign_bucket_ids(&mut new, &taken);
            if repeats_an_id(&new) {
                return Err(e(GroupModFailedCode::BadBucket, "bucket id repeated"));
            }
            if new.iter().any(|b| taken.contains(&b.bucket_id)) {
                return Err(e(
                    GroupModFailedCode::BucketExists,
                    "the group has a bucket with that id",
                ));
            }
            let mut v = old_buckets[..at].to_vec();
            v.extend(new);
            v.extend_from_slice(&old_buckets[at..]);
            v
        } else {
            let skip = match gm.command_bucket_id {
                BUCKET_ALL => None,
                BUCKET_FIRST => (!old_buckets.is_empty()).then_some(0),
                BUCKET_LAST => old_buckets.len().checked_sub(1),
                id => Some(position(id)?),
            };
            match (gm.command_bucket_id, skip) {
                (BUCKET_ALL, _) => Vec::new(),
                (_, Some(i)) => [&old_buckets[..i], &old_buckets[i + 1..]].concat(),
                (_, None) => old_buckets.clone(),
            }
        };
        let merged = GroupMod {
            command: GroupModCommand::Modify,
            group_type: old.rt.group_type,
            group_id: gm.group_id,
            command_bucket_id: BUCKET_ALL,
            buckets,
            selection: old.rt.selection.clone(),
        };
        self.check_buckets(&merged, true)?;
        let old = &self.groups[&gm.group_id];
        let kept = Some((old.rt.counters.clone(), old.created_ns));
        let by_id: HashMap<u32, Arc<Counters>> = old
            .rt
            .buckets
            .iter()
            .zip(&old.rt.bucket_counters)
            .map(|(b, c)| (b.bucket_id, c.clone()))
            .collect();
        self.install_group(&merged, kept, |id| by_id.get(&id).cloned(), now_ns);
        Ok(())
    }

    /// Checks a group as it would be installed. `bucket_command`: the
    /// result of INSERT_BUCKET or REMOVE_BUCKET, whose buckets Open vSwitch
    /// does not check against the group's type again (their number in an
    /// indirect group, weights outside select groups, fast-failover
    /// buckets without a watch: the message was checked by its own type).
    pub(super) fn check_buckets(
        &self,
        gm: &GroupMod,
        bucket_command: bool,
    ) -> Result<(), OfpError> {
        let e =
            |c: GroupModFailedCode, d: &'static str| OfpError::new(ErrorCode::GroupModFailed(c), d);
        if gm.selection.is_some() && gm.group_type != GroupType::Select {
            // What Open vSwitch's decoder answers (OFPBPC_BAD_VALUE).
            return Err(OfpError::new(
                ErrorCode::Unknown { ty: 14, code: 2 },
                "a selection method outside a select group",
            ));
        }
        match gm.group_type {
            GroupType::Unknown(_) => {
                return Err(e(GroupModFailedCode::BadType, "unknown group type"))
            }
            _ if bucket_command => {}
            GroupType::Indirect if gm.buckets.len() != 1 => {
                return Err(e(
                    GroupModFailedCode::BadBucket,
                    "an indirect group has exactly one bucket",
                ))
            }
            _ => {}
        }
        // Its GROUP_STATS and GROUP_DESC entries must each fit one reply.
        let buckets_len: usize = gm.buckets.iter().map(|b| b.wire_len()).sum();
        if gm.buckets.len() > GROUP_BUCKETS_MAX {
            return Err(e(
                GroupModFailedCode::OutOfBuckets,
                "more buckets than a GROUP_STATS reply can report",
            ));
        }
        // GROUP_DESC: reply header 16, entry header 8, the buckets.
        if 16 + 8 + buckets_len > ofp::header::MAX_MSG_LEN {
            return Err(e(
                GroupModFailedCode::BadBucket,
                "the buckets would not fit a GROUP_DESC reply (65 535 bytes)",
            ));
        }
        for b in &gm.buckets {
            if gm.group_type != GroupType::Select && b.weight != 0 && !bucket_command {
                return Err(e(
                    GroupModFailedCode::WeightUnsupported,
                    "weights are for select groups",
                ));
            }
            if gm.group_type == GroupType::FastFailover
                && !bucket_command
                && b.watch_port == port_no::ANY
                && b.watch_group == group_no::ANY
            {
                return Err(e(
                    GroupModFailedCode::BadWatch,
                    "a fast-failover bucket needs a watch port or group",
                ));
            }
            if gm.group_type == GroupType::FastFailover
                && b.watch_group != group_no::ANY
                && !self.groups.contains_key(&b.watch_group)
            {
                return Err(e(
                    GroupModFailedCode::BadWatch,
                    "watched group does not exist",
                ));
            }
            validate::actions(
                &b.actions,
                validate::Packets::Unknown,
                &Context {
                    n_tables: self.config.n_tables,
                    groups: &self.groups,
                    meters: &self.meters,
                    of10_edits: false,
                },
            )
            .or_else(|err| match err.code {
                // A bucket may name the group being added (that is a loop, reported below).
                ErrorCode::BadAction(ofp::error::BadActionCode::BadOutGroup)
                    if ofp::action::flattened(&b.actions)
                        .any(|a| *a == Action::Group(gm.group_id)) =>
                {
                    Ok(())
                }
                _ => Err(err),
            })?;
        }
        // Loop detection: following group actions from this group must
        // never come back (OFPGMFC_LOOP: a packet would go round), nor
        // following watched groups (OFPGMFC_BAD_WATCH: liveness would be
        // defined by itself). The two are separate: a packet follows only
        // actions, liveness only watches.
        let next = |g: u32, watch: bool| -> Vec<u32> {
            let buckets = if g == gm.group_id {
                &gm.buckets
            } else {
                match self.groups.get(&g) {
                    Some(x) => &x.rt.buckets,
                    None => return Vec::new(),
                }
            };
            let mut v = Vec::new();
            for b in buckets {
                if watch {
                    if b.watch_group != group_no::ANY {
                        v.push(b.watch_group);
                    }
                } else {
                    v.extend(ofp::action::flattened(&b.actions).filter_map(|a| match a {
                        Action::Group(x) => Some(*x),
                        _ => None,
                    }));
                }
            }
            v
        };
        let loops = |watch: bool| {
            let mut stack = next(gm.group_id, watch);
            let mut seen = HashSet::new();
            while let Some(g) = stack.pop() {
                if g == gm.group_id {
                    return true;
                }
                if seen.insert(g) {
                    stack.extend(next(g, watch));
                }
            }
            false
        };
        if loops(false) {
            return Err(e(GroupModFailedCode::Loop, "group chain loops back"));
        }
        if loops(true) {
            return Err(e(
                GroupModFailedCode::BadWatch,
                "the group watches itself, directly or through other groups",
            ));
        }
        Ok(())
    }

    /// How many flows and groups forward to each group directly
    /// (GROUP_STATS ref_count, OpenFlow 1.3 7.3.5.9), in one pass over the
    /// rules and one over the groups; each counts once however many of
    /// its actions name the group.
    pub fn group_ref_counts(&self) -> HashMap<u32, u32> {
        let mut n = HashMap::new();
        let mut seen: Vec<u32> = Vec::new();
        let mut count = |actions: &mut dyn Iterator<Item = &Action>| {
            seen.clear();
            seen.extend(actions.filter_map(|a| match a {
                Action::Group(g) => Some(*g),
                _ => None,
            }));
            seen.sort_unstable();
            seen.dedup();
            for g in &seen {
                *n.entry(*g).or_insert(0) += 1;
            }
        };
        for r in self.tables.iter().flat_map(|t| t.rules()) {
            count(&mut r.actions());
        }
        for g in self.groups.values() {
            count(
                &mut g
                    .rt
                    .buckets
                    .iter()
                    .flat_map(|b| ofp::action::flattened(&b.actions)),
            );
        }
        n
    }

    /// How many rules use each meter (METER_STATS flow_count), in one pass.
    pub fn meter_flow_counts(&self) -> HashMap<u32, u32> {
        let mut n = HashMap::new();
        for m in self
            .tables
            .iter()
            .flat_map(|t| t.rules())
            .filter_map(|r| r.meter())
        {
            *n.entry(m).or_insert(0) += 1;
        }
        n
    }

    /// Applies a METER_MOD. Deleting a meter removes the rules that use it.
    pub fn meter_mod(&mut self, mm: &MeterMod, now_ns: u64) -> Result<Vec<Removed>, OfpError> {
        let e =
            |c: MeterModFailedCode, d: &'static str| OfpError::new(ErrorCode::MeterModFailed(c), d);
        match mm.command {
            MeterModCommand::Add | MeterModCommand::Modify => {
                let add = mm.command == MeterModCommand::Add;
                if mm.meter_id == 0 || mm.meter_id > meter_no::MAX {
                    return Err(e(MeterModFailedCode::InvalidMeter, "meter id out of range"));
                }
                presence(
                    add,
                    self.meters.contains_key(&mm.meter_id),
                    e(MeterModFailedCode::MeterExists, "meter exists"),
                    e(MeterModFailedCode::UnknownMeter, "no such meter"),
                )?;
                let unit = mm.flags & (meter_flags::KBPS | meter_flags::PKTPS);
                let known = meter_flags::KBPS
                    | meter_flags::PKTPS
                    | meter_flags::BURST
                    | meter_flags::STATS;
                if unit == (meter_flags::KBPS | meter_flags::PKTPS) || mm.flags & !known != 0 {
                    return Err(e(MeterModFailedCode::BadFlags, "meter flags"));
                }
                if add && self.meters.len() >= self.config.max_meters {
                    return Err(e(MeterModFailedCode::OutOfMeters, "meter table full"));
                }
                if mm.bands.len() > self.config.max_bands {
                    return Err(e(MeterModFailedCode::OutOfBands, "too many bands"));
                }
                for b in &mm.bands {
                    match b {
                        MeterBand::Experimenter { .. } => {
                            return Err(e(
                                MeterModFailedCode::BadBand,
                                "no experimenter bands known",
                            ))
                        }
                        _ if b.rate() == 0 => {
                            return Err(e(MeterModFailedCode::BadRate, "band rate is zero"))
                        }
                        MeterBand::DscpRemark { prec_level, .. }
                            if *prec_level == 0 || *prec_level > 63 =>
                        {
                            return Err(e(
                                MeterModFailedCode::BadBandValue,
                                "prec_level out of range",
                            ))
                        }
                        _ => {}
                    }
                }
                let state = Arc::new(MeterState::new(mm.meter_id, mm.flags, &mm.bands));
                self.meters.insert(
                    mm.meter_id,
                    Meter {
                        meter_id: mm.meter_id,
                        created_ns: now_ns,
                        state,
                    },
                );
                Ok(Vec::new())
            }
            MeterModCommand::Delete => {
                let ids: HashSet<u32> = selected_ids(&self.meters, mm.meter_id, meter_no::ALL)
                    .into_iter()
                    .collect();
                for id in &ids {
                    self.meters.remove(id);
                }
                Ok(self.remove_rules_where(
                    |r| r.meter().is_some_and(|m| ids.contains(&m)),
                    FlowRemovedReason::Delete,
                ))
            }
            MeterModCommand::Unknown(_) => Err(e(
                MeterModFailedCode::BadCommand,
                "unknown meter-mod command",
            )),
        }
    }
}

/// Whether two of `buckets` have the same id (Open vSwitch's decoder
/// refuses that: `OFPGMFC_BAD_BUCKET`).
fn repeats_an_id(buckets: &[Bucket]) -> bool {
    let mut ids: Vec<u32> = buckets.iter().map(|b| b.bucket_id).collect();
    ids.sort_unstable();
    ids.windows(2).any(|w| w[0] == w[1])
}

/// The most buckets a group may have: its GROUP_STATS entry (40 bytes and
/// 16 per bucket) must fit one reply message (16-byte header).
pub const GROUP_BUCKETS_MAX: usize = (ofp::header::MAX_MSG_LEN - 16 - 40) / 16;

/// ADD needs the id free, MODIFY needs it taken.
pub(super) fn presence(
    add: bool,
    exists: bool,
    if_exists: OfpError,
    if_missing: OfpError,
) -> Result<(), OfpError> {
    match (add, exists) {
        (true, true) => Err(if_exists),
        (false, false) => Err(if_missing),
        _ => Ok(()),
    }
}

/// The ids a DELETE names: every id for `all`, else `id` if it exists.
pub(super) fn selected_ids<V>(map: &HashMap<u32, V>, id: u32, all: u32) -> Vec<u32> {
    if id == all {
        map.keys().copied().collect()
    } else {
        map.contains_key(&id).then_some(id).into_iter().collect()
    }
}

/// Which buckets of each group are live: the watched port is live (or
/// none is watched) and the watched group has a live bucket (or none is
/// watched). Worked out for every group at once, each group once (an
/// explicit stack, so a long chain of watched groups cannot exhaust the
/// thread's stack); a group met again while its own liveness is being
/// worked out (a loop GROUP_MOD refuses, kept safe here anyway) is not live.
pub(super) fn bucket_liveness(
    groups: &HashMap<u32, Group>,
    ports: &[PortState],
) -> rustc_hash::FxHashMap<u32, Box<[bool]>> {
    // `ports` is sorted by number (`Pipeline::set_port`).
    let port_live = |p: u32| {
        p == port_no::ANY
            || ports
                .binary_search_by_key(&p, |x| x.port_no)
                .is_ok_and(|i| ports[i].live)
    };
    let mut live: HashMap<u32, bool> = HashMap::with_capacity(groups.len());
    let mut visiting: HashSet<u32> = HashSet::new();
    let mut stack: Vec<(u32, bool)> = Vec::new();
    for &root in groups.keys() {
        stack.push((root, false));
        while let Some((g, expanded)) = stack.pop() {
            let Some(grp) = groups.get(&g) else { continue };
            if expanded {
                let any = grp.rt.buckets.iter().any(|b| {
                    port_live(b.watch_port)
                        && (b.watch_group == group_no::ANY
                            || live.get(&b.watch_group).copied().unwrap_or(false))
                });
                live.insert(g, any);
                continue;
            }
            if live.contains_key(&g) || !visiting.insert(g) {
                continue;
            }
            stack.push((g, true));
            for b in &grp.rt.buckets {
                let w = b.watch_group;
                if w != group_no::ANY && !live.contains_key(&w) && !visiting.contains(&w) {
                    stack.push((w, false));
                }
            }
        }
    }
    groups
        .iter()
        .map(|(id, grp)| {
            let v: Box<[bool]> = grp
                .rt
                .buckets
                .iter()
                .map(|b| {
                    port_live(b.watch_port)
                        && (b.watch_group == group_no::ANY
                            || live.get(&b.watch_group).copied().unwrap_or(false))
                })
                .collect();
            (*id, v)
        })
        .collect()
}
