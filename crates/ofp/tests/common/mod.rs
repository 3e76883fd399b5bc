//! proptest strategies for every OpenFlow 1.3 structure, shared by the
//! round-trip and text tests.
#![allow(dead_code)]

mod messages;
// Not every test crate that shares this module uses the message strategies.
#[allow(unused_imports)]
pub use messages::*;

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;

use ofp::action::{
    Action, BdAlgorithm, Bundle, Controller, ControllerForm, HashFields, LoadForm, MpAlgorithm,
    Multipath, OutputReg, OutputRegForm, RegLoad, RegMove, Resubmit, Sample, SampleDirection,
    SampleForm, Subfield, NX_CTLR_NO_METER, OFPCML_NO_BUFFER,
};
use ofp::instruction::Instruction;
use ofp::msg::flow::{
    FlowMod, FlowModCommand, FlowRemoved, FlowRemovedReason, PacketIn, PacketInReason, PacketOut,
};
use ofp::msg::group::{
    Bucket, GroupMod, GroupModCommand, GroupType, BUCKET_ALL, BUCKET_FIRST, BUCKET_LAST, BUCKET_MAX,
};
use ofp::msg::meter::{MeterBand, MeterMod, MeterModCommand};
use ofp::msg::multipart::*;
use ofp::msg::selection::{self, HashField, Method, SelectionMethod};
use ofp::msg::simple::*;
use ofp::msg::table_features::{prop_type, OxmId, TableFeatureProp, TableFeatures, TypeId};
use ofp::msg::Message;
use ofp::oxm::{Match, MatchEntry, OtherOxm, Oxm, OxmField, ValueKind};
use ofp::port::{port_no, PortDesc};
use ofp::wire::FixedStr;
use ofp::ErrorCode;

pub fn bytes_any(max: usize) -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

/// Bytes whose length is a multiple of 8 (payloads that end at padding).
pub fn bytes8(max_words: usize) -> impl Strategy<Value = Bytes> {
    (0..max_words).prop_flat_map(|n| vec(any::<u8>(), n * 8).prop_map(Bytes::from))
}

/// Any known field: the 40 basic ones and the Nicira tunnel addresses.
pub fn field() -> impl Strategy<Value = OxmField> {
    prop_oneof![8 => 0u8..40, 1 => 128u8..132].prop_map(OxmField::from)
}

/// Fields a reg_load or reg_move may write.
pub fn loadable_field() -> impl Strategy<Value = OxmField> {
    field().prop_filter("writable", |f| {
        *f == OxmField::Metadata || f.info().is_some_and(|i| i.settable)
    })
}

/// A valid reg_load: bits inside the field, a value that fits. `max_bits`
/// caps n_bits (64: one NXAST_REG_LOAD).
pub fn reg_load(forms: &'static [LoadForm], max_bits: u16) -> impl Strategy<Value = RegLoad> {
    (
        loadable_field(),
        any::<u16>(),
        any::<u16>(),
        any::<u128>(),
        proptest::sample::select(forms),
    )
        .prop_map(move |(dst, a, b, v, form)| {
            let bits = dst.subfield_bits();
            let n_bits = 1 + a % bits.min(max_bits);
            let ofs = b % (bits - n_bits + 1);
            let value = if n_bits >= 128 {
                v
            } else {
                v & ((1u128 << n_bits) - 1)
            };
            RegLoad {
                dst,
                ofs,
                n_bits,
                value,
                form,
            }
        })
}

/// A valid reg_move.
pub fn reg_move() -> impl Strategy<Value = RegMove> {
    (
        field(),
        loadable_field(),
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
    )
        .prop_map(|(src, dst, a, b, c)| {
            let (sb, db) = (src.subfield_bits(), dst.subfield_bits());
            let n_bits = 1 + a % sb.min(db);
            RegMove {
                src,
                src_ofs: b % (sb - n_bits + 1),
                dst,
                dst_ofs: c % (db - n_bits + 1),
                n_bits,
            }
        })
}

