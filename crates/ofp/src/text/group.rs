//! Groups in ovs-ofctl text:
//! `group_id=1,type=select,bucket=weight:10,watch_port:2,actions=output:1,bucket=...`,
//! with OpenFlow 1.5's bucket ids (`bucket=bucket_id:3,...`) and Open
//! vSwitch's selection method (`selection_method=hash`,
//! `selection_method_param=N`, `fields(ip_src,tcp_dst=0xff00)`), and the
//! `command_bucket_id=first|last|all|N` of insert-buckets and
//! remove-buckets.

use super::actions::{format_actions, parse_actions};
use super::names::{format_port, parse_port};
use super::value::{format_masked, parse_masked, parse_num};
use super::{key_value, split_at_key, split_top, TextError};
use crate::msg::group::{
    Bucket, GroupMod, GroupModCommand, GroupType, BUCKET_ALL, BUCKET_FIRST, BUCKET_LAST, BUCKET_MAX,
};
use crate::msg::selection::{
    canonical_order, hash_field_by_name, mask_valid, ovs_field, HashField, Method, SelectionMethod,
};
use crate::oxm::OxmField;
use crate::port::{group_no, port_no};

fn parse_group_id(v: &str) -> Result<u32, TextError> {
    match v {
        "all" => Ok(group_no::ALL),
        "any" => Ok(group_no::ANY),
        _ => parse_num(v, "a group id, all or any"),
    }
}

/// A bucket, and whether its weight was given.
fn parse_bucket(s: &str) -> Result<(Bucket, bool), TextError> {
    let mut b = Bucket::default();
    let mut weighted = false;
    let (params, actions) = match split_at_key(s, "actions=") {
        Some((p, a)) => (split_top(p), Some(a)),
        None => (split_top(s), None),
    };
    let mut rest = Vec::new();
    for tok in params {
        let (k, v) = key_value(tok);
        match (k, v) {
            ("weight", Some(v)) => {
                b.weight = parse_num(v, "a bucket weight (0-65535)")?;
                weighted = true;
            }
            ("watch_port", Some(v)) => b.watch_port = parse_port(v)?,
            ("watch_group", Some(v)) => b.watch_group = parse_group_id(v)?,
            ("bucket_id", Some(v)) => {
                b.bucket_id = parse_num(v, "a bucket id (0-4294967040)")?;
                if b.bucket_id > BUCKET_MAX {
                    return Err(TextError::new(v, "a bucket id (0-4294967040)"));
                }
            }
            _ if actions.is_none() => rest.push(tok),
            _ => {
                return Err(TextError::new(
                    tok,
                    "bucket_id:N, weight:N, watch_port:N or watch_group:N before actions=",
                ))
            }
        }
    }
    b.actions = match actions {
        Some(a) => parse_actions(a)?,
        None => parse_actions(&rest.join(","))?,
    };
    Ok((b, weighted))
}

/// `fields(f1,f2=MASK,...)` or `fields=f1` (ovs-ofctl's
/// `parse_select_group_field`): each field once, a mask neither all zeros
/// nor one the field does not take.
fn parse_hash_fields(v: &str, into: &mut Vec<HashField>) -> Result<(), TextError> {
    for tok in split_top(v) {
        let (name, value) = match tok.split_once('=') {
            Some((n, x)) => (n, Some(x)),
            None => (tok, None),
        };
        let field = hash_field_by_name(name)
            .ok_or_else(|| TextError::new(name, "a field Open vSwitch can hash"))?;
        if into.iter().any(|h| h.field == field) {
            return Err(TextError::new(name, "each field once"));
        }
        let mask = match value {
            None => field.width_mask(),
            Some(x) => {
                let m = match field {
                    OxmField::NxmInPort | OxmField::InPort => parse_port(x)? as u128,
                    _ => match parse_masked(field, x)? {
                        (m, None) => m,
                        _ => return Err(TextError::new(x, "a mask written as a value")),
                    },
                };
                if m == 0 {
                    return Err(TextError::new(x, "a mask that is not all zeros"));
                }
                if !mask_valid(field, m) {
                    return Err(TextError::new(x, "a mask the field takes"));
                }
                m
            }
        };
        into.push(HashField { field, mask });
    }
    Ok(())
}

