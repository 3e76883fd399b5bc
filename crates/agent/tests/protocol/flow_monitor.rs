//! Open vSwitch's flow monitor (NXST_FLOW_MONITOR) on an OpenFlow 1.0
//! connection, as `ovs-ofctl monitor br0 watch:` uses it: the initial
//! flows, an update for every change from any source (other
//! connections, the connection itself, expiry, learning), the filters,
//! cancel, the refusals, and pausing while the monitor reads slowly.

use bytes::Bytes;
use ofp::error::{BadRequestCode, ErrorCode};
use ofp::msg::multipart::{MultipartReply, MultipartReplyBody as R};
use ofp::msg::nx_flow::monitor::{self as fm, flags, MonitorRequest, Update};
use ofp::msg::simple::Hello;
use ofp::oxm::{Match, Oxm, OxmField};
use ofp::port::{port_no, TABLE_ALL};
use ofp::{Message, Version};

use super::fake::*;
use agent::{Agent, ConnId, PAUSE_AT};

const SEC: u64 = 1_000_000_000;

/// What the agent sent `id`, read as OpenFlow 1.0 (as a peer reads it).
fn out10(a: &mut Agent<FakeDp>, id: ConnId) -> Vec<(u32, Message)> {
    let b = a.poll_transmit(id).map(<[u8]>::to_vec).unwrap_or_default();
    a.transmitted(id, b.len());
    let mut v = Vec::new();
    let mut at = 0;
    while at + 4 <= b.len() {
        let len = u16::from_be_bytes([b[at + 2], b[at + 3]]) as usize;
        let f = Bytes::copy_from_slice(&b[at..at + len]);
        let (h, m) = Message::decode_as(&f, Version::V1_0).unwrap();
        v.push((h.xid, m));
        at += len;
    }
    v
}

fn open10(a: &mut Agent<FakeDp>) -> ConnId {
    let id = a.connect(0);
    let hello = Message::Hello(Hello {
        version: 1,
        elements: Vec::new(),
    });
    assert!(a.handle_input(id, &hello.to_bytes(1), 0));
    out10(a, id);
    id
}

fn send10(a: &mut Agent<FakeDp>, id: ConnId, m: &Message, xid: u32) -> Vec<(u32, Message)> {
    let mut b = Vec::new();
    m.encode_as(Version::V1_0, xid, &mut b).unwrap();
    assert!(a.handle_input(id, &b, 1));
    out10(a, id)
}

fn watch(id: u32, flags: u16) -> MonitorRequest {
    MonitorRequest {
        id,
        flags,
        out_port: port_no::ANY,
        table_id: TABLE_ALL,
        match_: Match::new(),
    }
}

/// Each message as a line: an update as ovs-ofctl would name it (event,
/// table, priority, cookie, actions or not), PAUSED, RESUMED, an error.
fn said(msgs: &[(u32, Message)]) -> Vec<String> {
    let mut v = Vec::new();
    for (xid, m) in msgs {
        match m {
            Message::MultipartReply(MultipartReply {
                flags,
                body: R::Experimenter(e),
            }) if e.exp_type == fm::NXST_FLOW_MONITOR => {
                v.push(format!(
                    "reply xid={xid}{}",
                    if *flags & 1 != 0 { " more" } else { "" }
                ));
                for u in fm::decode_updates(&e.data).unwrap() {
                    v.push(match u {
                        Update::Abbrev { xid } => format!(" ABBREV {xid}"),
                        Update::Full(f) => format!(
                            " {} reason={} table={} priority={} cookie={:#x} actions={}",
                            f.event,
                            f.reason,
                            f.table_id,
                            f.priority,
                            f.cookie,
                            f.instructions.len()
                        ),
                    });
                }
            }
            Message::Experimenter(e) if e.exp_type == fm::NXT_FLOW_MONITOR_PAUSED => {
                v.push("PAUSED".into())
            }
            Message::Experimenter(e) if e.exp_type == fm::NXT_FLOW_MONITOR_RESUMED => {
                v.push("RESUMED".into())
            }
            Message::Error(e) => v.push(format!("error {:?}", e.code)),
            other => v.push(format!("{other:?}")),
        }
    }
    v
}