/// A basic OXM whose value fits the field and whose mask (only on maskable
/// fields) is neither absent-equivalent (all ones) nor outside the field.
pub fn oxm() -> impl Strategy<Value = Oxm> {
    (field(), any::<u128>(), any::<u128>(), any::<bool>()).prop_map(|(f, v, m, use_mask)| {
        let info = f.info().unwrap();
        let full = f.full_mask();
        let mask = (use_mask && info.maskable)
            .then_some(m & full)
            .filter(|&m| m != f.width_mask());
        let mut value = match mask {
            Some(m) => v & m,
            None => v & full,
        };
        // Bias the fields that give other fields their meaning towards the
        // values that matter (IP, ARP, TCP, ...), so context rules get exercised.
        let pick = (v >> 100) as usize;
        match f {
            OxmField::EthType if !pick.is_multiple_of(4) => {
                value = [0x0800, 0x86dd, 0x0806, 0x8035, 0x8847, 0x8848, 0x88e7][pick % 7];
            }
            OxmField::IpProto if !pick.is_multiple_of(4) => value = [1, 6, 17, 58, 132][pick % 5],
            OxmField::VlanVid if mask.is_none() && pick.is_multiple_of(2) => value |= 0x1000,
            _ => {}
        }
        Oxm {
            field: f,
            value,
            mask,
        }
    })
}

pub fn other_oxm() -> impl Strategy<Value = OtherOxm> {
    (
        0u8..128,
        any::<bool>(),
        any::<u32>(),
        vec(any::<u8>(), 0..12),
    )
        .prop_map(|(field, has_mask, exp, rest)| {
            let mut body = exp.to_be_bytes().to_vec();
            body.extend(rest);
            OtherOxm {
                class: 0xffff,
                field,
                has_mask,
                body: Bytes::from(body),
            }
        })
}

pub fn match_entry() -> impl Strategy<Value = MatchEntry> {
    prop_oneof![4 => oxm().prop_map(MatchEntry::Basic), 1 => other_oxm().prop_map(MatchEntry::Other)]
}

pub fn wire_match() -> impl Strategy<Value = Match> {
    vec(match_entry(), 0..8).prop_map(|entries| Match { entries })
}

/// A match as the text syntax writes it: basic fields, each once, in OXM order.
pub fn canonical_match() -> impl Strategy<Value = Match> {
    vec(oxm(), 0..8).prop_map(|v| {
        let mut by: std::collections::BTreeMap<u8, Oxm> = Default::default();
        for o in v {
            by.insert(o.field.value(), o);
        }
        Match {
            entries: by.into_values().map(MatchEntry::Basic).collect(),
        }
    })
}

pub fn port() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..64,
        Just(port_no::CONTROLLER),
        Just(port_no::IN_PORT),
        Just(port_no::FLOOD),
        any::<u32>()
    ]
}

fn action_common() -> impl Strategy<Value = Action> {
    prop_oneof![
        (port(), any::<u16>()).prop_map(|(port, max_len)| Action::Output { port, max_len }),
        Just(Action::CopyTtlOut),
        Just(Action::CopyTtlIn),
        any::<u8>().prop_map(Action::SetMplsTtl),
        Just(Action::DecMplsTtl),
        any::<u16>().prop_map(Action::PushVlan),
        Just(Action::PopVlan),
        any::<u16>().prop_map(Action::PushMpls),
        any::<u16>().prop_map(Action::PopMpls),
        any::<u32>().prop_map(Action::SetQueue),
        any::<u32>().prop_map(Action::Group),
        any::<u8>().prop_map(Action::SetNwTtl),
        Just(Action::DecNwTtl),
        any::<u16>().prop_map(Action::PushPbb),
        Just(Action::PopPbb),
    ]
}

/// A resubmit (its port one Open vSwitch's 16-bit ports can name), as
/// ovs-ofctl writes it.
pub fn resubmit() -> impl Strategy<Value = Resubmit> {
    (
        prop_oneof![0u32..0xff00, 0xffff_ff00u32..=0xffff_ffff],
        any::<u8>(),
    )
        .prop_map(|(in_port, table)| Resubmit::new(in_port, table))
}

