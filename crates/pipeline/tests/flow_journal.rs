//! The journal of rule changes flow monitors read
//! ([`Pipeline::watch_flows`]): every add, replacement, modification and
//! removal, in order, with the removal's reason; nothing while it is off.

use ofp::msg::flow::FlowModCommand;
use ofp::text::parse_flow_mod;
use pipeline::control::ROUND;
use pipeline::{Config, FlowChange, Pipeline};

const SEC: u64 = 1_000_000_000;

fn fm(cmd: FlowModCommand, s: &str) -> ofp::FlowMod {
    let mut f = parse_flow_mod(s).unwrap();
    f.command = cmd;
    f
}

/// Each change as a word and the rule's priority.
fn said(p: &mut Pipeline) -> Vec<(String, u16)> {
    p.take_flow_changes()
        .into_iter()
        .map(|c| match c {
            FlowChange::Added { rule, replaced } => (
                format!("added{}", if replaced.is_some() { "+replaced" } else { "" }),
                rule.priority,
            ),
            FlowChange::Modified { rule, old } => {
                assert_eq!(rule.id, old.id);
                assert_ne!(rule.instructions, old.instructions);
                ("modified".into(), rule.priority)
            }
            FlowChange::Removed(r) => (format!("removed:{:?}", r.reason), r.rule.priority),
        })
        .collect()
}

fn w(s: &str, p: u16) -> (String, u16) {
    (s.into(), p)
}

#[test]
fn every_change_in_order() {
    let mut p = Pipeline::new(Config::default());
    // Off: nothing is written.
    p.flow_mod(&fm(FlowModCommand::Add, "priority=1,actions=drop"), 0)
        .unwrap();
    assert!(p.take_flow_changes().is_empty());
    p.watch_flows(true);
    p.flow_mod(&fm(FlowModCommand::Add, "priority=2,ip,actions=drop"), 0)
        .unwrap();
    p.flow_mod(
        &fm(FlowModCommand::Add, "priority=2,ip,actions=output:1"),
        0,
    )
    .unwrap();
    p.flow_mod(&fm(FlowModCommand::Modify, "ip,actions=output:2"), 0)
        .unwrap();
    p.flow_mod(
        &fm(
            FlowModCommand::Add,
            "priority=3,hard_timeout=1,arp,actions=drop",
        ),
        0,
    )
    .unwrap();
    assert_eq!(
        said(&mut p),
        vec![
            w("added", 2),
            w("added+replaced", 2),
            w("modified", 2),
            w("added", 3)
        ]
    );
    // A MODIFY that matches nothing changes nothing.
    p.flow_mod(
        &fm(FlowModCommand::ModifyStrict, "priority=9,actions=drop"),
        0,
    )
    .unwrap();
    assert!(p.take_flow_changes().is_empty());
    assert_eq!(p.expire(2 * SEC).len(), 1);
    p.flow_mod(&fm(FlowModCommand::DeleteStrict, "priority=2,ip"), 0)
        .unwrap();
    p.flow_mod(&fm(FlowModCommand::Delete, ""), 0).unwrap();
    assert_eq!(
        said(&mut p),
        vec![
            w("removed:HardTimeout", 3),
            w("removed:Delete", 2),
            w("removed:Delete", 1)
        ]
    );
    // Off again: forgotten, and nothing more written.
    p.flow_mod(&fm(FlowModCommand::Add, "priority=4,actions=drop"), 0)
        .unwrap();
    p.watch_flows(false);
    p.flow_mod(&fm(FlowModCommand::Add, "priority=5,actions=drop"), 0)
        .unwrap();
    assert!(p.take_flow_changes().is_empty());
}

/// A MODIFY and a DELETE in rounds write each round's changes as the
/// round makes them.
#[test]
fn changes_in_rounds() {
    let mut p = Pipeline::new(Config::default());
    let n = ROUND + 10;
    for i in 0..n {
        p.flow_mod(
            &fm(
                FlowModCommand::Add,
                &format!("priority=7,reg0={i},actions=drop"),
            ),
            0,
        )
        .unwrap();
    }
    p.watch_flows(true);
    let modify = fm(FlowModCommand::Modify, "actions=output:3");
    let pipeline::control::Applied::Rounds(mut job) = p.flow_mod_rounds(&modify, None, 0).unwrap()
    else {
        panic!("a MODIFY of more than a round is in rounds")
    };
    let mut seen = 0;
    loop {
        let (_, done) = p.flow_mod_round(&mut job);
        let now = said(&mut p);
        assert!(now.len() <= ROUND);
        assert!(now.iter().all(|c| c.0 == "modified"));
        seen += now.len();
        if done {
            break;
        }
    }
    assert_eq!(seen, n);
    p.flow_mod(&fm(FlowModCommand::Delete, "reg0=3"), 0)
        .unwrap();
    assert_eq!(said(&mut p), vec![w("removed:Delete", 7)]);
    p.flow_mod(&fm(FlowModCommand::Delete, ""), 0).unwrap();
    let gone = said(&mut p);
    assert_eq!(gone.len(), n - 1);
    assert!(gone.iter().all(|c| c.0 == "removed:Delete"));
}
