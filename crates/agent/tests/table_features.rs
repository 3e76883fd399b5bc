//! TABLE_FEATURES requests that set the tables' features, and the table
//! names they carry: what Open vSwitch 3.1 accepts is accepted and changes
//! the names only; what it refuses is refused with its error, and nothing
//! changes. The cases were checked against a running Open vSwitch 3.1
//! (the same requests, built from its own reply). The last test drives
//! the agent with ovs-ofctl itself (`mod-table ... name:`, which sends the
//! switch's features back with one name changed).
//!
//! Needs `ovs-ofctl` (scripts/setup.sh installs it): without it the last
//! test fails, it does not skip.

use std::collections::BTreeMap;

use agent::{Agent, ConnId};
use bytes::Bytes;
use ofp::error::{
    BadInstructionCode, BadMatchCode, BadRequestCode, ErrorCode, TableFeaturesFailedCode,
    NXBRC_UNENCODABLE_ERROR, NXTFFC_DUP_TABLE, OFPBPC_BAD_EXPERIMENTER, OFPBPC_BAD_EXP_TYPE,
    OFPBRC_MULTIPART_REQUEST_TIMEOUT,
};
use ofp::msg::multipart::{
    MultipartReplyBody as R, MultipartRequest, MultipartRequestBody as Q, MPF_MORE,
};
use ofp::msg::simple::{ControllerRole, Hello, Role};
use ofp::msg::table_features::{prop_type as pt, OxmId, TableFeatureProp as P, TableFeatures};
use ofp::wire::FixedStr;
use ofp::Message;
use pipeline::Pipeline;

mod common;
use common::replies;

/// The datapath: the shared one that keeps the snapshots published.
type Dp = common::Holding;

const EPERM: ErrorCode = ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::Eperm);

fn agent(n_tables: u8) -> Agent<Dp> {
    let mut a = Agent::new(
        1,
        Pipeline::new(pipeline::Config {
            n_tables,
            ..pipeline::Config::default()
        }),
        Dp::default(),
        "br0",
    );
    a.handle_timeout(0);
    a
}

fn open(a: &mut Agent<Dp>) -> ConnId {
    let id = a.connect(0);
    replies(a, id);
    assert!(a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), 0));
    id
}

/// Every table's features as the agent reports them.
fn own(a: &mut Agent<Dp>, id: ConnId) -> Vec<TableFeatures> {
    let q = Message::MultipartRequest(MultipartRequest::new(Q::TableFeatures(vec![])));
    assert!(a.handle_input(id, &q.to_bytes(2), 0));
    let mut v = Vec::new();
    for (_, m) in replies(a, id) {
        match m {
            Message::MultipartReply(r) => match r.body {
                R::TableFeatures(t) => v.extend(t),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }
    v
}

fn names(a: &mut Agent<Dp>, id: ConnId) -> BTreeMap<u8, String> {
    own(a, id)
        .into_iter()
        .filter(|t| !t.name.as_str().is_empty())
        .map(|t| (t.table_id, t.name.as_str().into_owned()))
        .collect()
}

/// The bytes of a request that sets `tables`, in messages of at most
/// ~60 kB (REQ_MORE on all but the last), as ovs-ofctl splits one.
fn request_bytes(tables: &[TableFeatures], xid: u32) -> Vec<Vec<u8>> {
    let mut parts: Vec<Vec<TableFeatures>> = vec![vec![]];
    let mut len = 0;
    for t in tables {
        let l = Message::MultipartRequest(MultipartRequest::new(Q::TableFeatures(vec![t.clone()])))
            .to_bytes(0)
            .len();
        if len + l > 60_000 {
            parts.push(vec![]);
            len = 0;
        }
        len += l;
        parts.last_mut().unwrap().push(t.clone());
    }
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            Message::MultipartRequest(MultipartRequest {
                flags: if i + 1 < n { MPF_MORE } else { 0 },
                body: Q::TableFeatures(p),
            })
            .to_bytes(xid)
        })
        .collect()
}