/// Parses a group as `ovs-ofctl add-group` takes it. The command stays ADD
/// (it comes from the verb); a missing `type=` means `all`, and a select
/// bucket without `weight:` weighs 1, as in ovs-ofctl.
pub fn parse_group_mod(s: &str) -> Result<GroupMod, TextError> {
    parse_group_mod_for(s, GroupModCommand::Add)
}

/// Parses a group mod for `command` as ovs-ofctl's verb for it takes it:
/// add-group and mod-group (`type=`, the selection method, buckets),
/// insert-buckets (`command_bucket_id=first|last|N`, required, and
/// buckets; no type, so a bucket without `weight:` weighs 0, as in
/// ovs-ofctl) and remove-buckets (`command_bucket_id=`, `all` when not
/// given, and no buckets).
pub fn parse_group_mod_for(s: &str, command: GroupModCommand) -> Result<GroupMod, TextError> {
    let bucket_cmd = matches!(
        command,
        GroupModCommand::InsertBucket | GroupModCommand::RemoveBucket
    );
    let mut pieces = Vec::new();
    let mut rest = s;
    while let Some((before, after)) = split_at_key(rest, "bucket=") {
        pieces.push(before);
        rest = after;
    }
    pieces.push(rest);
    let head = pieces.remove(0);
    if !pieces.is_empty() && command == GroupModCommand::RemoveBucket {
        return Err(TextError::new(
            s,
            "no buckets (remove-buckets names them by id)",
        ));
    }
    let mut g = GroupMod::new(command, GroupType::All, group_no::ANY, Vec::new());
    let mut have_id = false;
    let mut have_cbid = false;
    let mut method: Option<Method> = None;
    let mut param: Option<u64> = None;
    let mut fields = Vec::new();
    for tok in split_top(head) {
        if let Some(inner) = tok
            .strip_prefix("fields(")
            .and_then(|t| t.strip_suffix(')'))
        {
            parse_hash_fields(inner, &mut fields)?;
            continue;
        }
        match tok.split_once('=') {
            Some(("group_id", v)) => {
                g.group_id = parse_group_id(v)?;
                have_id = true;
            }
            Some(("type", v)) if !bucket_cmd => {
                g.group_type = match v {
                    "fast_failover" => GroupType::FastFailover,
                    _ => GroupType::from_name(v).ok_or_else(|| {
                        TextError::new(v, "a group type: all, select, indirect or ff")
                    })?,
                }
            }
            Some(("command_bucket_id", v)) if bucket_cmd => {
                g.command_bucket_id = match v {
                    "first" => BUCKET_FIRST,
                    "last" => BUCKET_LAST,
                    "all" if command == GroupModCommand::RemoveBucket => BUCKET_ALL,
                    _ => match parse_num::<u32>(v, "first, last or a bucket id") {
                        Ok(n) if n <= BUCKET_MAX => n,
                        _ => {
                            return Err(TextError::new(
                                v,
                                if command == GroupModCommand::RemoveBucket {
                                    "first, last, all or a bucket id"
                                } else {
                                    "first, last or a bucket id"
                                },
                            ))
                        }
                    },
                };
                have_cbid = true;
            }
            Some(("selection_method", v)) if !bucket_cmd => {
                method = Some(
                    Method::from_name(v)
                        .ok_or_else(|| TextError::new(v, "a selection method: hash or dp_hash"))?,
                );
            }
            Some(("selection_method_param", v)) if !bucket_cmd => {
                param = Some(parse_num(v, "a 64-bit selection method parameter")?);
            }
            Some(("fields", v)) if !bucket_cmd => parse_hash_fields(v, &mut fields)?,
            _ if bucket_cmd => {
                return Err(TextError::new(
                    tok,
                    "group_id=N, command_bucket_id=ID or bucket=...",
                ))
            }
            _ => {
                return Err(TextError::new(
                    tok,
                    "group_id=N, type=T, selection_method=M, selection_method_param=N, \
                     fields(...) or bucket=...",
                ))
            }
        }
    }
    if !have_id {
        return Err(TextError::new(s, "a group_id=N"));
    }
    if command == GroupModCommand::InsertBucket && !have_cbid {
        return Err(TextError::new(s, "a command_bucket_id=first|last|N"));
    }
    if !fields.is_empty() && method != Some(Method::Hash) {
        return Err(TextError::new(s, "fields only with selection_method=hash"));
    }
    if param.is_some_and(|p| p != 0) && method.is_none() {
        return Err(TextError::new(
            s,
            "selection_method_param only with a selection_method",
        ));
    }
    if let Some(method) = method {
        canonical_order(&mut fields);
        g.selection = Some(SelectionMethod {
            method,
            param: param.unwrap_or(0),
            fields,
        });
    }
    // As in ovs-ofctl, a select bucket without a weight weighs 1 (a
    // weight of 0 would never be chosen).
    let select = g.group_type == GroupType::Select;
    g.buckets = pieces
        .into_iter()
        .map(|p| {
            parse_bucket(p).map(|(mut b, weighted)| {
                if select && !weighted {
                    b.weight = 1;
                }
                b
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(g)
}

/// `fields=F` or `fields(F1,F2=MASK)`, as ovs-ofctl prints them.
fn format_hash_fields(fields: &[HashField]) -> String {
    let one = |h: &HashField| {
        let name = ovs_field(h.field).map_or("?", |x| x.1);
        if h.is_whole() {
            name.to_string()
        } else {
            let v = match h.field {
                OxmField::NxmInPort | OxmField::InPort => format_port(h.mask as u32),
                f => format_masked(f, h.mask, None),
            };
            format!("{name}={v}")
        }
    };
    match fields {
        [] => String::new(),
        [h] => format!(",fields={}", one(h)),
        v => format!(
            ",fields({})",
            v.iter().map(one).collect::<Vec<_>>().join(",")
        ),
    }
}

/// Writes a group in the canonical form [`parse_group_mod`] reads back,
/// as ovs-ofctl prints it: the selection method after the type, each
/// bucket's id first when it has one.
pub fn format_group_mod(g: &GroupMod) -> String {
    let id = match g.group_id {
        group_no::ALL => "all".to_string(),
        group_no::ANY => "any".to_string(),
        n => n.to_string(),
    };
    let mut parts = vec![format!("group_id={id}"), format!("type={}", g.group_type)];
    if let Some(s) = &g.selection {
        let mut m = format!("selection_method={}", s.method.name());
        if s.param != 0 {
            m.push_str(&format!(",selection_method_param={}", s.param));
        }
        m.push_str(&format_hash_fields(&s.fields));
        parts.push(m);
    }
    for b in &g.buckets {
        let mut p = vec![];
        if b.bucket_id <= BUCKET_MAX {
            p.push(format!("bucket_id:{}", b.bucket_id));
        }
        // As ovs-ofctl: the weight only when it is not the default, which
        // is 1 in a select group and 0 in the others (what the parser
        // gives a bucket without `weight:`).
        let default_weight = u16::from(g.group_type == GroupType::Select);
        if b.weight != default_weight {
            p.push(format!("weight:{}", b.weight));
        }
        if b.watch_port != port_no::ANY {
            p.push(format!("watch_port:{}", format_port(b.watch_port)));
        }
        if b.watch_group != group_no::ANY {
            p.push(format!("watch_group:{}", b.watch_group));
        }
        p.push(format!("actions={}", format_actions(&b.actions)));
        parts.push(format!("bucket={}", p.join(",")));
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;

    #[test]
    fn select_group_round_trips() {
        let s = "group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=weight:20,watch_port:3,actions=output:2,output:3,bucket=actions=LOCAL,bucket=weight:0,watch_port:LOCAL,actions=CONTROLLER:65535";
        let g = parse_group_mod(s).unwrap();
        assert_eq!(g.group_type, GroupType::Select);
        assert_eq!(g.buckets.len(), 4);
        assert_eq!(
            g.buckets[2].weight, 1,
            "a select bucket without weight weighs 1"
        );
        assert_eq!(g.buckets[3].watch_port, port_no::LOCAL);
        assert_eq!(g.buckets[1].watch_port, 3);
        assert_eq!(g.buckets[1].actions.len(), 2);
        assert_eq!(format_group_mod(&g), s);
        let ff = parse_group_mod("group_id=2,type=ff,bucket=watch_port:1,output:1").unwrap();
        assert_eq!(
            ff.buckets[0].actions,
            vec![Action::Output {
                port: 1,
                max_len: 0
            }]
        );
        assert_eq!(parse_group_mod("type=all").unwrap_err().token, "type=all");
        assert_eq!(
            parse_group_mod("group_id=1,type=fancy").unwrap_err().token,
            "fancy"
        );
    }

    #[test]
    fn open_vswitch_1_5_group_text() {
        // What ovs-ofctl -O OpenFlow15 dump-groups prints (Open vSwitch 3.1).
        for s in [
            "group_id=1,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=output:1,bucket=bucket_id:1,weight:100,actions=output:2",
            "group_id=2,type=select,selection_method=hash,selection_method_param=7,fields(ip_src=255.255.0.0,ip_dst,tcp_dst),bucket=bucket_id:0,actions=output:1,bucket=bucket_id:1,weight:3,actions=output:2",
            "group_id=3,type=ff,bucket=bucket_id:0,watch_port:1,actions=output:1,bucket=bucket_id:7,actions=output:2",
            "group_id=4,type=select,selection_method=hash,fields=eth_src,bucket=bucket_id:0,actions=output:1",
            "group_id=5,type=select,selection_method=hash,bucket=bucket_id:0,actions=output:1",
        ] {
            assert_eq!(format_group_mod(&parse_group_mod(s).unwrap()), s);
        }
        // Fields in Open vSwitch's order whatever the order given; nw_src
        // and tp_dst are other names.
        let g = parse_group_mod(
            "group_id=2,type=select,selection_method=hash,fields(tp_dst,nw_src),bucket=output:1",
        )
        .unwrap();
        assert!(format_group_mod(&g).contains(",fields(ip_src,tcp_dst),"));
        let sel = g.selection.unwrap();
        assert_eq!(sel.fields[0], HashField::whole(OxmField::Ipv4Src));
        assert_eq!(g.buckets[0].bucket_id, BUCKET_ALL);
        // Refused as ovs-ofctl refuses them.
        for bad in [
            "group_id=1,type=select,selection_method=dp_hash,fields=ip_src,bucket=output:1",
            "group_id=1,type=select,selection_method_param=3,bucket=output:1",
            "group_id=1,type=select,selection_method=hash,fields(ip_src,nw_src),bucket=output:1",
            "group_id=1,type=select,selection_method=hash,fields=ip_src=0.0.0.0,bucket=output:1",
            "group_id=1,type=select,selection_method=hash,fields=nw_proto=15,bucket=output:1",
            "group_id=1,type=select,selection_method=hash,fields=in_phy_port,bucket=output:1",
            "group_id=1,type=select,bucket=bucket_id:4294967041,output:1",
        ] {
            assert!(parse_group_mod(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn insert_and_remove_buckets() {
        let g = parse_group_mod_for(
            "group_id=1,command_bucket_id=last,bucket=bucket_id:7,actions=output:2",
            GroupModCommand::InsertBucket,
        )
        .unwrap();
        assert_eq!(g.command, GroupModCommand::InsertBucket);
        assert_eq!(g.command_bucket_id, BUCKET_LAST);
        // No type: a bucket without weight weighs 0, as ovs-ofctl sends it.
        assert_eq!(g.buckets[0].weight, 0);
        assert_eq!(g.buckets[0].bucket_id, 7);
        let ins = |s| parse_group_mod_for(s, GroupModCommand::InsertBucket);
        assert_eq!(
            ins("group_id=1,command_bucket_id=5,bucket=output:1")
                .unwrap()
                .command_bucket_id,
            5
        );
        assert_eq!(
            ins("group_id=1,command_bucket_id=first,bucket=output:1")
                .unwrap()
                .command_bucket_id,
            BUCKET_FIRST
        );
        assert!(
            ins("group_id=1,bucket=output:1").is_err(),
            "command_bucket_id needed"
        );
        assert!(ins("group_id=1,command_bucket_id=all,bucket=output:1").is_err());
        assert!(ins("group_id=1,type=select,command_bucket_id=1,bucket=output:1").is_err());
        let rm = |s| parse_group_mod_for(s, GroupModCommand::RemoveBucket);
        assert_eq!(rm("group_id=1").unwrap().command_bucket_id, BUCKET_ALL);
        assert_eq!(
            rm("group_id=1,command_bucket_id=all")
                .unwrap()
                .command_bucket_id,
            BUCKET_ALL
        );
        assert_eq!(
            rm("group_id=1,command_bucket_id=3")
                .unwrap()
                .command_bucket_id,
            3
        );
        assert!(rm("group_id=1,command_bucket_id=3,bucket=output:1").is_err());
        // command_bucket_id is for these two only.
        assert!(parse_group_mod("group_id=1,command_bucket_id=3,bucket=output:1").is_err());
    }
}
