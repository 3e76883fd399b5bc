//! FLOW_MODs that name more rules than one round changes
//! (`pipeline::control::ROUND`): a DELETE of every rule takes the tables
//! out whole at once and hands the rules back a round at a time; a
//! MODIFY or a filtered DELETE of a big table changes it a round at a
//! time, each publication a consistent set of whole rules.

use std::sync::Arc;

use ofp::msg::flow::{FlowMod, FlowModCommand};
use ofp::text::parse_flow_mod;
use pipeline::control::{Applied, ROUND};
use pipeline::{Config, Pipeline, Snapshot};

fn fm(cmd: FlowModCommand, s: &str) -> FlowMod {
    let mut f = parse_flow_mod(s).unwrap();
    f.command = cmd;
    f
}

/// Flow `i`: TCP from 10.x.y.z, `extra` fields after the match.
fn flow(i: u32, extra: &str) -> FlowMod {
    fm(
        FlowModCommand::Add,
        &format!(
            "priority=5,tcp,nw_src=10.{}.{}.{},{extra}actions=output:2",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        ),
    )
}

/// A packet flow `i` matches, as a flow key.
fn key_of(i: u32) -> packet::FlowKey {
    let src = (0x0a00_0000 | i).to_be_bytes();
    let frame = packet::wire::build::tcp_v4([2; 6], [4; 6], src, [10, 9, 9, 9], 1000, 80, 0x02);
    let mut k = packet::FlowKey::default();
    packet::extract(&frame, 1, &mut k);
    k
}

fn loaded(n: u32, table: u8, extra: impl Fn(u32) -> String) -> Pipeline {
    let mut p = Pipeline::new(Config::default());
    for i in 0..n {
        let mut f = flow(i, &extra(i));
        f.table_id = table;
        p.flow_mod(&f, 0).unwrap();
    }
    p
}

/// Which output each flow `0..n` has in `snap`'s table 0 (None: no rule).
fn outputs(snap: &Snapshot, n: u32) -> Vec<Option<u32>> {
    (0..n)
        .map(|i| {
            snap.tables[0]
                .lookup_data(&key_of(i))
                .map(|r| if r.outputs_to(3) { 3 } else { 2 })
        })
        .collect()
}

#[test]
fn a_delete_of_everything_empties_the_tables_at_once_and_hands_every_rule_back() {
    let n = (ROUND * 5) as u32;
    let mut p = loaded(n, 0, |i| {
        if i % 3 == 0 {
            "send_flow_rem,".into()
        } else {
            String::new()
        }
    });
    for i in 0..10 {
        let mut f = flow(i, "");
        f.table_id = 2;
        p.flow_mod(&f, 0).unwrap();
    }
    let before = p.snapshot();
    let all = fm(FlowModCommand::Delete, "table=255");
    let Applied::Rounds(mut job) = p.flow_mod_rounds(&all, None, 0).unwrap() else {
        panic!("a million-flow-like delete is handed back in rounds");
    };
    // Out at once: nothing left to look up, before any round.
    assert_eq!(p.flow_count(), 0);
    let snap = p.snapshot();
    assert!(snap.tables.iter().all(|t| t.is_empty()));
    assert_eq!(outputs(&snap, 100), vec![None; 100]);
    assert!(snap.tables[2].lookup(&key_of(3)).is_none());
    // The snapshot before is untouched.
    assert_eq!(outputs(&before, 3), vec![Some(2); 3]);
    let mut removed = Vec::new();
    let mut rounds = 0;
    loop {
        let (r, done) = p.flow_mod_round(&mut job);
        assert!(r.len() <= ROUND * 4);
        removed.extend(r);
        rounds += 1;
        if done {
            break;
        }
    }
    assert!(rounds > 1);
    assert_eq!(removed.len(), n as usize + 10);
    let notify = removed.iter().filter(|r| r.notify()).count();
    assert_eq!(notify, n.div_ceil(3) as usize, "every flagged flow, once");
    let mut ids: Vec<u32> = removed.iter().map(|r| r.rule.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), removed.len());
    // The same at once, through flow_mod.
    let mut q = loaded(n, 0, |_| String::new());
    assert_eq!(q.flow_mod(&all, 0).unwrap().len(), n as usize);
    assert_eq!(q.snapshot().tables[0].len(), 0);
    // The table takes flows again.
    q.flow_mod(&flow(7, ""), 0).unwrap();
    assert_eq!(outputs(&q.snapshot(), 8)[7], Some(2));
}

