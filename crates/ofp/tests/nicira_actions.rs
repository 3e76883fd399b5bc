//! The Nicira actions beyond load, move and resubmit (note, exit,
//! output:FIELD, dec_ttl(ids), push/pop, clone, sample, controller,
//! multipath, bundle): malformed wire forms answer with Open vSwitch 3.1's
//! error codes, never a panic; the forms an action came in are kept; the
//! text refuses what it cannot take with an error naming the token. The
//! bytes and text of well-formed actions are checked against ovs-ofctl in
//! `ovs_wire.rs`.

use bytes::Bytes;
use proptest::prelude::*;

use ofp::action::{
    decode_actions, Action, Controller, ControllerForm, OutputReg, OutputRegForm, Sample,
    SampleDirection, SampleForm, Subfield, NXBRC_MUST_BE_ZERO,
};
use ofp::error::{BadActionCode, BadMatchCode};
use ofp::oxm::OxmField as F;
use ofp::port::port_no;
use ofp::text::{format_action, parse_action, parse_actions, parse_flow_mod};
use ofp::wire::Reader;
use ofp::{ErrorCode, Message};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode(s: &str) -> Result<Vec<Action>, ErrorCode> {
    let b = Bytes::from(hex(s));
    let mut r = Reader::new(&b, ErrorCode::ACTION_BAD_LEN);
    decode_actions(&mut r).map_err(|e| e.code)
}

fn encode(a: &[Action]) -> String {
    let mut out = Vec::new();
    ofp::action::encode_actions(a, &mut out);
    out.iter().map(|b| format!("{b:02x}")).collect()
}

const BAD_LEN: ErrorCode = ErrorCode::ACTION_BAD_LEN;
const BAD_ARG: ErrorCode = ErrorCode::BadAction(BadActionCode::BadArgument);
const BAD_SET_TYPE: ErrorCode = ErrorCode::BadAction(BadActionCode::BadSetType);
const BAD_SET_LEN: ErrorCode = ErrorCode::BadAction(BadActionCode::BadSetLen);
const BAD_SET_ARG: ErrorCode = ErrorCode::BadAction(BadActionCode::BadSetArgument);
const BAD_OUT_PORT: ErrorCode = ErrorCode::BadAction(BadActionCode::BadOutPort);

#[test]
fn forms_kept_as_they_came() {
    // NXAST_OUTPUT_REG2 (sent by other controllers): decoded and written back so.
    let raw = "ffff0018 00002320 0020 001f ffff 00010004 000000000000";
    let a = decode(raw).unwrap();
    assert_eq!(
        a,
        vec![Action::OutputReg(OutputReg {
            src: Subfield::whole(F::Reg(0)),
            max_len: 0xffff,
            form: OutputRegForm::OutputReg2,
        })]
    );
    assert_eq!(encode(&a), raw.replace(' ', ""));
    // NXAST_SAMPLE2 without a sampling port stays SAMPLE2.
    let raw = "ffff0020 00002320 0026 0001 00000000 00000000 00000000 ffff 00 0000000000";
    let a = decode(raw).unwrap();
    assert!(matches!(
        &a[0],
        Action::Sample(Sample {
            form: SampleForm::Sample2,
            sampling_port: port_no::ANY,
            ..
        })
    ));
    assert_eq!(encode(&a), raw.replace(' ', ""));
    // NXAST_CONTROLLER2 with nothing but defaults stays CONTROLLER2.
    let raw = "ffff0010 00002320 0025 000000000000";
    let a = decode(raw).unwrap();
    assert!(matches!(&a[0], Action::Controller(c) if c.form == ControllerForm::Controller2));
    assert_eq!(encode(&a), raw.replace(' ', ""));
    // And it prints as ovs-ofctl prints it.
    assert_eq!(format_action(&a[0]), "CONTROLLER:65535");
}

