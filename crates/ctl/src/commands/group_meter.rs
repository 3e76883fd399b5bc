//! The group and meter commands: dump-groups, dump-group-stats,
//! dump-group-features, add-group, mod-group, del-groups, insert-buckets,
//! remove-buckets (OpenFlow 1.5 only, as ovs-ofctl), add-meter,
//! mod-meter, del-meters, dump-meters, meter-stats and meter-features, and
//! the group and meter text they read.
//!
//! Contract: the group or meter text, or the id (`group_id=N`, `meter=N`,
//! `N` or `all`; none is all), is checked before connecting. Group changes
//! are sent as changes (`changes::change`: alone, or as a bundle of one
//! with `--bundle`); meter changes always alone (`--bundle` is refused
//! before they get here).

use ofp::msg::group::{GroupMod, GroupModCommand, GroupType};
use ofp::msg::meter::{MeterMod, MeterModCommand};
use ofp::msg::multipart::{MultipartReplyBody as R, MultipartRequestBody as Q};
use ofp::port::{group_no, meter_no};
use ofp::text::{parse_group_mod, parse_group_mod_for, parse_meter_mod};
use ofp::Message;

use super::changes::{change, modify};
use super::{usage, Connect, Result};
use crate::client::{Client, ClientError};
use crate::{print, Opts};

/// dump-groups: the groups (all, or one), in add-group syntax.
pub(super) fn dump_groups(
    connect: &Connect<'_>,
    switch: &str,
    group: Option<&str>,
) -> Result<String> {
    let id = group_id(group)?;
    let mut c = connect(switch)?;
    let mut v = listed(&mut c, Q::GroupDesc, |b| match b {
        R::GroupDesc(g) => Some(g),
        _ => None,
    })?;
    v.retain(|g| id == group_no::ALL || g.group_id == id);
    Ok(print::group_desc(&v, c.last_xid()))
}

/// dump-group-stats: the groups' counters (all, or one).
pub(super) fn dump_group_stats(
    connect: &Connect<'_>,
    switch: &str,
    group: Option<&str>,
) -> Result<String> {
    let group_id = group_id(group)?;
    let mut c = connect(switch)?;
    let v = listed(&mut c, Q::Group { group_id }, |b| match b {
        R::Group(g) => Some(g),
        _ => None,
    })?;
    Ok(print::group_stats(&v, c.last_xid()))
}

/// dump-group-features: what the switch's groups support.
pub(super) fn dump_group_features(c: &mut Client) -> Result<String> {
    let g = single(c, Q::GroupFeatures, "GROUP_FEATURES", |b| match b {
        R::GroupFeatures(g) => Some(g),
        _ => None,
    })?;
    Ok(print::group_features(&g, c.last_xid()))
}

/// add-group: adds a group.
pub(super) fn add_group(
    connect: &Connect<'_>,
    switch: &str,
    group: &str,
    opts: &Opts,
) -> Result<String> {
    let gm = group_mod(group, GroupModCommand::Add)?;
    change(&mut connect(switch)?, &Message::GroupMod(gm), opts)
}

/// mod-group: replaces a group's type and buckets.
pub(super) fn mod_group(
    connect: &Connect<'_>,
    switch: &str,
    group: &str,
    opts: &Opts,
) -> Result<String> {
    let gm = group_mod(group, GroupModCommand::Modify)?;
    change(&mut connect(switch)?, &Message::GroupMod(gm), opts)
}

/// del-groups: deletes one group, or all.
pub(super) fn del_groups(
    connect: &Connect<'_>,
    switch: &str,
    group: Option<&str>,
    opts: &Opts,
) -> Result<String> {
    let gm = GroupMod::new(
        GroupModCommand::Delete,
        GroupType::All,
        group_id(group)?,
        Vec::new(),
    );
    change(&mut connect(switch)?, &Message::GroupMod(gm), opts)
}

/// insert-buckets and remove-buckets: OpenFlow 1.5's INSERT_BUCKET and
/// REMOVE_BUCKET (`group_id=N,command_bucket_id=first|last|N[,bucket=...]`;
/// remove-buckets takes `all` too, and it is the default there). Refused
/// before anything is sent on a connection of another version, as
/// ovs-ofctl refuses it.
pub(super) fn bucket_command(
    connect: &Connect<'_>,
    switch: &str,
    group: &str,
    command: GroupModCommand,
    opts: &Opts,
) -> Result<String> {
    let gm = parse_group_mod_for(group, command).or_else(|e| usage("group", e))?;
    let mut c = connect(switch)?;
    if c.version() != ofp::Version::V1_5 {
        let verb = if command == GroupModCommand::InsertBucket {
            "insert-bucket"
        } else {
            "remove-bucket"
        };
        return usage(verb, "needs OpenFlow 1.5 or later ('-O OpenFlow15')");
    }
    change(&mut c, &Message::GroupMod(gm), opts)
}