/// Sends a request that sets `tables`: Ok (the reply's table count) or
/// the one error, with the xid and the first bytes of the part it names.
fn set(
    a: &mut Agent<Dp>,
    id: ConnId,
    tables: &[TableFeatures],
) -> Result<usize, (ErrorCode, Bytes)> {
    let parts = request_bytes(tables, 77);
    for p in &parts {
        assert!(a.handle_input(id, p, 0), "connection stays up");
    }
    let r = replies(a, id);
    match &r[..] {
        [(77, Message::Error(e))] => Err((e.code, e.data.clone())),
        _ => Ok(r
            .iter()
            .map(|(x, m)| {
                assert_eq!(*x, 77);
                match m {
                    Message::MultipartReply(ofp::msg::multipart::MultipartReply {
                        body: R::TableFeatures(t),
                        ..
                    }) => t.len(),
                    other => panic!("{other:?}"),
                }
            })
            .sum()),
    }
}

fn prop_mut(t: &mut TableFeatures, ty: u16) -> &mut P {
    t.properties
        .iter_mut()
        .find(|p| match p {
            P::Instructions { ty: x, .. }
            | P::NextTables { ty: x, .. }
            | P::Actions { ty: x, .. }
            | P::Oxms { ty: x, .. }
            | P::Experimenter { ty: x, .. } => *x == ty,
        })
        .unwrap()
}

fn first_oxm(t: &mut TableFeatures, ty: u16) -> &mut OxmId {
    match prop_mut(t, ty) {
        P::Oxms { ids, .. } => &mut ids[0],
        _ => unreachable!(),
    }
}

#[test]
fn tables_have_no_names_until_given_and_the_configuration_names_them() {
    let mut a = agent(254);
    let id = open(&mut a);
    let tables = own(&mut a, id);
    assert_eq!(tables.len(), 254);
    assert!(tables.iter().all(|t| t.name.as_str().is_empty()));
    a.set_table_names(&BTreeMap::from([
        (0, "Classifier".into()),
        (10, "Out".into()),
    ]));
    assert_eq!(
        names(&mut a, id),
        BTreeMap::from([(0, "Classifier".into()), (10, "Out".into())])
    );
}

#[test]
fn a_request_with_every_table_renames_them_at_once() {
    let mut a = agent(254);
    let id = open(&mut a);
    let mut t = own(&mut a, id);
    t[2].name = FixedStr::new("Two");
    t[7].name = FixedStr::new("l2_lookup");
    // The features, in several messages as they take: accepted, and
    // the reply is every table's features.
    assert!(request_bytes(&t, 1).len() > 1);
    assert_eq!(set(&mut a, id, &t), Ok(254));
    assert_eq!(
        names(&mut a, id),
        BTreeMap::from([(2, "Two".into()), (7, "l2_lookup".into())])
    );
    // An empty name takes one away; a name of 32 bytes keeps 31.
    t[2].name = FixedStr::default();
    t[7].name = FixedStr([b'x'; 32]);
    assert_eq!(set(&mut a, id, &t), Ok(254));
    assert_eq!(names(&mut a, id), BTreeMap::from([(7, "x".repeat(31))]));
    // Asking for fewer features than a table has is fine (a switch may
    // offer more than asked): table 0 with one action, no set-field.
    let mut t = own(&mut a, id);
    for ty in [pt::APPLY_ACTIONS, pt::WRITE_ACTIONS] {
        if let P::Actions { ids, .. } = prop_mut(&mut t[0], ty) {
            ids.truncate(1);
        }
    }
    if let P::Oxms { ids, .. } = prop_mut(&mut t[0], pt::APPLY_SETFIELD) {
        ids.clear();
    }
    assert_eq!(set(&mut a, id, &t), Ok(254));
}