/// A subfield of a field with an NXM header: `writable` ones only if
/// asked, at most `max_bits` bits.
pub fn subfield(writable: bool, max_bits: u16) -> impl Strategy<Value = Subfield> {
    let f = if writable {
        loadable_field().boxed()
    } else {
        field().boxed()
    };
    (
        f.prop_filter("NXM header", |f| f.nxm_header().is_some()),
        any::<u16>(),
        any::<u16>(),
    )
        .prop_map(move |(field, a, b)| {
            let bits = field.subfield_bits();
            let n_bits = 1 + a % bits.min(max_bits);
            Subfield {
                field,
                ofs: b % (bits - n_bits + 1),
                n_bits,
            }
        })
}

fn fitting_port() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..0xff00, 0xffff_ff00u32..=0xffff_ffff]
}

/// [`action_common`] as text writes it: max_len is CONTROLLER's alone,
/// as in ovs-ofctl's.
fn canonical_common() -> impl Strategy<Value = Action> {
    action_common().prop_map(|a| match a {
        Action::Output { port, .. } if port != port_no::CONTROLLER => {
            Action::Output { port, max_len: 0 }
        }
        a => a,
    })
}

/// A Nicira action of `ofp::nicira` as the text syntax prints it (the
/// form the text gives; valid as decoding checks it).
pub fn canonical_nicira_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        vec(any::<u8>(), 0..3).prop_map(|w| {
            let mut b = w.repeat(5);
            b.resize(b.len() / 8 * 8 + 6, 7);
            Action::Note(Bytes::from(b))
        }),
        Just(Action::Exit),
        Just(Action::PopQueue),
        (
            prop_oneof![0u32..0xff00, Just(port_no::LOCAL), Just(port_no::IN_PORT)],
            14u32..
        )
            .prop_map(|(port, max_len)| Action::OutputTrunc { port, max_len }),
        subfield(false, 64).prop_map(|src| Action::OutputReg(OutputReg {
            src,
            max_len: OFPCML_NO_BUFFER,
            form: OutputRegForm::OutputReg,
        })),
        vec(any::<u16>(), 1..5).prop_map(Action::DecTtlIds),
        subfield(false, 128).prop_map(Action::StackPush),
        subfield(true, 128).prop_map(Action::StackPop),
        vec(canonical_common(), 0..3).prop_map(Action::Clone),
        (
            1u16..,
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            prop_oneof![Just(port_no::ANY), fitting_port()],
            0u8..3
        )
            .prop_map(|(probability, c, d, o, sampling_port, dir)| {
                let mut s = Sample {
                    probability,
                    collector_set_id: c,
                    obs_domain_id: d,
                    obs_point_id: o,
                    sampling_port,
                    direction: [
                        SampleDirection::Default,
                        SampleDirection::Ingress,
                        SampleDirection::Egress,
                    ][dir as usize],
                    form: SampleForm::Sample,
                };
                s.form = s.least_form();
                Action::Sample(s)
            }),
        (
            any::<u16>(),
            any::<u16>(),
            0u8..6,
            bytes_any(12),
            any::<bool>(),
            prop_oneof![Just(NX_CTLR_NO_METER), any::<u32>()]
        )
            .prop_map(|(max_len, id, reason, userdata, pause, meter_id)| {
                let mut c = Controller {
                    max_len,
                    id,
                    reason,
                    userdata,
                    pause,
                    meter_id,
                    form: ControllerForm::Controller,
                };
                if c.needs_controller2() {
                    c.form = ControllerForm::Controller2;
                }
                c
            })
            .prop_filter("not an output to CONTROLLER", |c| {
                c.reason != 1 || c.id != 0 || c.needs_controller2()
            })
            .prop_map(|c| Action::Controller(Box::new(c))),
        (
            0usize..7,
            any::<u16>(),
            0usize..4,
            any::<u16>(),
            any::<u32>(),
            subfield(true, 64)
        )
            .prop_filter_map(
                "destination wide enough",
                |(f, basis, a, max_link, arg, dst)| {
                    let m = Multipath {
                        fields: HashFields::ALL[f],
                        basis,
                        algorithm: [
                            MpAlgorithm::ModuloN,
                            MpAlgorithm::HashThreshold,
                            MpAlgorithm::Hrw,
                            MpAlgorithm::IterHash,
                        ][a],
                        max_link,
                        arg,
                        dst,
                    };
                    m.check().is_ok().then_some(Action::Multipath(m))
                }
            ),
        (
            0usize..7,
            any::<u16>(),
            any::<bool>(),
            vec(fitting_port(), 0..4),
            proptest::option::of(subfield(true, 64))
        )
            .prop_filter_map("a valid bundle", |(f, basis, hrw, members, dst)| {
                let b = Bundle {
                    fields: HashFields::ALL[f],
                    basis,
                    algorithm: if hrw {
                        BdAlgorithm::Hrw
                    } else {
                        BdAlgorithm::ActiveBackup
                    },
                    members,
                    dst,
                };
                b.check().is_ok().then_some(Action::Bundle(Box::new(b)))
            }),
    ]
}

