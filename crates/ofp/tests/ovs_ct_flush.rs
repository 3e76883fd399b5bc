//! NXT_CT_FLUSH_ZONE and NXT_CT_FLUSH ([`ofp::msg::ct_flush`]) against
//! ovs-ofctl 3.1: `ovs-ofctl -O OpenFlow13 ct-flush-zone` and `ct-flush`
//! are pointed at a switch this test plays; sluice decodes the message
//! they send, reads it as the arguments say, and encodes it back to the
//! same bytes. Bad bodies are refused with Open vSwitch's codes.
//!
//! Needs `ovs-ofctl`: without it the test fails, it does not skip.

use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};

use bytes::Bytes;
use ofp::msg::ct_flush::{parse_ct_tuple, CtFlush, CtTuple, OFPBPC_BAD_LEN, OFPBPC_BAD_VALUE};
use ofp::msg::nxt::{NxtMsg, NXBRC_MUST_BE_ZERO, NXT_CT_FLUSH};
use ofp::msg::simple::ExperimenterMsg;
use ofp::{ErrorCode, Message};

mod ovs_ofctl;
use ovs_ofctl::{accept_ovs_ofctl, answer_keepalive, ovs_ofctl, read_msg};

/// The experimenter message `ovs-ofctl -O OpenFlow13 ARGS` sends.
fn capture(args: &[&str], n: usize) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("sluice-ovs-ctf-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sw.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut cmd = Command::new(ovs_ofctl());
    cmd.args(["-O", "OpenFlow13", args[0]])
        .arg(format!("unix:{}", path.display()));
    cmd.args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut conn = accept_ovs_ofctl(&listener, &mut child).unwrap_or_else(|(st, e)| {
        panic!("ovs-ofctl {args:?} exited ({st}) without connecting: {e}")
    });
    let mut got = None;
    while let Some(m) = read_msg(&mut conn) {
        if !answer_keepalive(&mut conn, &m) && m[1] == 4 {
            got = Some(m);
        }
    }
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    got.unwrap_or_else(|| panic!("ovs-ofctl {args:?} sent no experimenter message"))
}

fn decode(raw: &[u8]) -> (ExperimenterMsg, NxtMsg) {
    match Message::decode(&Bytes::copy_from_slice(raw)) {
        Ok((_, Message::Experimenter(e))) => {
            let n = NxtMsg::decode(&e).unwrap().unwrap();
            (e, n)
        }
        other => panic!("not an experimenter message: {other:?}"),
    }
}

fn v4(s: &str) -> u128 {
    u128::from(s.parse::<std::net::Ipv4Addr>().unwrap().to_ipv6_mapped())
}

#[test]
fn ct_flush_messages_as_ovs_ofctl_sends_them() {
    let mut n = 0;
    let mut check = |args: &[&str], want: NxtMsg| {
        n += 1;
        let raw = capture(args, n);
        let (_, got) = decode(&raw);
        assert_eq!(got, want, "{args:?}");
        let xid = u32::from_be_bytes([raw[4], raw[5], raw[6], raw[7]]);
        assert_eq!(got.message().to_bytes(xid), raw, "{args:?}: re-encoded");
    };
    check(&["ct-flush-zone", "5"], NxtMsg::CtFlushZone(5));
    check(&["ct-flush-zone", "65535"], NxtMsg::CtFlushZone(65535));
    check(&["ct-flush"], NxtMsg::CtFlush(CtFlush::default()));
    check(
        &["ct-flush", "zone=7"],
        NxtMsg::CtFlush(CtFlush {
            zone: Some(7),
            ..CtFlush::default()
        }),
    );
    let tuple = |s: &str, p: &mut u8, f: &mut u8| parse_ct_tuple(s, p, f).unwrap();
    for (args, zone) in [
        (
            vec![
                "ct-flush",
                "zone=3",
                "ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.3,ct_nw_proto=6,ct_tp_src=1000,ct_tp_dst=80",
                "ct_nw_src=10.1.1.3,ct_nw_dst=10.1.1.2,ct_nw_proto=6,ct_tp_src=80,ct_tp_dst=1000",
            ],
            Some(3),
        ),
        (
            vec!["ct-flush", "ct_nw_src=10.1.1.2,ct_nw_proto=6,ct_tp_dst=80"],
            None,
        ),
        (
            vec![
                "ct-flush",
                "ct_ipv6_src=fd00::1,ct_ipv6_dst=fd00::2,ct_nw_proto=17",
            ],
            None,
        ),
        (
            vec![
                "ct-flush",
                "ct_nw_src=10.0.0.1,ct_nw_proto=1,icmp_type=8,icmp_code=0,icmp_id=42",
            ],
            None,
        ),
        (
            vec!["ct-flush", "zone=0", "ct_nw_proto=6", "ct_nw_dst=10.0.0.9"],
            Some(0),
        ),
    ] {
        let (mut p, mut f) = (0u8, 0u8);
        let mut want = CtFlush {
            zone,
            ..CtFlush::default()
        };
        let rest: Vec<&str> = args[1..]
            .iter()
            .copied()
            .filter(|a| !a.starts_with("zone="))
            .collect();
        if let Some(o) = rest.first() {
            want.orig = tuple(o, &mut p, &mut f);
        }
        if let Some(r) = rest.get(1) {
            want.reply = tuple(r, &mut p, &mut f);
        }
        want.ip_proto = p;
        check(&args, NxtMsg::CtFlush(want));
    }
    assert_eq!(
        tuple(
            "ct_nw_src=10.1.1.2,ct_nw_proto=6,ct_tp_dst=80",
            &mut 0,
            &mut 0
        ),
        CtTuple {
            src: v4("10.1.1.2"),
            dst_port: 80,
            ..CtTuple::default()
        }
    );
}

