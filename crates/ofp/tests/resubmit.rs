//! Open vSwitch's `resubmit` on the wire and in text. Golden bytes are
//! what `ovs-ofctl -O OpenFlow13` 3.1 sent for each text form (captured
//! between it and a switch on 2026-11-27: every resubmit goes out as
//! NXAST_RESUBMIT_TABLE, subtype 14), and the printed forms are its own;
//! NXAST_RESUBMIT (subtype 1) and malformed actions answer as
//! `ovs-ofctl ofp-print` decodes them.

use bytes::Bytes;
use ofp::action::{Action, Resubmit};
use ofp::error::BadActionCode;
use ofp::port::port_no;
use ofp::wire::Reader;
use ofp::ErrorCode;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode_one(b: &[u8]) -> Result<Action, ErrorCode> {
    let b = Bytes::copy_from_slice(b);
    let mut r = Reader::new(&b, ErrorCode::ACTION_BAD_LEN);
    let a = Action::decode(&mut r).map_err(|e| e.code)?;
    assert!(r.is_empty());
    Ok(a)
}

fn resubmit(in_port: u32, table: u8) -> Action {
    Action::Resubmit(Resubmit { in_port, table })
}

/// (text given to ovs-ofctl, the action's bytes it sent, how it prints).
const GOLDEN: &[(&str, &str, &str)] = &[
    (
        "resubmit(,3)",
        "ffff001000002320000efff803000000",
        "resubmit(,3)",
    ),
    (
        "resubmit:5",
        "ffff001000002320000e0005ff000000",
        "resubmit:5",
    ),
    (
        "resubmit(7,2)",
        "ffff001000002320000e000702000000",
        "resubmit(7,2)",
    ),
    (
        "resubmit(in_port,4)",
        "ffff001000002320000efff804000000",
        "resubmit(,4)",
    ),
    (
        "resubmit:LOCAL",
        "ffff001000002320000efffeff000000",
        "resubmit:LOCAL",
    ),
    (
        "resubmit(5,255)",
        "ffff001000002320000e0005ff000000",
        "resubmit:5",
    ),
    (
        "resubmit:65279",
        "ffff001000002320000efeffff000000",
        "resubmit:65279",
    ),
];

#[test]
fn resubmit_as_ovs_ofctl_sends_and_prints_it() {
    for (text, bytes, printed) in GOLDEN {
        let parsed = ofp::text::parse_actions(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed.len(), 1, "{text}");
        let mut out = Vec::new();
        parsed[0].encode(&mut out);
        assert_eq!(out, hex(bytes), "{text}");
        assert_eq!(decode_one(&hex(bytes)), Ok(parsed[0].clone()), "{text}");
        assert_eq!(ofp::text::format_action(&parsed[0]), *printed, "{text}");
    }
    assert_eq!(
        ofp::text::parse_actions("resubmit(LOCAL,0)").unwrap(),
        vec![resubmit(port_no::LOCAL, 0)]
    );
    // 65280 and up are Open vSwitch's 16-bit reserved ports.
    assert_eq!(
        ofp::text::parse_actions("resubmit:65280").unwrap(),
        vec![resubmit(port_no::MAX, 255)]
    );
    assert_eq!(
        ofp::text::format_action(&resubmit(port_no::MAX, 255)),
        "resubmit:65280"
    );
}

#[test]
fn nxast_resubmit_means_the_current_table() {
    // Subtype 1: what follows the port is not looked at.
    assert_eq!(
        decode_one(&hex("ffff0010000023200001000503000000")),
        Ok(resubmit(5, 255))
    );
}

#[test]
fn malformed_resubmits_are_refused_as_open_vswitch_refuses_them() {
    assert_eq!(
        decode_one(&hex("ffff001000002320000e0005ff000100")),
        Err(ErrorCode::BadAction(BadActionCode::BadArgument))
    );
    assert_eq!(
        decode_one(&hex("ffff001800002320000e0005ff0000000000000000000000")),
        Err(ErrorCode::ACTION_BAD_LEN)
    );
    for bad in [
        "resubmit(,)",
        "resubmit(,255)",
        "resubmit:in_port",
        "resubmit:70000",
        "resubmit(1,2,3)",
        "resubmit(,3,ct)",
        "resubmit(x,1)",
        "resubmit(,256)",
    ] {
        assert!(ofp::text::parse_actions(bad).is_err(), "{bad}");
    }
}