/// `ct(...)` as the text prints it and Open vSwitch takes it: commit
/// (and force), a table, an immediate or register zone, an alg, a first
/// `nat` with an IPv4 or IPv6 range, a write of ct_mark or ct_label.
pub fn ct_action() -> impl Strategy<Value = Action> {
    use ofp::ct::*;
    let nat = (
        0u16..4,
        prop_oneof![
            Just(NatRange::None),
            (1u32..u32::MAX, any::<bool>()).prop_map(|(min, r)| NatRange::V4 {
                min,
                max: if r { min.saturating_add(7) } else { 0 },
            }),
            (1u128..u128::MAX, any::<bool>()).prop_map(|(min, r)| NatRange::V6 {
                min,
                max: if r { min.saturating_add(1) } else { 0 },
            }),
        ],
        (0u16..1000, 0u16..3),
    )
        .prop_map(|(f, range, (pmin, pspan))| {
            let flags = [
                NX_NAT_F_SRC,
                NX_NAT_F_DST | NX_NAT_F_PERSISTENT,
                NX_NAT_F_SRC | NX_NAT_F_PROTO_HASH,
                NX_NAT_F_DST | NX_NAT_F_PROTO_RANDOM,
            ][f as usize];
            let ports = range != NatRange::None && pmin != 0;
            // ovs-ofctl prints persistent, hash and random only with a
            // range (format_NAT): without one they do not round-trip.
            let flags = if range == NatRange::None {
                flags & (NX_NAT_F_SRC | NX_NAT_F_DST)
            } else {
                flags
            };
            Nat {
                flags,
                range,
                proto_min: if ports { pmin } else { 0 },
                proto_max: if ports && pspan > 0 { pmin + pspan } else { 0 },
            }
        });
    (
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(NX_CT_RECIRC_NONE), 0u8..255],
        ),
        prop_oneof![
            any::<u16>().prop_map(CtZone::Imm),
            (0u8..16).prop_map(|r| CtZone::Field(Subfield {
                field: OxmField::Reg(r),
                ofs: 16 * (r as u16 % 2),
                n_bits: 16
            })),
        ],
        prop_oneof![Just(0u16), Just(ALG_FTP), Just(ALG_TFTP)],
        proptest::option::of(nat),
        proptest::option::of((any::<bool>(), any::<u32>())),
    )
        .prop_map(|((commit, force, recirc_table), zone, alg, nat, write)| {
            let mut c = Ct::new();
            c.flags = if commit {
                NX_CT_F_COMMIT | if force { NX_CT_F_FORCE } else { 0 }
            } else {
                0
            };
            c.recirc_table = recirc_table;
            c.zone = zone;
            c.alg = alg;
            if let Some(n) = nat {
                c.actions.push(Action::Nat(Box::new(if commit {
                    n
                } else {
                    Nat {
                        flags: 0,
                        range: NatRange::None,
                        proto_min: 0,
                        proto_max: 0,
                    }
                })));
            }
            if let (true, Some((label, v))) = (commit, write) {
                let field = if label {
                    OxmField::CtLabel
                } else {
                    OxmField::CtMark
                };
                c.actions
                    .push(Action::SetField(MatchEntry::Basic(Oxm::exact(
                        field, v as u128,
                    ))));
            }
            Action::Ct(Box::new(c))
        })
}

