//! Groups in ovs-ofctl text:
//! `group_id=1,type=select,bucket=weight:10,watch_port:2,actions=output:1,bucket=...`.

use super::actions::{format_actions, parse_actions};
use super::names::{format_port, parse_port};
use super::value::parse_num;
use super::{key_value, split_at_key, split_top, TextError};
use crate::msg::group::{Bucket, GroupMod, GroupModCommand, GroupType};
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
            _ if actions.is_none() => rest.push(tok),
            _ => {
                return Err(TextError::new(
                    tok,
                    "weight:N, watch_port:N or watch_group:N before actions=",
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

/// Parses a group as `ovs-ofctl add-group` takes it. The command stays ADD
/// (it comes from the verb); a missing `type=` means `all`, and a select
/// bucket without `weight:` weighs 1, as in ovs-ofctl.
pub fn parse_group_mod(s: &str) -> Result<GroupMod, TextError> {
    let mut pieces = Vec::new();
    let mut rest = s;
    while let Some((before, after)) = split_at_key(rest, "bucket=") {
        pieces.push(before);
        rest = after;
    }
    pieces.push(rest);
    let head = pieces.remove(0);
    let mut g = GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::All,
        group_id: group_no::ANY,
        buckets: Vec::new(),
    };
    let mut have_id = false;
    for tok in split_top(head) {
        match tok.split_once('=') {
            Some(("group_id", v)) => {
                g.group_id = parse_group_id(v)?;
                have_id = true;
            }
            Some(("type", v)) => {
                g.group_type = match v {
                    "fast_failover" => GroupType::FastFailover,
                    _ => GroupType::from_name(v).ok_or_else(|| {
                        TextError::new(v, "a group type: all, select, indirect or ff")
                    })?,
                }
            }
            _ => return Err(TextError::new(tok, "group_id=N, type=T or bucket=...")),
        }
    }
    if !have_id {
        return Err(TextError::new(s, "a group_id=N"));
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

/// Writes a group in the canonical form [`parse_group_mod`] reads back.
pub fn format_group_mod(g: &GroupMod) -> String {
    let id = match g.group_id {
        group_no::ALL => "all".to_string(),
        group_no::ANY => "any".to_string(),
        n => n.to_string(),
    };
    let mut parts = vec![format!("group_id={id}"), format!("type={}", g.group_type)];
    for b in &g.buckets {
        let mut p = vec![];
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
}