fn lines(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn initial_flows_then_every_change_from_another_connection() {
    let mut a = agent();
    let other = open(&mut a);
    send(
        &mut a,
        other,
        &flow("table=1,priority=5,cookie=0x7,ip,actions=output:2"),
        2,
    );
    let mon = open10(&mut a);
    let got = send10(&mut a, mon, &fm::request(&[watch(1, flags::ALL)]), 9);
    assert_eq!(
        said(&got),
        lines(&[
            "reply xid=9",
            " ADDED reason=0 table=1 priority=5 cookie=0x7 actions=1"
        ])
    );
    assert!(a.pipeline().watching_flows());
    // Add, replace, modify (same actions: nothing), modify, delete.
    send(&mut a, other, &flow("priority=10,arp,actions=drop"), 3);
    send(&mut a, other, &flow("priority=10,arp,actions=output:1"), 4);
    let mut m = ofp::text::parse_flow_mod("table=1,ip,actions=output:2").unwrap();
    m.command = ofp::FlowModCommand::Modify;
    send(&mut a, other, &Message::FlowMod(m.clone()), 5);
    m.instructions = ofp::text::parse_flow_mod("actions=output:1")
        .unwrap()
        .instructions;
    send(&mut a, other, &Message::FlowMod(m), 6);
    let mut d = ofp::text::parse_flow_mod("table=255").unwrap();
    d.command = ofp::FlowModCommand::Delete;
    send(&mut a, other, &Message::FlowMod(d), 7);
    let got = said(&out10(&mut a, mon));
    assert_eq!(
        got,
        lines(&[
            "reply xid=0",
            " ADDED reason=0 table=0 priority=10 cookie=0x0 actions=0",
            "reply xid=0",
            " ADDED reason=0 table=0 priority=10 cookie=0x0 actions=1",
            "reply xid=0",
            " MODIFIED reason=0 table=1 priority=5 cookie=0x7 actions=1",
            "reply xid=0",
            " DELETED reason=2 table=0 priority=10 cookie=0x0 actions=1",
            " DELETED reason=2 table=1 priority=5 cookie=0x7 actions=1",
        ])
    );
    // Expiry: a hard timeout, reason 1.
    send(
        &mut a,
        other,
        &flow("hard_timeout=1,priority=3,actions=drop"),
        8,
    );
    out10(&mut a, mon);
    a.handle_timeout(2 * SEC);
    assert_eq!(
        said(&out10(&mut a, mon)),
        lines(&[
            "reply xid=0",
            " DELETED reason=1 table=0 priority=3 cookie=0x0 actions=0"
        ])
    );
}

#[test]
fn own_changes_are_abbreviated_unless_asked_in_full() {
    let mut a = agent();
    let mon = open10(&mut a);
    let no_own = flags::ALL & !flags::OWN;
    assert_eq!(
        said(&send10(&mut a, mon, &fm::request(&[watch(1, no_own)]), 3)),
        lines(&["reply xid=3"])
    );
    send10(&mut a, mon, &flow("priority=1,actions=drop"), 20);
    send10(&mut a, mon, &flow("priority=2,actions=drop"), 21);
    // One DELETE of two flows: one ABBREV.
    let mut d = ofp::text::parse_flow_mod("table=255").unwrap();
    d.command = ofp::FlowModCommand::Delete;
    let got = send10(&mut a, mon, &Message::FlowMod(d.clone()), 22);
    assert_eq!(said(&got), lines(&["reply xid=0", " ABBREV 22"]));
    // Another connection's are in full.
    let other = open(&mut a);
    send(&mut a, other, &flow("priority=3,actions=drop"), 4);
    assert_eq!(
        said(&out10(&mut a, mon)),
        lines(&[
            "reply xid=0",
            " ADDED reason=0 table=0 priority=3 cookie=0x0 actions=0"
        ])
    );
    // A second monitor asking for its own changes in full, without
    // actions: the one update carries what either asked for.
    send10(
        &mut a,
        mon,
        &fm::request(&[watch(2, flags::ADD | flags::OWN)]),
        5,
    );
    let got = send10(&mut a, mon, &flow("priority=4,actions=drop"), 23);
    assert_eq!(
        said(&got),
        lines(&[
            "reply xid=0",
            " ADDED reason=0 table=0 priority=4 cookie=0x0 actions=0"
        ])
    );
}

#[test]
fn filters_table_out_port_and_match() {
    let mut a = agent();
    let mon = open10(&mut a);
    let only = MonitorRequest {
        id: 1,
        flags: flags::ADD | flags::DELETE | flags::MODIFY | flags::ACTIONS,
        out_port: 2,
        table_id: 3,
        match_: Match::new().with(Oxm::exact(OxmField::EthType, 0x0800)),
    };
    send10(&mut a, mon, &fm::request(&[only]), 3);
    let other = open(&mut a);
    for f in [
        "table=3,ip,actions=output:1",            // not to port 2
        "table=2,ip,actions=output:2",            // another table
        "table=3,arp,actions=output:2",           // not within ip
        "table=3,priority=9,actions=output:2",    // wider than ip
        "table=3,tcp,tp_dst=80,actions=output:2", // it
    ] {
        send(&mut a, other, &flow(f), 4);
    }
    assert_eq!(
        said(&out10(&mut a, mon)),
        lines(&[
            "reply xid=0",
            " ADDED reason=0 table=3 priority=32768 cookie=0x0 actions=1"
        ])
    );
    // A flow whose actions leave port 2 is still reported (the old ones
    // went there).
    let mut m = ofp::text::parse_flow_mod("table=3,tcp,tp_dst=80,actions=output:1").unwrap();
    m.command = ofp::FlowModCommand::ModifyStrict;
    send(&mut a, other, &Message::FlowMod(m), 5);
    assert_eq!(
        said(&out10(&mut a, mon)),
        lines(&[
            "reply xid=0",
            " MODIFIED reason=0 table=3 priority=32768 cookie=0x0 actions=1"
        ])
    );
}

#[test]
fn refusals_and_cancel() {
    let mut a = agent();
    let mon = open10(&mut a);
    send10(&mut a, mon, &fm::request(&[watch(1, flags::ADD)]), 3);
    // The same id again (or twice in one request): none of it is added.
    let got = send10(
        &mut a,
        mon,
        &fm::request(&[watch(2, flags::ADD), watch(1, flags::ADD)]),
        4,
    );
    assert_eq!(
        said(&got),
        vec![format!("error {:?}", fm::OFPMOFC_MONITOR_EXISTS)]
    );
    assert_eq!(a.conn(mon).unwrap().monitors.len(), 1);
    let got = send10(
        &mut a,
        mon,
        &fm::request(&[watch(3, flags::ADD), watch(3, flags::ADD)]),
        4,
    );
    assert_eq!(
        said(&got),
        vec![format!("error {:?}", fm::OFPMOFC_MONITOR_EXISTS)]
    );
    let mut bad = watch(4, flags::ADD);
    bad.table_id = 254;
    let got = send10(&mut a, mon, &fm::request(&[bad]), 5);
    assert_eq!(
        said(&got),
        vec![format!(
            "error {:?}",
            ErrorCode::BadRequest(BadRequestCode::BadTableId)
        )]
    );
    let got = send10(&mut a, mon, &fm::request(&[watch(5, flags::INITIAL)]), 6);
    assert_eq!(
        said(&got),
        vec![format!("error {:?}", fm::OFPMOFC_BAD_FLAGS)]
    );
    // Cancel: an unknown id is refused; the known one goes, and so do its
    // updates (and the pipeline's journal with the last monitor).
    let got = send10(&mut a, mon, &fm::cancel(9), 7);
    assert_eq!(
        said(&got),
        vec![format!("error {:?}", fm::OFPMOFC_UNKNOWN_MONITOR)]
    );
    assert_eq!(send10(&mut a, mon, &fm::cancel(1), 8), vec![]);
    assert!(a.conn(mon).unwrap().monitors.is_empty());
    assert!(!a.pipeline().watching_flows());
    let other = open(&mut a);
    send(&mut a, other, &flow("priority=3,actions=drop"), 4);
    assert_eq!(out10(&mut a, mon), vec![]);
    // A monitor's connection gone: the journal off too.
    send10(&mut a, mon, &fm::request(&[watch(1, flags::ADD)]), 3);
    assert!(a.pipeline().watching_flows());
    a.disconnect(mon);
    assert!(!a.pipeline().watching_flows());
}

#[test]
fn learned_flows_are_reported() {
    let mut a = agent();
    let mon = open10(&mut a);
    send10(&mut a, mon, &fm::request(&[watch(1, flags::ALL)]), 3);
    let learn =
        ofp::text::parse_flow_mod("table=2,priority=7,dl_src=00:00:00:00:00:09,actions=output:1")
            .unwrap();
    let l = pipeline::exec::Learned {
        flow_mod: learn,
        learner: 0,
        limit: 0,
        delete_learned: false,
        worker: 0,
        seq: 0,
    };
    a.handle_learned(&[l], 1);
    assert_eq!(
        said(&out10(&mut a, mon)),
        lines(&[
            "reply xid=0",
            " ADDED reason=0 table=2 priority=7 cookie=0x0 actions=1"
        ])
    );
}

/// Adds flows from `other` until the monitor on `mon` is paused; how
/// many.
fn fill_until_paused(a: &mut Agent<FakeDp>, mon: ConnId, other: ConnId) -> usize {
    let mut i = 0;
    while !a.conn(mon).unwrap().monitors.is_paused() {
        send(
            a,
            other,
            &flow(&format!("priority=9,reg0={i},actions=output:1")),
            4,
        );
        i += 1;
        assert!(i < 100_000, "never paused");
    }
    i
}

/// A monitor that does not read: PAUSED once its unsent bytes pass
/// PAUSE_AT; then only deletions of older flows, its outbox no longer
/// growing with additions; once read, what changed meanwhile, then
/// RESUMED.
#[test]
fn a_slow_monitor_is_paused_and_resumed() {
    let mut a = agent();
    let mon = open10(&mut a);
    send10(&mut a, mon, &fm::request(&[watch(1, flags::ALL)]), 3);
    let other = open(&mut a);
    let i = fill_until_paused(&mut a, mon, other);
    let held = a.poll_transmit(mon).unwrap().len();
    assert!(held > PAUSE_AT && held < PAUSE_AT + 1024, "{held}");
    // Paused: additions and modifications are held as ids, not bytes.
    for j in 0..5_000 {
        send(
            &mut a,
            other,
            &flow(&format!("priority=8,reg1={j},actions=drop")),
            5,
        );
    }
    let mut m = ofp::text::parse_flow_mod("priority=9,reg0=0,actions=output:2").unwrap();
    m.command = ofp::FlowModCommand::ModifyStrict;
    send(&mut a, other, &Message::FlowMod(m), 6);
    assert_eq!(a.poll_transmit(mon).unwrap().len(), held);
    // A flow added while paused and gone again: nothing at all. An older
    // one deleted: its DELETED goes at once.
    let mut d = ofp::text::parse_flow_mod("priority=8,reg1=0").unwrap();
    d.command = ofp::FlowModCommand::DeleteStrict;
    send(&mut a, other, &Message::FlowMod(d), 7);
    assert_eq!(a.poll_transmit(mon).unwrap().len(), held);
    let mut d = ofp::text::parse_flow_mod("priority=9,reg0=1").unwrap();
    d.command = ofp::FlowModCommand::DeleteStrict;
    send(&mut a, other, &Message::FlowMod(d), 8);
    assert!(a.poll_transmit(mon).unwrap().len() > held);
    // Read it all: the updates before, PAUSED, the deletion, then what
    // changed (4 999 added, 1 modified), then RESUMED.
    let first = out10(&mut a, mon);
    let s = said(&first);
    let paused_at = s.iter().position(|l| l == "PAUSED").expect("PAUSED");
    assert_eq!(s.iter().filter(|l| l.starts_with(" ADDED")).count(), i);
    assert_eq!(
        s[paused_at + 1..],
        lines(&[
            "reply xid=0",
            " DELETED reason=2 table=0 priority=9 cookie=0x0 actions=1"
        ])
    );
    let mut rest = Vec::new();
    loop {
        let more = said(&out10(&mut a, mon));
        if more.is_empty() {
            break;
        }
        rest.extend(more);
    }
    assert_eq!(rest.last().map(String::as_str), Some("RESUMED"));
    assert_eq!(
        rest.iter().filter(|l| l.starts_with(" ADDED")).count(),
        4_999
    );
    assert_eq!(
        rest.iter()
            .filter(|l| l.starts_with(" MODIFIED"))
            .collect::<Vec<_>>(),
        vec![" MODIFIED reason=0 table=0 priority=9 cookie=0x0 actions=1"]
    );
    assert!(!a.conn(mon).unwrap().monitors.is_paused());
    // Flowing again.
    send(&mut a, other, &flow("priority=1,actions=drop"), 9);
    assert_eq!(
        said(&out10(&mut a, mon)),
        lines(&[
            "reply xid=0",
            " ADDED reason=0 table=0 priority=1 cookie=0x0 actions=0"
        ])
    );
}

/// A connection of OpenFlow 1.4 (HELLO of version 5 alone).
fn open14(a: &mut Agent<FakeDp>) -> ConnId {
    let id = a.connect(0);
    let hello = Message::Hello(Hello {
        version: 5,
        elements: Vec::new(),
    });
    assert!(a.handle_input(id, &hello.to_bytes(1), 0));
    raw_out(a, id);
    id
}

/// Everything queued on `id`, as frames.
fn raw_out(a: &mut Agent<FakeDp>, id: ConnId) -> Vec<Bytes> {
    let b = a.poll_transmit(id).map(<[u8]>::to_vec).unwrap_or_default();
    a.transmitted(id, b.len());
    let mut v = Vec::new();
    let mut at = 0;
    while at + 4 <= b.len() {
        let len = u16::from_be_bytes([b[at + 2], b[at + 3]]) as usize;
        v.push(Bytes::copy_from_slice(&b[at..at + len]));
        at += len;
    }
    v
}

/// An OFPMP_FLOW_MONITOR request of `reqs`.
fn request14(reqs: &[fm::Request14], xid: u32) -> Vec<u8> {
    let mut b = vec![5, 18, 0, 0];
    b.extend(xid.to_be_bytes());
    b.extend([0, 16, 0, 0, 0, 0, 0, 0]);
    for q in reqs {
        fm::put_request_14(q, &mut b);
    }
    let len = b.len() as u16;
    b[2..4].copy_from_slice(&len.to_be_bytes());
    b
}

/// The 1.4 frames as lines, as `said` does for 1.0's.
fn said14(frames: &[Bytes]) -> Vec<String> {
    let mut v = Vec::new();
    for f in frames {
        let xid = u32::from_be_bytes([f[4], f[5], f[6], f[7]]);
        if f[1] == 1 {
            v.push(format!(
                "error ({}, {})",
                u16::from_be_bytes([f[8], f[9]]),
                u16::from_be_bytes([f[10], f[11]])
            ));
            continue;
        }
        assert_eq!((f[0], f[1], &f[8..10]), (5, 19, &[0u8, 16][..]), "{f:?}");
        v.push(format!("reply xid={xid}"));
        for u in fm::decode_updates_14(&f.slice(16..)).unwrap() {
            v.push(match u {
                fm::Update14::Full { update: f, initial } => format!(
                    " {} reason={} table={} priority={} actions={}",
                    if initial {
                        "INITIAL".to_string()
                    } else {
                        f.event.to_string()
                    },
                    f.reason,
                    f.table_id,
                    f.priority,
                    f.instructions.len()
                ),
                fm::Update14::Abbrev { xid } => format!(" ABBREV {xid}"),
                fm::Update14::Paused => " PAUSED".into(),
                fm::Update14::Resumed => " RESUMED".into(),
            });
        }
    }
    v
}

fn req14(command: fm::MonitorCommand, id: u32, flags: u16) -> fm::Request14 {
    fm::Request14 {
        command,
        monitor: watch(id, flags),
        out_group: ofp::port::group_no::ANY,
    }
}

#[test]
fn openflow_14_monitors_add_modify_delete() {
    use fm::MonitorCommand::{Add, Delete, Modify};
    let mut a = agent();
    let other = open(&mut a);
    send(
        &mut a,
        other,
        &flow("table=1,priority=5,ip,actions=output:2"),
        2,
    );
    let mon = open14(&mut a);
    assert_eq!(a.conn(mon).unwrap().version, Version::V1_4);
    assert!(a.handle_input(mon, &request14(&[req14(Add, 1, flags::ALL)], 9), 1));
    assert_eq!(
        said14(&raw_out(&mut a, mon)),
        lines(&[
            "reply xid=9",
            " INITIAL reason=0 table=1 priority=5 actions=1"
        ])
    );
    send(&mut a, other, &flow("priority=10,arp,actions=drop"), 3);
    assert_eq!(
        said14(&raw_out(&mut a, mon)),
        lines(&[
            "reply xid=0",
            " ADDED reason=0 table=0 priority=10 actions=0"
        ])
    );
    // Its own change, abbreviated (no ONLY_OWN).
    assert!(a.handle_input(
        mon,
        &request14(&[req14(Modify, 1, flags::ALL & !flags::OWN)], 10),
        1
    ));
    assert_eq!(
        said14(&raw_out(&mut a, mon)),
        lines(&[
            "reply xid=10",
            " INITIAL reason=0 table=0 priority=10 actions=0",
            " INITIAL reason=0 table=1 priority=5 actions=1"
        ])
    );
    let mut fm13 = ofp::text::parse_flow_mod("priority=11,actions=drop").unwrap();
    fm13.command = ofp::FlowModCommand::Add;
    let mut b = Vec::new();
    Message::FlowMod(fm13)
        .encode_as(Version::V1_4, 44, &mut b)
        .unwrap();
    assert!(a.handle_input(mon, &b, 1));
    assert_eq!(
        said14(&raw_out(&mut a, mon)),
        lines(&["reply xid=0", " ABBREV 44"])
    );
    // Refusals: an id that runs, one that does not; nothing changes.
    assert!(a.handle_input(mon, &request14(&[req14(Add, 1, flags::ADD)], 11), 1));
    assert_eq!(said14(&raw_out(&mut a, mon)), lines(&["error (16, 1)"]));
    assert!(a.handle_input(
        mon,
        &request14(&[req14(Delete, 1, 0), req14(Modify, 7, flags::ADD)], 12),
        1
    ));
    assert_eq!(said14(&raw_out(&mut a, mon)), lines(&["error (16, 3)"]));
    assert_eq!(a.conn(mon).unwrap().monitors.len(), 1);
    // Delete: gone, and the journal off.
    assert!(a.handle_input(mon, &request14(&[req14(Delete, 1, 0)], 13), 1));
    assert_eq!(said14(&raw_out(&mut a, mon)), lines(&["reply xid=13"]));
    assert!(a.conn(mon).unwrap().monitors.is_empty());
    assert!(!a.pipeline().watching_flows());
}

/// While paused, a flow older than the pause that an ADD replaced is
/// still one the monitor knows: its deletion is sent.
#[test]
fn a_replaced_older_flow_deleted_while_paused_is_reported() {
    let mut a = agent();
    let mon = open10(&mut a);
    send10(&mut a, mon, &fm::request(&[watch(1, flags::ALL)]), 3);
    let other = open(&mut a);
    send(&mut a, other, &flow("priority=77,actions=drop"), 4);
    fill_until_paused(&mut a, mon, other);
    let held = a.poll_transmit(mon).unwrap().len();
    send(&mut a, other, &flow("priority=77,actions=output:2"), 5);
    assert_eq!(a.poll_transmit(mon).unwrap().len(), held);
    let mut d = ofp::text::parse_flow_mod("priority=77").unwrap();
    d.command = ofp::FlowModCommand::DeleteStrict;
    send(&mut a, other, &Message::FlowMod(d), 6);
    let s = said(&out10(&mut a, mon));
    let paused_at = s.iter().position(|l| l == "PAUSED").expect("PAUSED");
    assert_eq!(
        s[paused_at + 1..],
        lines(&[
            "reply xid=0",
            " DELETED reason=2 table=0 priority=77 cookie=0x0 actions=1"
        ])
    );
    // And nothing of it at the resumption.
    assert_eq!(said(&out10(&mut a, mon)), lines(&["RESUMED"]));
}