/// Each refusal Open vSwitch 3.1 gives, and nothing changed by it: the
/// other table renamed in the same request keeps its name.
#[test]
fn what_open_vswitch_refuses_is_refused_whole() {
    let mut a = agent(254);
    let id = open(&mut a);
    let base = own(&mut a, id);
    type Edit = fn(&mut Vec<TableFeatures>);
    let cases: Vec<(&str, Edit, ErrorCode)> = vec![
        (
            "one table fewer",
            |t| {
                t.pop();
            },
            EPERM,
        ),
        (
            "a table left out",
            |t| {
                t.remove(3);
            },
            EPERM,
        ),
        (
            "table 254 (Open vSwitch's hidden table)",
            |t| {
                let mut x = t[253].clone();
                x.table_id = 254;
                t.push(x);
            },
            EPERM,
        ),
        (
            "table 255",
            |t| t[5].table_id = 255,
            ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadTable),
        ),
        ("max_entries changed", |t| t[4].max_entries -= 1, EPERM),
        (
            "a next table backwards",
            |t| {
                if let P::NextTables { tables, .. } = prop_mut(&mut t[5], pt::NEXT_TABLES) {
                    tables.insert(0, 0);
                }
            },
            EPERM,
        ),
        (
            "next table 255",
            |t| {
                if let P::NextTables { tables, .. } = prop_mut(&mut t[0], pt::NEXT_TABLES) {
                    tables.push(255);
                }
            },
            ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadArgument),
        ),
        (
            "no WILDCARDS",
            |t| {
                t[0].properties.retain(|p| {
                    !matches!(
                        p,
                        P::Oxms {
                            ty: pt::WILDCARDS,
                            ..
                        }
                    )
                });
            },
            NXBRC_UNENCODABLE_ERROR,
        ),
        (
            "INSTRUCTIONS twice",
            |t| {
                let p = t[0].properties[0].clone();
                t[0].properties.push(p);
            },
            NXBRC_UNENCODABLE_ERROR,
        ),
        (
            "no properties",
            |t| t[0].properties.clear(),
            NXBRC_UNENCODABLE_ERROR,
        ),
        (
            "an EXPERIMENTER property",
            |t| {
                t[0].properties.push(P::Experimenter {
                    ty: pt::EXPERIMENTER,
                    experimenter: 0x2320,
                    exp_type: 99,
                    data: Bytes::new(),
                });
            },
            ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadType),
        ),
        (
            "an EXPERIMENTER_MISS property",
            |t| {
                t[0].properties.push(P::Experimenter {
                    ty: pt::EXPERIMENTER_MISS,
                    experimenter: 0x2320,
                    exp_type: 99,
                    data: Bytes::new(),
                });
            },
            OFPBPC_BAD_EXP_TYPE,
        ),
        (
            "an EXPERIMENTER_MISS property of experimenter 0",
            |t| {
                t[0].properties.push(P::Experimenter {
                    ty: pt::EXPERIMENTER_MISS,
                    experimenter: 0,
                    exp_type: 99,
                    data: Bytes::new(),
                });
            },
            OFPBPC_BAD_EXPERIMENTER,
        ),
        (
            "instruction 7",
            |t| {
                if let P::Instructions { ids, .. } = prop_mut(&mut t[0], pt::INSTRUCTIONS) {
                    ids.push(ofp::msg::table_features::TypeId {
                        ty: 7,
                        data: Bytes::new(),
                    });
                }
            },
            ErrorCode::BadInstruction(BadInstructionCode::UnknownInst),
        ),
        (
            "a masked wildcard",
            |t| {
                let o = first_oxm(&mut t[0], pt::WILDCARDS);
                o.header = (o.header | 0x100) & !0xff | (2 * (o.header & 0xff));
            },
            ErrorCode::BadMatch(BadMatchCode::BadMask),
        ),
        (
            "a wildcard with hasmask and the exact length",
            |t| {
                first_oxm(&mut t[0], pt::WILDCARDS).header |= 0x100;
            },
            ErrorCode::BadMatch(BadMatchCode::BadField),
        ),
        (
            "a field with another length",
            |t| {
                first_oxm(&mut t[0], pt::MATCH).header += 1;
            },
            ErrorCode::BadMatch(BadMatchCode::BadField),
        ),
        (
            "an unknown field",
            |t| {
                first_oxm(&mut t[0], pt::MATCH).header = 0x8000_7f04;
            },
            ErrorCode::BadMatch(BadMatchCode::BadField),
        ),
        (
            "a masked match on a field sluice matches exactly",
            |t| {
                let o = first_oxm(&mut t[0], pt::MATCH);
                o.header = (o.header | 0x100) & !0xff | (2 * (o.header & 0xff));
            },
            EPERM,
        ),
    ];
    for (what, edit, code) in cases {
        let mut t = base.clone();
        t[1].name = FixedStr::new("Also");
        edit(&mut t);
        let got = set(&mut a, id, &t);
        assert_eq!(got.as_ref().map_err(|e| e.0), Err(code), "{what}");
        assert!(names(&mut a, id).is_empty(), "{what}: a name changed");
    }
    // A table named twice: Open vSwitch's NXTFFC_DUP_TABLE, with the part
    // that names it again.
    let mut t = base.clone();
    t.push(t[1].clone());
    let (code, data) = set(&mut a, id, &t).unwrap_err();
    assert_eq!(code, NXTFFC_DUP_TABLE);
    let parts = request_bytes(&t, 77);
    assert_eq!(&data[..], &parts.last().unwrap()[..64]);
    // Past the last table: OpenFlow 1.5's OFPTFFC_TOO_MANY, which Open
    // vSwitch sends OpenFlow 1.3 peers as NXBRC_UNENCODABLE_ERROR.
    let mut a = agent(4);
    let id = open(&mut a);
    let mut t = own(&mut a, id);
    let mut x = t[3].clone();
    x.table_id = 4;
    t.push(x);
    assert_eq!(
        set(&mut a, id, &t).map_err(|e| e.0),
        Err(NXBRC_UNENCODABLE_ERROR)
    );
}