#[test]
fn a_modify_of_a_big_table_goes_in_rounds_each_publication_whole_rules() {
    let n = (ROUND * 3 + 5) as u32;
    let mut p = loaded(n, 0, |_| String::new());
    let modify = fm(FlowModCommand::Modify, "actions=output:3");
    let Applied::Rounds(mut job) = p.flow_mod_rounds(&modify, None, 0).unwrap() else {
        panic!("in rounds");
    };
    // Nothing changed before the first round.
    assert!(outputs(&p.snapshot(), n).iter().all(|o| *o == Some(2)));
    let mut last = 0;
    let mut done = false;
    let mut i = 0;
    let (gone, late) = (n - 1, n + 1);
    while !done {
        let (removed, d) = p.flow_mod_round(&mut job);
        assert!(removed.is_empty());
        done = d;
        let snap = p.snapshot();
        let now = outputs(&snap, n);
        let changed = now.iter().filter(|o| **o == Some(3)).count();
        assert!(changed > last && changed - last <= ROUND, "a round's worth");
        last = changed;
        if i == 0 {
            // Between rounds, another connection deletes a flow and adds
            // one: neither is the MODIFY's business any more.
            let mut del = flow(gone, "");
            del.command = FlowModCommand::DeleteStrict;
            p.flow_mod(&del, 0).unwrap();
            p.flow_mod(&flow(late, ""), 0).unwrap();
        }
        i += 1;
    }
    let snap = p.snapshot();
    let now = outputs(&snap, late + 1);
    let gone_was_changed = last == n as usize;
    assert_eq!(now[gone as usize], None, "a deleted flow stays deleted");
    assert_eq!(now[late as usize], Some(2), "a flow added since is left");
    assert_eq!(now[n as usize], None);
    let modified = now.iter().filter(|o| **o == Some(3)).count();
    assert_eq!(
        modified,
        n as usize - 1,
        "every other flow (gone: {gone_was_changed})"
    );
    assert_eq!(p.flow_count(), n as usize);
    // The rules keep their ids and counters (no reset_counts).
    assert!(snap.tables[0].len() == n as usize);
}

#[test]
fn a_filtered_delete_of_a_big_table_removes_what_it_selects_in_rounds() {
    let n = (ROUND * 2 + 7) as u32;
    let mut p = loaded(n, 0, |i| format!("cookie={},", i % 2));
    let del = fm(FlowModCommand::Delete, "cookie=1/0xffffffffffffffff");
    let held: Arc<Snapshot> = p.snapshot();
    let Applied::Rounds(mut job) = p.flow_mod_rounds(&del, None, 0).unwrap() else {
        panic!("in rounds");
    };
    let mut removed = Vec::new();
    loop {
        let (r, done) = p.flow_mod_round(&mut job);
        removed.extend(r);
        // Every publication: whole rules, the even ones all there.
        let o = outputs(&p.snapshot(), n);
        assert!(o.iter().step_by(2).all(|x| *x == Some(2)));
        if done {
            break;
        }
    }
    assert_eq!(removed.len(), (n / 2) as usize);
    assert!(removed.iter().all(|r| r.rule.cookie == 1));
    let o = outputs(&p.snapshot(), n);
    for (i, x) in o.iter().enumerate() {
        assert_eq!(*x, (i % 2 == 0).then_some(2), "flow {i}");
    }
    assert_eq!(
        outputs(&held, 4),
        vec![Some(2); 4],
        "held snapshot untouched"
    );
    assert_eq!(p.flow_count(), n.div_ceil(2) as usize);
}