#[test]
fn bad_ct_flush_bodies_are_refused_as_open_vswitch_refuses_them() {
    let nx = |exp_type: u32, body: &[u8]| {
        NxtMsg::decode(&ExperimenterMsg {
            experimenter: 0x2320,
            exp_type,
            data: Bytes::copy_from_slice(body),
        })
        .unwrap()
        .map(|_| ())
        .map_err(|e| e.code)
    };
    let bad_len = ErrorCode::BAD_LEN;
    // NXT_CT_FLUSH_ZONE: 8 bytes, six of them zero.
    assert_eq!(nx(29, &[0, 0, 0, 0, 0, 0, 0]), Err(bad_len));
    assert_eq!(nx(29, &[0; 16]), Err(bad_len));
    assert_eq!(nx(29, &[0, 0, 0, 0, 0, 1, 0, 5]), Err(NXBRC_MUST_BE_ZERO));
    assert_eq!(nx(29, &[0, 0, 0, 0, 0, 0, 0, 5]), Ok(()));
    // NXT_CT_FLUSH: 8 bytes and properties, seven zeros.
    let f = NXT_CT_FLUSH;
    assert_eq!(nx(f, &[6, 0, 0, 0]), Err(bad_len));
    assert_eq!(nx(f, &[6, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 6]), Err(bad_len));
    assert_eq!(nx(f, &[6, 0, 0, 1, 0, 0, 0, 0]), Err(NXBRC_MUST_BE_ZERO));
    // A property shorter than its header, or past the end.
    assert_eq!(
        nx(f, &[6, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 3, 0, 0, 0, 0]),
        Err(OFPBPC_BAD_LEN)
    );
    assert_eq!(
        nx(f, &[6, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 12, 0, 0, 0, 0]),
        Err(OFPBPC_BAD_LEN)
    );
    // A zone property without its value.
    assert_eq!(
        nx(f, &[6, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 4, 0, 0, 0, 0]),
        Err(OFPBPC_BAD_LEN)
    );
    // Unknown properties are skipped.
    assert_eq!(
        nx(f, &[6, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 8, 1, 2, 3, 4]),
        Ok(())
    );
    // IPv4 and IPv6 addresses together.
    let mut body = vec![6, 0, 0, 0, 0, 0, 0, 0];
    let tuple = |src: u128, ty: u16| {
        let mut t = vec![0, ty as u8, 0, 32, 0, 0, 0, 0, 0, 0, 0, 20];
        t.extend_from_slice(&src.to_be_bytes());
        t.extend_from_slice(&[0, 0, 0, 0]);
        t
    };
    body.extend(tuple(v4("10.0.0.1"), 0));
    body.extend(tuple(1, 1));
    assert_eq!(nx(f, &body), Err(OFPBPC_BAD_VALUE));
}

#[test]
fn dpctl_tuple_text_as_open_vswitch_reads_it() {
    let (mut p, mut f) = (0, 0);
    for bad in [
        "ct_tp_dst=80",
        "ct_nw_src=10.0.0.1,ct_nw_src=10.0.0.2",
        "ct_nw_src=10.0.0.1,ct_ipv6_dst=::1",
        "ct_nw_src=bogus",
        "icmp_type=8",
        "bogus=1",
        "ct_nw_src=",
    ] {
        assert!(parse_ct_tuple(bad, &mut 0, &mut 0).is_err(), "{bad}");
    }
    let t = parse_ct_tuple(
        "ct_ipv6_src=fd00::1,ct_nw_proto=58,icmp_id=3",
        &mut p,
        &mut f,
    )
    .unwrap();
    assert_eq!((p, f, t.icmp_id), (58, 6, 3));
    assert_eq!(t.src_addr(), Some("fd00::1".parse().unwrap()));
}
