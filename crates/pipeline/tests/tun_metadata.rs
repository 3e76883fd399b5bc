//! The `tun_metadataN` fields (Geneve options, mapped by the option
//! table) through the pipeline: flows naming them need the mapping,
//! set_field, load and move write them, a match needs the option present,
//! and the option table keeps a mapping a flow uses.

use etherparse::PacketBuilder;
use ofp::msg::tlv_table::{
    TlvCommand, TlvMap, TlvTableMod, NXFMFC_INVALID_TLV_FIELD, NXTTMFC_INVALID_TLV_DEL,
};
use ofp::text::parse_flow_mod;
use pipeline::{Config, Output, Pipeline, PortState, Worker};

fn udp() -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(5000, 53);
    let mut v = Vec::new();
    b.write(&mut v, b"query").unwrap();
    v
}

fn tlv(command: TlvCommand, index: u16) -> TlvTableMod {
    TlvTableMod {
        command,
        maps: vec![TlvMap {
            class: 0x0102,
            ty: 0x80,
            len: 4,
            index,
        }],
    }
}

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 40,
        ..Config::default()
    });
    for n in [1, 2, 3, 5] {
        p.set_port(PortState::up(n));
    }
    p
}

fn add(p: &mut Pipeline, f: &str) -> Result<(), ofp::OfpError> {
    let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
    p.flow_mod(&fm, 0).map(|_| ())
}

fn ports(p: &mut Pipeline, in_port: u32) -> Vec<u32> {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = udp();
    let out: Vec<Output> = w.process(&snap, in_port, &mut f, 1_000).to_vec();
    out.iter().map(|o| o.port).collect()
}

#[test]
fn a_flow_naming_an_unmapped_field_is_refused_as_open_vswitch_refuses_it() {
    let mut p = pipeline();
    for f in [
        "tun_metadata0=0x2/0xffff,actions=drop",
        "actions=set_field:0x2->tun_metadata0",
        "actions=move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30]",
    ] {
        assert_eq!(
            add(&mut p, f).unwrap_err().code,
            NXFMFC_INVALID_TLV_FIELD,
            "{f}"
        );
    }
    p.tlv_table_mod(&tlv(TlvCommand::Add, 0)).unwrap();
    add(&mut p, "tun_metadata0=0x2/0xffff,actions=drop").unwrap();
    // A field a flow uses stays mapped.
    assert_eq!(
        p.tlv_table_mod(&tlv(TlvCommand::Delete, 0)),
        Err(NXTTMFC_INVALID_TLV_DEL)
    );
    assert_eq!(
        p.tlv_table_mod(&tlv(TlvCommand::Clear, 0)),
        Err(NXTTMFC_INVALID_TLV_DEL)
    );
    add(&mut p, "tun_metadata0=0x2/0xffff,actions=drop").unwrap();
    let mut del = parse_flow_mod("tun_metadata0=0x2/0xffff").unwrap();
    del.command = ofp::msg::flow::FlowModCommand::Delete;
    p.flow_mod(&del, 0).unwrap();
    p.tlv_table_mod(&tlv(TlvCommand::Delete, 0)).unwrap();
}