/// add-meter: adds a meter.
pub(super) fn add_meter(connect: &Connect<'_>, switch: &str, meter: &str) -> Result<String> {
    let mm = meter_mod(meter, MeterModCommand::Add)?;
    modify(&mut connect(switch)?, &Message::MeterMod(mm))
}

/// mod-meter: replaces a meter's bands.
pub(super) fn mod_meter(connect: &Connect<'_>, switch: &str, meter: &str) -> Result<String> {
    let mm = meter_mod(meter, MeterModCommand::Modify)?;
    modify(&mut connect(switch)?, &Message::MeterMod(mm))
}

/// del-meters: deletes one meter, or all.
pub(super) fn del_meters(
    connect: &Connect<'_>,
    switch: &str,
    meter: Option<&str>,
) -> Result<String> {
    let mm = MeterMod {
        command: MeterModCommand::Delete,
        flags: 0,
        meter_id: meter_id(meter)?,
        bands: Vec::new(),
    };
    modify(&mut connect(switch)?, &Message::MeterMod(mm))
}

/// dump-meters: the meters (all, or one), in add-meter syntax.
pub(super) fn dump_meters(
    connect: &Connect<'_>,
    switch: &str,
    meter: Option<&str>,
) -> Result<String> {
    let meter_id = meter_id(meter)?;
    let mut c = connect(switch)?;
    let v = listed(&mut c, Q::MeterConfig { meter_id }, |b| match b {
        R::MeterConfig(m) => Some(m),
        _ => None,
    })?;
    Ok(print::meter_config(&v, c.last_xid()))
}

/// meter-stats: the meters' counters (all, or one).
pub(super) fn meter_stats(
    connect: &Connect<'_>,
    switch: &str,
    meter: Option<&str>,
) -> Result<String> {
    let meter_id = meter_id(meter)?;
    let mut c = connect(switch)?;
    let v = listed(&mut c, Q::Meter { meter_id }, |b| match b {
        R::Meter(m) => Some(m),
        _ => None,
    })?;
    Ok(print::meter_stats(&v, c.last_xid()))
}

/// meter-features: what the switch's meters support.
pub(super) fn meter_features(c: &mut Client) -> Result<String> {
    let m = single(c, Q::MeterFeatures, "METER_FEATURES", |b| match b {
        R::MeterFeatures(m) => Some(m),
        _ => None,
    })?;
    Ok(print::meter_features(&m, c.last_xid()))
}

/// A GROUP_MOD from group text, with `command`.
pub(super) fn group_mod(text: &str, command: GroupModCommand) -> Result<GroupMod> {
    let mut g = parse_group_mod(text).or_else(|e| usage("group", e))?;
    g.command = command;
    Ok(g)
}

/// A METER_MOD from meter text, with `command`.
fn meter_mod(text: &str, command: MeterModCommand) -> Result<MeterMod> {
    let mut m = parse_meter_mod(text).or_else(|e| usage("meter", e))?;
    m.command = command;
    Ok(m)
}

/// `group_id=N`, `N` or nothing (all).
fn group_id(s: Option<&str>) -> Result<u32> {
    object_id(s, "group", "group_id", group_no::ALL)
}

/// `meter=N`, `N` or nothing (all).
fn meter_id(s: Option<&str>) -> Result<u32> {
    object_id(s, "meter", "meter", meter_no::ALL)
}

/// `KEY=N`, `N`, `all` or nothing (`all_id`); `what` names it in errors.
fn object_id(s: Option<&str>, what: &str, key: &str, all_id: u32) -> Result<u32> {
    let Some(s) = s else {
        return Ok(all_id);
    };
    let v = s
        .strip_prefix(key)
        .and_then(|r| r.strip_prefix('='))
        .unwrap_or(s);
    match v {
        "all" => Ok(all_id),
        _ => v
            .parse()
            .or_else(|_| usage(what, format!("`{s}`: expected {key}=N or all"))),
    }
}

/// Every entry of a multipart reply to `req`, its parts joined; `pick`
/// takes the list out of a part's body (None: another kind of body,
/// skipped).
fn listed<T>(c: &mut Client, req: Q, pick: fn(R) -> Option<Vec<T>>) -> Result<Vec<T>> {
    let mut v = Vec::new();
    for part in c.multipart(req)? {
        v.extend(pick(part.body).into_iter().flatten());
    }
    Ok(v)
}

/// The one body of a reply to `req` (a features request), `what` naming
/// it if none comes.
fn single<T>(c: &mut Client, req: Q, what: &str, pick: fn(R) -> Option<T>) -> Result<T> {
    let parts = c.multipart(req)?;
    parts
        .into_iter()
        .find_map(|p| pick(p.body))
        .ok_or_else(|| ClientError::Unexpected(format!("no {what} reply")).into())
}
