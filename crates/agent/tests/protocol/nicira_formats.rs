//! Nicira's flow formats on an OpenFlow 1.0 connection, as plain
//! ovs-ofctl uses them: NXT_SET_FLOW_FORMAT and NXT_FLOW_MOD_TABLE_ID
//! (the bytes it sends), NXT_FLOW_MOD, NXST_FLOW, NXST_AGGREGATE and
//! NXT_FLOW_REMOVED.

use bytes::Bytes;
use ofp::msg::multipart::{FlowStatsRequest, MultipartReplyBody as R};
use ofp::msg::nx_flow::{self, FlowFormat};
use ofp::msg::simple::Hello;
use ofp::oxm::{Match, Oxm, OxmField};
use ofp::{Action, FlowMod, FlowModCommand, Message, Version};

use super::fake::*;
use agent::{Agent, ConnId};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// What the agent sent `id`, read as OpenFlow 1.0.
fn out10(a: &mut Agent<FakeDp>, id: ConnId) -> Vec<Message> {
    let b = a.poll_transmit(id).map(<[u8]>::to_vec).unwrap_or_default();
    a.transmitted(id, b.len());
    let mut v = Vec::new();
    let mut at = 0;
    while at + 4 <= b.len() {
        let len = u16::from_be_bytes([b[at + 2], b[at + 3]]) as usize;
        let f = Bytes::copy_from_slice(&b[at..at + len]);
        v.push(Message::decode_as(&f, Version::V1_0).unwrap().1);
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

fn send10(a: &mut Agent<FakeDp>, id: ConnId, m: &Message) -> Vec<Message> {
    let mut b = Vec::new();
    m.encode_as(Version::V1_0, 7, &mut b).unwrap();
    assert!(a.handle_input(id, &b, 1));
    out10(a, id)
}

/// `add-flow table=3,priority=100,ip,nw_dst=10.0.0.7,actions=strip_vlan,
/// load:21->NXM_NX_TUN_ID[],set_field:10.10.10.10->tun_dst,output:100`
/// as ovs-ofctl 3.1 sends it: NXM, the table id on, then the flow.
const CLOUD: [&str; 3] = [
    "0104001400000006000023200000000c00000002",
    "0104001800000008000023200000000f0100000000000000",
    "010400800000000a000023200000000d00000000000000000300000000000064ffffffffffff0000000e000000000000000006020800000010040a00000700000003000800000000ffff0018000023200007003f000120080000000000000015ffff0018000023200007001f00014004000000000a0a0a0a0000000800640000",
];

#[test]
fn plain_ovs_ofctls_flows_go_in_and_read_back_in_nxm() {
    let mut a = agent();
    let id = open10(&mut a);
    for m in CLOUD {
        assert!(a.handle_input(id, &hex(m), 1));
    }
    assert_eq!(out10(&mut a, id), vec![], "taken without a word");
    let c = a.conn(id).unwrap();
    assert_eq!(
        (c.flow_format, c.flow_mod_table_id),
        (FlowFormat::Nxm, true)
    );
    // The strip_vlan flow, whose match says nothing of VLANs, is in table 3.
    assert_eq!(a.pipeline().tables()[3].len(), 1);

    // A flow with a register, removed later with a FLOW_REMOVED.
    let fm = FlowMod {
        table_id: 1,
        priority: 9,
        flags: 1,
        match_: Match::new().with(Oxm::exact(OxmField::Reg(0), 1)),
        ..FlowMod::default()
    };
    assert_eq!(send10(&mut a, id, &nx_flow::flow_mod(&fm, true)), vec![]);

    let req = nx_flow::stats_request(nx_flow::NXST_FLOW, &FlowStatsRequest::default());
    let replies = send10(&mut a, id, &req);
    let [Message::MultipartReply(r)] = &replies[..] else {
        panic!("{replies:?}")
    };
    let R::Experimenter(e) = &r.body else {
        panic!()
    };
    assert_eq!(e.exp_type, nx_flow::NXST_FLOW);
    let mut rd = ofp::wire::Reader::new(&e.data, ofp::error::ErrorCode::BAD_LEN);
    let mut flows = Vec::new();
    while !rd.is_empty() {
        flows.push(nx_flow::decode_flow_stats(&mut rd).unwrap());
    }
    flows.sort_by_key(|f| f.table_id);
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[0].match_, fm.match_, "the register reads back");
    assert_eq!((flows[1].table_id, flows[1].priority), (3, 100));
    let ofp::Instruction::ApplyActions(acts) = &flows[1].instructions[0] else {
        panic!()
    };
    assert_eq!(acts[0], Action::PopVlan);

    let agg = nx_flow::stats_request(nx_flow::NXST_AGGREGATE, &FlowStatsRequest::default());
    let replies = send10(&mut a, id, &agg);
    let [Message::MultipartReply(r)] = &replies[..] else {
        panic!("{replies:?}")
    };
    let R::Experimenter(e) = &r.body else {
        panic!()
    };
    assert_eq!(
        (e.exp_type, e.data.len(), e.data[19]),
        (nx_flow::NXST_AGGREGATE, 24, 2)
    );

    // DELETE of table 1: NXT_FLOW_REMOVED, the table id plus one.
    let del = FlowMod {
        table_id: 1,
        command: FlowModCommand::Delete,
        ..FlowMod::default()
    };
    let replies = send10(&mut a, id, &nx_flow::flow_mod(&del, true));
    let [Message::Experimenter(e)] = &replies[..] else {
        panic!("{replies:?}")
    };
    assert_eq!(e.exp_type, nx_flow::NXT_FLOW_REMOVED);
    let fr = nx_flow::decode_flow_removed(&e.data).unwrap();
    assert_eq!((fr.table_id, fr.priority, fr.match_), (1, 9, fm.match_));
}

#[test]
fn oxm_is_refused_and_1_3_has_no_set_flow_format() {
    let mut a = agent();
    let id = open10(&mut a);
    let r = send10(
        &mut a,
        id,
        &nx_flow::set_flow_format(FlowFormat::Unknown(1)),
    );
    let [Message::Error(e)] = &r[..] else {
        panic!("{r:?}")
    };
    assert_eq!(
        e.code,
        ofp::error::ErrorCode::BadRequest(ofp::error::BadRequestCode::Eperm)
    );
    let id13 = open(&mut a);
    let r = send(&mut a, id13, &nx_flow::set_flow_format(FlowFormat::Nxm), 3);
    let [(_, Message::Error(e))] = &r[..] else {
        panic!("{r:?}")
    };
    assert_eq!(
        e.code,
        ofp::error::ErrorCode::BadRequest(ofp::error::BadRequestCode::BadExpType)
    );
}

/// OFPST_TABLE on OpenFlow 1.0, as plain `ovs-ofctl --names` asks for the
/// tables' names: a table nobody named has none (Open vSwitch's reply, so
/// ovs-ofctl prints `table=0`), a configured name is there.
#[test]
fn table_stats_name_only_the_tables_that_have_a_name() {
    use ofp::msg::multipart::{MultipartRequest, MultipartRequestBody as Q};
    let mut a = agent();
    a.set_table_names(&std::collections::BTreeMap::from([(
        2,
        "Output".to_string(),
    )]));
    let id = open10(&mut a);
    let q = Message::MultipartRequest(MultipartRequest::new(Q::Table));
    let replies = send10(&mut a, id, &q);
    let tables: Vec<_> = replies
        .iter()
        .flat_map(|m| match m {
            Message::MultipartReply(r) => match &r.body {
                R::Table(v) => v.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(tables.len() > 3);
    for t in &tables {
        let want = if t.table_id == 2 { "Output" } else { "" };
        assert_eq!(t.name.as_str(), want, "table {}", t.table_id);
    }
}