/// A name the configuration gives stays: a request may repeat it, leave
/// it empty or give its start (Open vSwitch compares only so much), and
/// nothing changes; another name is OFPTFFC_EPERM for the whole request.
/// A reload that drops it gives OpenFlow the table back.
#[test]
fn configured_names_stay() {
    let mut a = agent(254);
    let id = open(&mut a);
    a.set_table_names(&BTreeMap::from([(3, "Config".into())]));
    let base = own(&mut a, id);
    for (name, ok) in [
        ("Other", false),
        ("", true),
        ("Con", true),
        ("Config", true),
        ("Configs", false),
    ] {
        let mut t = base.clone();
        t[3].name = FixedStr::new(name);
        t[1].name = FixedStr::new("Also");
        let got = set(&mut a, id, &t).map_err(|e| e.0);
        assert_eq!(got.is_ok(), ok, "{name}: {got:?}");
        if !ok {
            assert_eq!(got, Err(EPERM));
        }
        let want: BTreeMap<u8, String> = if ok {
            BTreeMap::from([(1, "Also".into()), (3, "Config".into())])
        } else {
            BTreeMap::from([(3, "Config".into())])
        };
        assert_eq!(names(&mut a, id), want, "{name}");
        // Back to table 1 without a name.
        let mut t = own(&mut a, id);
        t[1].name = FixedStr::default();
        set(&mut a, id, &t).unwrap();
    }
    // A controller's name on table 1; the configuration renames 3 and
    // names 1: the configuration's names win, the controller's on other
    // tables stay.
    let mut t = own(&mut a, id);
    t[1].name = FixedStr::new("Mine");
    t[2].name = FixedStr::new("Kept");
    set(&mut a, id, &t).unwrap();
    a.set_table_names(&BTreeMap::from([(1, "Cfg1".into())]));
    assert_eq!(
        names(&mut a, id),
        BTreeMap::from([(1, "Cfg1".into()), (2, "Kept".into())])
    );
    // Table 3 is OpenFlow's again.
    let mut t = own(&mut a, id);
    t[3].name = FixedStr::new("Three");
    set(&mut a, id, &t).unwrap();
    assert_eq!(a.table_name(3), "Three");
}