#[test]
fn malformed_actions_answer_with_open_vswitchs_codes() {
    let cases: &[(&str, ErrorCode)] = &[
        // exit: 24 bytes.
        ("ffff0018 00002320 0011 000000000000 0000000000000000", BAD_LEN),
        // output_reg: reserved bytes, unknown header, bits outside the field.
        ("ffff0018 00002320 000f 001f 00010004 ffff 000000000001", BAD_ARG),
        ("ffff0018 00002320 000f 001f 7fff0004 ffff 000000000000", BAD_SET_TYPE),
        ("ffff0018 00002320 000f 041f 00010004 ffff 000000000000", BAD_SET_LEN),
        ("ffff0010 00002320 000f 001f 00010004", BAD_LEN),
        // output_reg2: padding not zero; a masked header.
        ("ffff0018 00002320 0020 001f ffff 00010004 000000000001", NXBRC_MUST_BE_ZERO),
        (
            "ffff0018 00002320 0020 001f ffff 00010108 000000000000",
            ErrorCode::BadMatch(BadMatchCode::BadMask),
        ),
        // dec_ttl_cnt_ids: zeros not zero, no room for the ids.
        ("ffff0018 00002320 0015 0001 00000001 0001000000000000", NXBRC_MUST_BE_ZERO),
        ("ffff0010 00002320 0015 0001 00000000", BAD_LEN),
        ("ffff0018 00002320 0015 0005 00000000 0001000200030000", BAD_LEN),
        // push/pop: bits outside the field, zero bits, read-only pop, padding.
        ("ffff0018 00002320 001b 0000 00010004 0021 000000000000", BAD_SET_LEN),
        ("ffff0018 00002320 001b 0000 00010004 0000 000000000000", BAD_SET_LEN),
        ("ffff0018 00002320 001c 0000 80000004 0020 000000000000", BAD_SET_ARG),
        ("ffff0018 00002320 001b 0000 00010004 0020 000000000100", NXBRC_MUST_BE_ZERO),
        ("ffff0018 00002320 001b 0000 7fff0004 0020 000000000000", ErrorCode::BadMatch(BadMatchCode::BadField)),
        // sample: probability 0; sample3 direction 3, padding.
        ("ffff0018 00002320 001d 0000 00000000 00000000 00000000", BAD_ARG),
        ("ffff0020 00002320 0029 0001 00000000 00000000 00000000 ffff 03 0000000000", BAD_ARG),
        ("ffff0020 00002320 0029 0001 00000000 00000000 00000000 ffff 01 0000000001", NXBRC_MUST_BE_ZERO),
        ("ffff0018 00002320 0026 0001 00000000 00000000 00000000", BAD_LEN),
        // controller: 24 bytes; controller2 pad, property too long, unknown property.
        ("ffff0018 00002320 0014 ffff 0000 0100 0000000000000000", BAD_LEN),
        ("ffff0018 00002320 0025 000000000001 0004 0004 00000000", NXBRC_MUST_BE_ZERO),
        ("ffff0018 00002320 0025 000000000000 0003 0010 01020304", BAD_LEN),
        ("ffff0018 00002320 0025 000000000000 0009 0004 00000000", BAD_ARG),
        ("ffff0018 00002320 0025 000000000000 0005 0006 00000000", BAD_LEN),
        // multipath: unknown fields, algorithm, too narrow, read-only.
        ("ffff0020 00002320 000a 0009 0000 0000 0000 0000 00000000 0000 001f 00010004", BAD_ARG),
        ("ffff0020 00002320 000a 0000 0000 0000 0009 0000 00000000 0000 001f 00010004", BAD_ARG),
        ("ffff0020 00002320 000a 0000 0000 0000 0000 0004 00000000 0000 0001 00010004", BAD_ARG),
        ("ffff0020 00002320 000a 0000 0000 0000 0000 0001 00000000 0000 001f 80000004", BAD_SET_ARG),
        ("ffff0020 00002320 000a 0000 0000 0000 0000 0001 00000000 0000 001f 7fff0004", BAD_SET_TYPE),
        // bundle: unknown algorithm, member type, reserved, destination on bundle,
        // no room for the members (which wins), controller member.
        ("ffff0028 00002320 000c 0009 0000 0000 00000002 0001 0000 00000000 00000000 0001000000000000", BAD_ARG),
        ("ffff0028 00002320 000c 0001 0000 0000 00000003 0001 0000 00000000 00000000 0001000000000000", BAD_ARG),
        ("ffff0028 00002320 000c 0001 0000 0000 00000002 0001 0000 00000000 00000001 0001000000000000", BAD_ARG),
        ("ffff0028 00002320 000c 0001 0000 0000 00000002 0001 001f 00010004 00000000 0001000000000000", BAD_ARG),
        ("ffff0028 00002320 000c 0009 0000 0000 00000002 0009 0000 00000000 00000000 0001000000000000", BAD_LEN),
        ("ffff0028 00002320 000c 0001 0000 0000 00000002 0001 0000 00000000 00000000 fffd000000000000", BAD_OUT_PORT),
        ("ffff0028 00002320 000c 0001 0000 0000 00000002 0001 0000 00000000 00000000 ff00000000000000", BAD_OUT_PORT),
        // bundle_load: unknown destination at once, destination under 16 bits.
        ("ffff0028 00002320 000d 0009 0000 0000 00000002 0001 001f 7fff0004 00000000 0001000000000000", BAD_SET_TYPE),
        ("ffff0028 00002320 000d 0001 0000 0000 00000002 0001 0007 00010004 00000000 0001000000000000", BAD_ARG),
        // clone: a bad nested action is the clone's error.
        ("ffff0018 00002320 002a 000000000000 0000 0008 00000000", BAD_LEN),
    ];
    let mut bad = Vec::new();
    for (raw, code) in cases {
        let got = decode(raw).map(|_| ());
        if got != Err(*code) {
            bad.push(format!("{raw}: {got:?}, want {code:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn clone_nesting_is_bounded() {
    // 99 nested clones decode; 100 do not, as Open vSwitch's parser.
    let nest = |n: usize| {
        let mut a = vec![Action::Exit];
        for _ in 0..n {
            a = vec![Action::Clone(a)];
        }
        a
    };
    let wire = |a: &[Action]| {
        let mut out = Vec::new();
        ofp::action::encode_actions(a, &mut out);
        Bytes::from(out)
    };
    let ok = wire(&nest(99));
    let mut r = Reader::new(&ok, BAD_LEN);
    assert_eq!(decode_actions(&mut r).unwrap(), nest(99));
    let deep = wire(&nest(100));
    let mut r = Reader::new(&deep, BAD_LEN);
    assert_eq!(decode_actions(&mut r).unwrap_err().code, BAD_ARG);
    // The text parser agrees.
    let text = |n: usize| format!("{}exit{}", "clone(".repeat(n), ")".repeat(n));
    assert_eq!(parse_actions(&text(99)).unwrap(), nest(99));
    let e = parse_actions(&text(100)).unwrap_err();
    assert!(e.expected.contains("nested"), "{e}");
}

#[test]
fn write_actions_refuses_what_an_action_set_cannot_hold() {
    for a in [
        "exit",
        "note:01",
        "output:reg0[]",
        "push:reg0[]",
        "pop:reg0[]",
        "clone(output:1)",
        "sample(probability=1)",
        "controller(id=1)",
        "multipath(eth_src,0,modulo_n,1,0,reg0[])",
        "bundle(eth_src,0,hrw,ofport,members:1)",
        "learn(table=1)",
        "conjunction(1,1/2)",
    ] {
        let fm = parse_flow_mod(&format!("actions=write_actions({a})")).unwrap();
        let e = Message::FlowMod(fm).validate().unwrap_err();
        assert_eq!(e.code, ErrorCode::BadAction(BadActionCode::BadType), "{a}");
    }
    // dec_ttl with ids may be in the set.
    let fm = parse_flow_mod("ip,actions=write_actions(dec_ttl(1))").unwrap();
    Message::FlowMod(fm).validate().unwrap();
}

#[test]
fn text_errors_name_the_token() {
    for (text, token) in [
        ("output:NXM_NX_REG16[]", "NXM_NX_REG16[]"),
        ("push:reg0[0..32]", "reg0[0..32]"),
        ("pop:bogus", "bogus"),
        ("dec_ttl(1,x)", "x"),
        ("note:0g", "0g"),
        ("sample(probability=0)", "probability=0"),
        ("controller(reason=bogus)", "bogus"),
        ("multipath(eth_src,0,bogus,1,0,reg0)", "bogus"),
        ("bundle(eth_src,0,hrw,ofport,members:bogus)", "bogus"),
    ] {
        let e = parse_action(text).unwrap_err();
        assert_eq!(e.token, token, "{text}: {e}");
    }
    // output:FIELD of more than 64 bits parses, as ovs-ofctl's, and is refused.
    let a = parse_action("output:NXM_NX_XXREG0[]").unwrap();
    assert_eq!(a.validate().unwrap_err().code, BAD_ARG);
}

#[test]
fn text_round_trips() {
    for t in [
        "note:01.02.03.00.00.00",
        "exit",
        "output:NXM_NX_REG0[0..15]",
        "dec_ttl(1,2)",
        "push:NXM_NX_REG2[0..5]",
        "pop:NXM_OF_ETH_DST[]",
        "clone(load:0x1->NXM_NX_REG0[],output:2)",
        "clone(drop)",
        "sample(probability=1,collector_set_id=0,obs_domain_id=0,obs_point_id=0,sampling_port=4,egress)",
        "controller(reason=no_match,max_len=3,id=4,userdata=01.02,pause,meter_id=6)",
        "controller(reason=invalid_ttl)",
        "multipath(symmetric_l3l4+udp,0,iter_hash,5,8,NXM_NX_REG1[16..31])",
        "bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:4,8)",
        "bundle(symmetric_l4,60,active_backup,ofport,members:2,LOCAL)",
    ] {
        let a = parse_action(t).unwrap();
        assert_eq!(format_action(&a), t);
        let mut out = Vec::new();
        a.encode(&mut out);
        let b = Bytes::from(out);
        let mut r = Reader::new(&b, BAD_LEN);
        assert_eq!(Action::decode(&mut r).unwrap(), a, "{t}");
    }
    let c = parse_action("controller(pause)").unwrap();
    assert!(matches!(&c, Action::Controller(c) if **c == Controller {
        max_len: 0xffff,
        id: 0,
        reason: 1,
        userdata: Bytes::new(),
        pause: true,
        meter_id: ofp::action::NX_CTLR_NO_METER,
        form: ControllerForm::Controller2,
    }));
    let s = parse_action("sample(probability=5,ingress)").unwrap();
    assert!(matches!(
        s,
        Action::Sample(Sample {
            direction: SampleDirection::Ingress,
            form: SampleForm::Sample3,
            ..
        })
    ));
}

proptest! {
    /// Any bytes after a Nicira header with one of these subtypes: an
    /// error or an action that encodes to a prefix-equal form; never a panic.
    #[test]
    fn arbitrary_nicira_bodies_never_panic(
        sub in prop::sample::select(vec![8u16, 10, 12, 13, 15, 17, 20, 21, 27, 28, 29, 32, 37, 38, 41, 42]),
        body in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let n = 10 + body.len();
        let len = n.div_ceil(8) * 8;
        let mut raw = vec![0xff, 0xff, (len >> 8) as u8, len as u8, 0, 0, 0x23, 0x20];
        raw.extend_from_slice(&sub.to_be_bytes());
        raw.extend_from_slice(&body);
        raw.resize(len, 0);
        let b = Bytes::from(raw);
        let mut r = Reader::new(&b, BAD_LEN);
        if let Ok(v) = decode_actions(&mut r) {
            for a in &v {
                let _ = a.validate();
                let _ = format_action(a);
                let mut out = Vec::new();
                a.encode(&mut out);
                // What decodes encodes back to something that decodes to the same.
                let again = Bytes::from(out);
                let mut r2 = Reader::new(&again, BAD_LEN);
                prop_assert_eq!(&Action::decode(&mut r2).unwrap(), a);
            }
        }
    }
}