#[test]
fn ovns_logical_ids_are_set_matched_and_moved_into_registers() {
    let mut p = pipeline();
    p.tlv_table_mod(&tlv(TlvCommand::Add, 0)).unwrap();
    for f in [
        // What OVN's egress writes (ingress port 0x1, egress port 0x2) ...
        "table=0,in_port=1,actions=load:0x1->NXM_NX_REG14[],set_field:0x10002->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],resubmit(,1)",
        // ... and what its ingress reads back, matched and moved.
        "table=1,tun_metadata0=0x2/0xffff,actions=move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],move:NXM_NX_TUN_METADATA0[0..15]->NXM_NX_REG15[0..15],resubmit(,2)",
        "table=2,reg14=0x1,reg15=0x2,actions=output:5",
        // A packet that does not carry the option does not match it, not
        // even with a mask of zero.
        "table=0,in_port=2,actions=resubmit(,3)",
        "table=3,priority=10,tun_metadata0=0/0,actions=output:5",
        "table=3,priority=5,actions=output:3",
        // A load makes it present, its other bits zero.
        "table=0,in_port=3,actions=load:0x7->NXM_NX_TUN_METADATA0[4..6],resubmit(,4)",
        "table=4,tun_metadata0=0x70,actions=output:1",
    ] {
        add(&mut p, f).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    assert_eq!(ports(&mut p, 1), vec![5]);
    assert_eq!(ports(&mut p, 2), vec![3]);
    assert_eq!(ports(&mut p, 3), vec![1]);
}

/// Where a packet went, with the Geneve options it carries out.
type Sent = Vec<(u32, Option<Vec<u8>>)>;

/// Runs `frame` in from a Geneve port (7) with options `opts`: the ports
/// it goes to with the options each carries out, and the frames refused.
fn from_geneve(p: &mut Pipeline, opts: &[u8]) -> (Sent, u64) {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = udp();
    let tun = packet::TunnelMeta {
        id: 5,
        ipv4_src: 0xc0a8_0002,
        ipv4_dst: 0xc0a8_0001,
        ..Default::default()
    };
    let out = w
        .process_tunneled(&snap, 7, &tun, opts, &mut f, 1_000)
        .iter()
        .map(|o| (o.port, o.tun_opts.as_deref().map(<[u8]>::to_vec)))
        .collect();
    (out, w.tun_options_refused())
}

/// OVN's option: class 0x0102, type 0x80 (critical), 4 bytes.
const OVN_OPT: [u8; 8] = [0x01, 0x02, 0x80, 0x01, 0x00, 0x01, 0x00, 0x02];

#[test]
fn geneve_options_in_become_fields_and_fields_go_out_as_options() {
    let mut p = pipeline();
    for n in [7, 9] {
        p.set_port(PortState::up(n));
    }
    p.tlv_table_mod(&tlv(TlvCommand::Add, 0)).unwrap();
    for f in [
        "in_port=7,tun_metadata0=0x10002,actions=output:5",
        "in_port=7,priority=0,actions=output:3",
        "in_port=1,actions=set_field:0x10002->tun_metadata0,output:9,output:2",
    ] {
        add(&mut p, f).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    // Matched as the field; carried out again as it came.
    assert_eq!(
        from_geneve(&mut p, &OVN_OPT),
        (vec![(5, Some(OVN_OPT.to_vec()))], 0)
    );
    // No options, or only unmapped ones that are not critical: no field.
    assert_eq!(from_geneve(&mut p, &[]), (vec![(3, None)], 0));
    let other = [0x01, 0x03, 0x01, 0x01, 9, 9, 9, 9];
    assert_eq!(from_geneve(&mut p, &other), (vec![(3, None)], 0));
    // Unmapped and other options around the mapped one.
    let mixed = [&other[..], &OVN_OPT[..], &[0xff, 0xff, 0x02, 0x00]].concat();
    assert_eq!(from_geneve(&mut p, &mixed).0[0].0, 5);
    // Dropped as Open vSwitch drops them: an unmapped critical option, a
    // mapped one of another length, options that run past their end.
    let critical = [0x01, 0x03, 0x81, 0x00];
    let long = [0x01, 0x02, 0x80, 0x02, 0, 0, 0, 0, 0, 1, 0, 2];
    let cut = [0x01, 0x02, 0x80, 0x02, 0, 1, 0, 2];
    for bad in [&critical[..], &long[..], &cut[..], &[1, 2, 3][..]] {
        assert_eq!(from_geneve(&mut p, bad), (vec![], 1), "{bad:?}");
    }
    // Set by a flow: the options a Geneve port sends, on every output.
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = udp();
    let outs: Vec<_> = w
        .process(&snap, 1, &mut f, 1_000)
        .iter()
        .map(|o| (o.port, o.tun_opts.as_deref().map(<[u8]>::to_vec)))
        .collect();
    assert_eq!(
        outs,
        vec![(9, Some(OVN_OPT.to_vec())), (2, Some(OVN_OPT.to_vec()))]
    );
}

#[test]
fn two_fields_go_out_in_field_order_each_of_its_mapped_length() {
    let mut p = pipeline();
    p.tlv_table_mod(&TlvTableMod {
        command: TlvCommand::Add,
        maps: vec![
            TlvMap {
                class: 0xffff,
                ty: 0x01,
                len: 8,
                index: 1,
            },
            TlvMap {
                class: 0x0102,
                ty: 0x80,
                len: 4,
                index: 0,
            },
        ],
    })
    .unwrap();
    add(
        &mut p,
        "in_port=1,actions=set_field:0xaabbccdd11223344->tun_metadata1,set_field:0x7->tun_metadata0,output:2",
    )
    .unwrap();
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = udp();
    let o = w.process(&snap, 1, &mut f, 1_000)[0].tun_opts.clone();
    let want: Vec<u8> = [
        &[0x01, 0x02, 0x80, 0x01, 0, 0, 0, 7][..],
        &[
            0xff, 0xff, 0x01, 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x11, 0x22, 0x33, 0x44,
        ][..],
    ]
    .concat();
    assert_eq!(o.as_deref(), Some(&want[..]));
}