#[test]
fn a_slave_may_ask_but_not_set() {
    let mut a = agent(8);
    let id = open(&mut a);
    let role = Message::RoleRequest(Role {
        role: ControllerRole::Slave,
        generation_id: 1,
    });
    assert!(a.handle_input(id, &role.to_bytes(3), 0));
    replies(&mut a, id);
    let mut t = own(&mut a, id);
    t[1].name = FixedStr::new("X");
    assert_eq!(
        set(&mut a, id, &t).map_err(|e| e.0),
        Err(ErrorCode::BadRequest(BadRequestCode::IsSlave))
    );
    assert!(names(&mut a, id).is_empty());
}

/// Multipart requests in parts, as Open vSwitch gathers them: one type
/// per xid, only TABLE_FEATURES in several parts with bodies, empty parts
/// left out, and a part that does not come within a second ends it.
#[test]
fn multipart_requests_in_parts() {
    let mut a = agent(8);
    let id = open(&mut a);
    let flow = |flags: u16| {
        Message::MultipartRequest(MultipartRequest {
            flags,
            body: Q::Flow(Default::default()),
        })
    };
    let empty = |ty: u16, flags: u16, xid: u32| {
        let mut b = vec![4, 18, 0, 16];
        b.extend(xid.to_be_bytes());
        b.extend(ty.to_be_bytes());
        b.extend(flags.to_be_bytes());
        b.extend([0; 4]);
        b
    };
    // An empty FLOW part, then one with the body: one FLOW_STATS reply.
    assert!(a.handle_input(id, &empty(1, MPF_MORE, 5), 0));
    assert!(replies(&mut a, id).is_empty());
    assert!(a.handle_input(id, &flow(0).to_bytes(5), 0));
    assert!(matches!(
        &replies(&mut a, id)[..],
        [(5, Message::MultipartReply(r))] if matches!(r.body, R::Flow(_))
    ));
    // Two FLOW parts with bodies: OFPBRC_BAD_MULTIPART (BAD_STAT).
    assert!(a.handle_input(id, &flow(MPF_MORE).to_bytes(6), 0));
    assert!(a.handle_input(id, &flow(0).to_bytes(6), 0));
    let r = replies(&mut a, id);
    assert!(
        matches!(&r[..], [(6, Message::Error(e))] if e.code == ErrorCode::BadRequest(BadRequestCode::BadMultipart)),
        "{r:?}"
    );
    // Another type under the same xid: OFPBRC_BAD_MULTIPART, the part
    // dropped.
    assert!(a.handle_input(id, &flow(MPF_MORE).to_bytes(7), 0));
    assert!(a.handle_input(id, &empty(12, 0, 7), 0));
    let r = replies(&mut a, id);
    assert!(
        matches!(&r[..], [(7, Message::Error(e))] if e.code == ErrorCode::BadRequest(BadRequestCode::BadMultipart)),
        "{r:?}"
    );
    // DESC in two empty parts: answered.
    assert!(a.handle_input(id, &empty(0, MPF_MORE, 8), 0));
    assert!(a.handle_input(id, &empty(0, 0, 8), 0));
    assert!(matches!(
        &replies(&mut a, id)[..],
        [(8, Message::MultipartReply(_))]
    ));
    // A part, then nothing: the timer says when, and the request ends
    // with OFPBRC_MULTIPART_REQUEST_TIMEOUT a second after the part.
    let t = own(&mut a, id);
    let part = Message::MultipartRequest(MultipartRequest {
        flags: MPF_MORE,
        body: Q::TableFeatures(t[..2].to_vec()),
    })
    .to_bytes(9);
    assert!(a.handle_input(id, &part, 5_000_000_000));
    assert!(a.poll_timeout().unwrap() <= 6_000_000_000);
    a.handle_timeout(5_999_999_999);
    assert!(replies(&mut a, id).is_empty());
    a.handle_timeout(6_000_000_000);
    let r = replies(&mut a, id);
    assert!(
        matches!(&r[..], [(9, Message::Error(e))] if e.code == OFPBRC_MULTIPART_REQUEST_TIMEOUT && e.data[..] == part[..64]),
        "{r:?}"
    );
    // More than 4 MiB of parts: OFPBRC_MULTIPART_BUFFER_OVERFLOW.
    let many: Vec<TableFeatures> = (0..5).flat_map(|_| t.iter().cloned()).collect();
    // Unfinished requests of these xids, every part with MORE set, until
    // the switch answers something.
    let mut flood = |xids: Vec<u32>| {
        let mut got = Vec::new();
        for xid in xids {
            for p in request_bytes(&many, xid) {
                let mut p = p.clone();
                p[10..12].copy_from_slice(&MPF_MORE.to_be_bytes());
                assert!(a.handle_input(id, &p, 6_000_000_000));
            }
            got.extend(replies(&mut a, id));
            if !got.is_empty() {
                break;
            }
        }
        got
    };
    let overflow = |e: &ofp::msg::simple::ErrorMsg| {
        e.code == ErrorCode::BadRequest(BadRequestCode::MultipartBufferOverflow)
    };
    // One xid's parts, again and again.
    let got = flood(vec![10; 100]);
    assert!(
        matches!(&got[..], [(10, Message::Error(e))] if overflow(e)),
        "{got:?}"
    );
    // The 4 MiB are the connection's, however many xids share them. The
    // xid that crosses them is forgotten; its parts after that start it
    // again and may cross them again (as Open vSwitch starts a sequence
    // again after its overflow): every answer is that xid's overflow.
    let got = flood((100..200).collect());
    assert!(
        !got.is_empty()
            && got
                .iter()
                .all(|(x, m)| *x == got[0].0 && matches!(m, Message::Error(e) if overflow(e))),
        "{got:?}"
    );
}