/// Any action, as the wire carries it.
pub fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => action_common(),
        2 => match_entry().prop_map(Action::SetField),
        1 => (any::<u32>(), bytes8(3)).prop_map(|(experimenter, data)| Action::Experimenter { experimenter, data }),
        1 => reg_load(&[LoadForm::RegLoad, LoadForm::RegLoad2], 64).prop_map(Action::RegLoad),
        1 => reg_load(&[LoadForm::RegLoad2], 128).prop_map(Action::RegLoad),
        1 => reg_move().prop_map(Action::RegMove),
        1 => resubmit().prop_map(Action::Resubmit),
        2 => canonical_nicira_action(),
        1 => ct_action(),
        1 => Just(Action::CtClear),
    ]
}

/// An action in the form the text syntax prints.
pub fn canonical_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => canonical_common(),
        2 => oxm().prop_map(|mut o| {
            // A masked set_field is text for a reg_load: not canonical.
            if o.mask.is_some() {
                o.value &= o.field.full_mask();
                o.mask = None;
            }
            if o.field == OxmField::VlanVid {
                o.value |= 0x1000;
            }
            Action::SetField(MatchEntry::Basic(o))
        }),
        1 => (any::<u32>(), bytes_any(12)).prop_map(|(experimenter, data)| Action::Experimenter { experimenter, data }),
        1 => reg_load(&[LoadForm::RegLoad], 64).prop_map(Action::RegLoad),
        1 => reg_move().prop_map(Action::RegMove),
        // Text names a resubmit's port or its table, or both.
        1 => resubmit()
            .prop_filter("port or table", |r| r.in_port != ofp::port::port_no::IN_PORT
                || r.table != Resubmit::CURRENT_TABLE)
            .prop_map(Action::Resubmit),
        2 => canonical_nicira_action(),
        1 => ct_action(),
        1 => Just(Action::CtClear),
    ]
}

pub fn instruction() -> impl Strategy<Value = Instruction> {
    prop_oneof![
        any::<u8>().prop_map(Instruction::GotoTable),
        (any::<u64>(), any::<u64>())
            .prop_map(|(metadata, mask)| Instruction::WriteMetadata { metadata, mask }),
        vec(action(), 0..4).prop_map(Instruction::WriteActions),
        vec(action(), 0..4).prop_map(Instruction::ApplyActions),
        Just(Instruction::ClearActions),
        any::<u32>().prop_map(Instruction::Meter),
        (any::<u32>(), bytes8(2))
            .prop_map(|(experimenter, data)| Instruction::Experimenter { experimenter, data }),
    ]
}

/// Instructions in the text syntax's canonical order, each at most once.
pub fn canonical_instructions() -> impl Strategy<Value = Vec<Instruction>> {
    (
        proptest::option::of(any::<u32>()),
        vec(canonical_action(), 0..4),
        any::<bool>(),
        proptest::option::of(vec(canonical_action(), 0..3)),
        proptest::option::of((any::<u64>(), any::<u64>())),
        proptest::option::of(any::<u8>()),
    )
        .prop_map(|(meter, apply, clear, write, md, goto)| {
            let mut v = Vec::new();
            v.extend(meter.map(Instruction::Meter));
            if !apply.is_empty() {
                v.push(Instruction::ApplyActions(apply));
            }
            if clear {
                v.push(Instruction::ClearActions);
            }
            v.extend(write.map(Instruction::WriteActions));
            v.extend(md.map(|(metadata, mask)| Instruction::WriteMetadata { metadata, mask }));
            v.extend(goto.map(Instruction::GotoTable));
            v
        })
}

pub const _NO_BUFFER_LEN: u16 = OFPCML_NO_BUFFER;