/// ovs-ofctl 3.1 as the controller: `mod-table TABLE name:NAME` reads the
/// switch's features and sends them back with the name changed;
/// `dump-table-features` and `--names dump-flows` show the names, and
/// `add-flow` takes them. A configured name it may not change.
#[test]
fn ovs_ofctl_names_tables() {
    let dir = std::env::temp_dir().join(format!("sluice-tf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("br0.mgmt");
    let mut a = agent(254);
    a.set_table_names(&BTreeMap::from([(3, "Config".into())]));
    let run = |a: &mut Agent<Dp>, args: &[&str]| -> (bool, String, String) {
        common::ovs_ofctl(a, &sock, args)
    };
    let (ok, _, err) = run(&mut a, &["mod-table", "SW", "1", "name:Classifier"]);
    assert!(ok, "{err}");
    assert_eq!(a.table_name(1), "Classifier");
    let (ok, _, err) = run(&mut a, &["mod-table", "SW", "2", "name:Out"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&mut a, &["mod-table", "SW", "3", "name:Other"]);
    assert!(!ok && err.contains("OFPTFFC_EPERM"), "{err}");
    assert_eq!(a.table_name(3), "Config");
    let (ok, out, err) = run(&mut a, &["dump-table-features", "SW"]);
    assert!(ok, "{err}");
    for line in [
        "  table 1 (\"Classifier\"):",
        "  table 2 (\"Out\"):",
        "  table 3 (\"Config\"):",
    ] {
        assert!(out.lines().any(|l| l.starts_with(line)), "{line}: {out}");
    }
    let (ok, _, err) = run(
        &mut a,
        &[
            "add-flow",
            "SW",
            "table=Classifier,priority=5,actions=resubmit(,Config),goto_table:Out",
        ],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = run(&mut a, &["--names", "--no-stats", "dump-flows", "SW"]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "table=Classifier, priority=5 actions=resubmit(,Config),goto_table:Out"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
