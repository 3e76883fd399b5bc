//! Checks of instructions and actions that need the pipeline's state
//! (tables, groups, meters), each answering with the code the spec names.

use std::collections::HashMap;

use ofp::error::{BadActionCode, BadInstructionCode, ErrorCode, MeterModFailedCode};
use ofp::oxm::{MatchEntry, Oxm, OxmField};
use ofp::port::port_no;
use ofp::{Action, Instruction, Match, OfpError};
use packet::{flags, slots as s, FlowKey};

/// What validation needs to know about the pipeline.
pub struct Context<'a, G, M> {
    pub n_tables: u8,
    pub groups: &'a HashMap<u32, G>,
    pub meters: &'a HashMap<u32, M>,
    /// Whether OpenFlow 1.0's edits are taken whatever the match says of
    /// the packets (and do nothing to those without the header): a pop of
    /// a VLAN tag they may not have (`strip_vlan`), and the IP edits
    /// (`mod_nw_src`/`mod_nw_dst` of packets not said to be IPv4,
    /// `mod_nw_tos`/`mod_nw_ecn`/`mod_nw_ttl` of packets not said to be
    /// IP). Open vSwitch takes them from a 1.0 peer (`ofpacts_check`
    /// leaves only the 1.0 protocols usable); under 1.1 and later the
    /// match must say so. A 1.0 peer's transport port edits still need
    /// the protocol in the match (the 1.0 codec picks the field by it).
    pub of10_edits: bool,
}

fn err(code: ErrorCode, detail: &'static str) -> OfpError {
    OfpError::new(code, detail)
}

/// A port an output action may name in a flow entry or group bucket.
pub fn valid_output_port(p: u32) -> bool {
    (p != 0 && p <= port_no::MAX)
        || matches!(
            p,
            port_no::IN_PORT
                | port_no::NORMAL
                | port_no::FLOOD
                | port_no::ALL
                | port_no::CONTROLLER
                | port_no::LOCAL
        )
}

/// What validation knows of the packets an action list will meet, for
/// set_field prerequisites (OFPBAC_MATCH_INCONSISTENT).
#[derive(Debug, Clone, Copy)]
pub enum Packets<'a> {
    /// A flow entry's: what its match guarantees.
    Matching(&'a Match),
    /// One packet's (PACKET_OUT): the headers it really has.
    Packet(&'a FlowKey),
    /// A group bucket's: not known until run time. Edits the packet turns
    /// out not to support are skipped and counted by the worker.
    Unknown,
}

/// What is known of one header field along an action list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fact {
    Is(u128),
    /// The packets do not have it (or it is not matched on).
    Absent,
    /// Known only at run time.
    Unknown,
}

/// The facts set_field prerequisites need (see [`OxmField::prerequisites`]).
#[derive(Debug, Clone, Copy)]
struct Facts {
    vlan: Fact,
    eth_type: Fact,
    ip_proto: Fact,
    icmpv6_type: Fact,
}

fn is_ip(eth_type: u128) -> bool {
    matches!(eth_type, 0x0800 | 0x86dd)
}

impl Facts {
    fn new(p: Packets<'_>) -> Facts {
        match p {
            Packets::Matching(m) => {
                let exact = |f| match m.get(f) {
                    Some(o) if o.mask.is_none() => Fact::Is(o.value),
                    _ => Fact::Absent,
                };
                let vlan = m
                    .get(OxmField::VlanVid)
                    .is_some_and(|o| o.value & 0x1000 != 0);
                Facts {
                    vlan: if vlan { Fact::Is(1) } else { Fact::Absent },
                    eth_type: exact(OxmField::EthType),
                    ip_proto: exact(OxmField::IpProto),
                    icmpv6_type: exact(OxmField::Icmpv6Type),
                }
            }
            Packets::Packet(k) => {
                let has = |f: u64| k.flags() & f != 0;
                let ty = k.get(s::ETH_TYPE) as u128;
                // A header type counts only when its header is complete.
                let whole = match ty {
                    0x0800 => has(flags::IPV4),
                    0x86dd => has(flags::IPV6),
                    0x0806 | 0x8035 => has(flags::ARP),
                    0x8847 | 0x8848 => has(flags::MPLS),
                    0x88e7 => has(flags::PBB),
                    _ => true,
                };
                let fact = |known: bool, v: u64| {
                    if known {
                        Fact::Is(v as u128)
                    } else {
                        Fact::Absent
                    }
                };
                Facts {
                    vlan: fact(has(flags::VLAN), 1),
                    eth_type: fact(has(flags::ETH) && whole, ty as u64),
                    ip_proto: fact(has(flags::L4), k.get(s::IP_PROTO)),
                    icmpv6_type: fact(has(flags::ND), k.get(s::TP_SRC)),
                }
            }
            Packets::Unknown => Facts {
                vlan: Fact::Unknown,
                eth_type: Fact::Unknown,
                ip_proto: Fact::Unknown,
                icmpv6_type: Fact::Unknown,
            },
        }
    }

    /// The packets' EtherType becomes `t` (Unknown: not known): what lies
    /// under it is unknown if it is IP, absent otherwise.
    fn eth_type_is(&mut self, t: Fact) {
        self.eth_type = t;
        self.ip_proto = match t {
            Fact::Is(t) if !is_ip(t) => Fact::Absent,
            _ => Fact::Unknown,
        };
        self.icmpv6_type = self.ip_proto;
    }

    fn get(&self, f: OxmField) -> Fact {
        match f {
            OxmField::EthType => self.eth_type,
            OxmField::IpProto => self.ip_proto,
            OxmField::Icmpv6Type => self.icmpv6_type,
            _ => Fact::Unknown,
        }
    }

    /// Whether the packets have what a set_field of `f` needs.
    fn allow(&self, f: OxmField) -> bool {
        if matches!(f, OxmField::VlanVid | OxmField::VlanPcp) {
            return self.vlan != Fact::Absent;
        }
        f.prerequisites()
            .iter()
            .all(|(need, values)| match self.get(*need) {
                Fact::Is(v) => values.contains(&v),
                Fact::Absent => false,
                Fact::Unknown => true,
            })
    }

    /// After a write of an unknown value to `f` (part of a field, or a
    /// move): what was known of it is not any more.
    fn forget(&mut self, f: OxmField) {
        match f {
            OxmField::EthType => self.eth_type_is(Fact::Unknown),
            OxmField::IpProto => {
                self.ip_proto = Fact::Unknown;
                self.icmpv6_type = Fact::Unknown;
            }
            OxmField::Icmpv6Type => self.icmpv6_type = Fact::Unknown,
            _ => {}
        }
    }

    /// What a set_field of `o` tells about the packets after it.
    fn set(&mut self, o: &Oxm) {
        match o.field {
            OxmField::EthType => self.eth_type_is(Fact::Is(o.value)),
            OxmField::IpProto => {
                self.ip_proto = Fact::Is(o.value);
                self.icmpv6_type = Fact::Unknown;
            }
            OxmField::Icmpv6Type => self.icmpv6_type = Fact::Is(o.value),
            _ => {}
        }
    }
}

/// Validates an action list for the packets it will meet: arguments,
/// output ports and groups, and set_field prerequisites followed along the
/// list (a push, pop or set_field of eth_type or ip_proto changes what
/// later set_fields may touch).
pub fn actions<G, M>(
    list: &[Action],
    packets: Packets<'_>,
    cx: &Context<'_, G, M>,
) -> Result<(), OfpError> {
    let mut facts = Facts::new(packets);
    actions_with(list, packets, cx, &mut facts)
}

/// [`actions`] from what is known at this point of the list (a clone's
/// actions start from the facts where the clone is).
fn actions_with<G, M>(
    list: &[Action],
    packets: Packets<'_>,
    cx: &Context<'_, G, M>,
    facts: &mut Facts,
) -> Result<(), OfpError> {
    for a in list {
        a.validate()?;
        match a {
            // A PACKET_OUT may resubmit its packet to the tables.
            Action::Output { port, .. }
                if *port == port_no::TABLE && matches!(packets, Packets::Packet(_)) => {}
            Action::Output { port, .. } | Action::OutputTrunc { port, .. }
                if !valid_output_port(*port) =>
            {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadOutPort),
                    "invalid output port",
                ))
            }
            Action::Group(g) if !cx.groups.contains_key(g) => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadOutGroup),
                    "group does not exist",
                ))
            }
            Action::PushVlan(t) => {
                if !matches!(t, 0x8100 | 0x88a8) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::BadArgument),
                        "push_vlan ethertype",
                    ));
                }
                facts.vlan = Fact::Is(1);
            }
            // As Open vSwitch under OpenFlow 1.1+: a pop needs packets the
            // match (or a push before it) says are tagged.
            Action::PopVlan if facts.vlan == Fact::Absent && !cx.of10_edits => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                    "pop_vlan (strip_vlan): the match does not say the packets are tagged (vlan_vid=0x1000/0x1000, dl_vlan=N)",
                ))
            }
            Action::PopVlan => facts.vlan = Fact::Absent,
            Action::PushMpls(t) | Action::PopMpls(t) => {
                if matches!(a, Action::PushMpls(_)) && !matches!(t, 0x8847 | 0x8848) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::BadArgument),
                        "push_mpls ethertype",
                    ));
                }
                facts.eth_type_is(Fact::Is(*t as u128));
            }
            Action::PushPbb(t) if *t != 0x88e7 => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadArgument),
                    "push_pbb ethertype",
                ))
            }
            Action::PushPbb(t) => facts.eth_type_is(Fact::Is(*t as u128)),
            Action::PopPbb => facts.eth_type_is(Fact::Unknown),
            Action::OutputReg(o) if !facts.allow(o.src.field) => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                    "output:FIELD: the field's prerequisites are not met by the packets",
                ))
            }
            Action::StackPush(f) | Action::StackPop(f) if !facts.allow(f.field) => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                    "push/pop: the field's prerequisites are not met by the packets",
                ))
            }
            Action::StackPop(f) => facts.forget(f.field),
            Action::Clone(inner) => {
                // What the clone does stays in the clone.
                let mut copy = *facts;
                actions_with(inner, packets, cx, &mut copy)?;
            }
            Action::Controller(c)
                if c.meter_id != ofp::action::NX_CTLR_NO_METER
                    && !cx.meters.contains_key(&c.meter_id) =>
            {
                return Err(err(
                    ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter),
                    "controller(meter_id=...): meter does not exist",
                ))
            }
            Action::CheckPktLarger(c) => {
                if !facts.allow(c.dst.field) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                        "check_pkt_larger: the destination's prerequisites are not met by the packets",
                    ));
                }
                facts.forget(c.dst.field);
            }
            Action::Multipath(m) => {
                if !facts.allow(m.dst.field) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                        "multipath: the destination's prerequisites are not met by the packets",
                    ));
                }
                facts.forget(m.dst.field);
            }
            Action::Bundle(b) => {
                if let Some(d) = &b.dst {
                    if !facts.allow(d.field) {
                        return Err(err(
                            ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                            "bundle_load: the destination's prerequisites are not met by the packets",
                        ));
                    }
                    facts.forget(d.field);
                }
            }
            // A Nicira action sluice does not take (NXAST_DEC_TTL, NSH,
            // ct, ...): Open vSwitch answers an unknown or unusable
            // subtype of a known vendor OFPBAC_BAD_VENDOR_TYPE (OpenFlow
            // 1.3's BAD_EXP_TYPE), another vendor OFPBAC_BAD_VENDOR.
            // Connection tracking (`exec/ct.rs`): what the match must say,
            // with Open vSwitch's code (OFPBAC_MATCH_INCONSISTENT); a
            // group bucket's packets are known only at run time (a
            // packet that is not IP is then +trk+inv). Application-layer
            // helpers are not built: `alg=` is refused.
            Action::Ct(c) => {
                match packets {
                    Packets::Matching(m) => c.check_packets(&ofp::ct::CtPackets::of_match(m))?,
                    Packets::Packet(k) => c.check_packets(&ofp::ct::CtPackets {
                        eth_type: Some(k.get(packet::slots::ETH_TYPE) as u16),
                        ip_proto: Some(k.get(packet::slots::IP_PROTO) as u8),
                        ct_state: k.get(packet::slots::CT_STATE) as u32,
                    })?,
                    Packets::Unknown => {}
                }
                if c.alg != 0 {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::BadArgument),
                        "ct(alg=...): application-layer helpers (FTP, TFTP) are not built in sluice",
                    ));
                }
            }
            Action::CtClear => {}
            // Only inside ct (`Action::validate` refuses it elsewhere).
            Action::Nat(_) => {}
            Action::Experimenter { experimenter, .. }
                if *experimenter == ofp::action::NX_VENDOR_ID =>
            {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadExpType),
                    "a Nicira action sluice does not take",
                ))
            }
            Action::Experimenter { .. } => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadExperimenter),
                    "no experimenter actions known",
                ))
            }
            Action::RegLoad(l) => {
                if !facts.allow(l.dst) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                        "load: the destination's prerequisites are not met by the packets",
                    ));
                }
                let o = l.masked();
                if o.mask == Some(o.field.full_mask()) {
                    facts.set(&Oxm::exact(o.field, o.value));
                } else {
                    facts.forget(o.field);
                }
            }
            Action::RegMove(m) => {
                if !facts.allow(m.src) || !facts.allow(m.dst) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                        "move: a field's prerequisites are not met by the packets",
                    ));
                }
                facts.forget(m.dst);
            }
            // A 1.0 peer's IP edit, whatever the match (`of10_edits`).
            Action::SetField(MatchEntry::Basic(o))
                if cx.of10_edits
                    && matches!(
                        o.field,
                        OxmField::Ipv4Src
                            | OxmField::Ipv4Dst
                            | OxmField::IpDscp
                            | OxmField::IpEcn
                            | OxmField::NwTtl
                    )
                    && !facts.allow(o.field) => {}
            Action::SetField(MatchEntry::Basic(o)) => {
                if !facts.allow(o.field) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                        if matches!(o.field, OxmField::VlanVid | OxmField::VlanPcp) {
                            "set_field of a VLAN field on packets without a VLAN tag"
                        } else {
                            "set_field prerequisites not met by the packets"
                        },
                    ));
                }
                facts.set(o);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Validates a flow entry's instructions for table `table_id`.
pub fn instructions<G, M>(
    table_id: u8,
    list: &[Instruction],
    match_: &Match,
    cx: &Context<'_, G, M>,
) -> Result<(), OfpError> {
    let mut seen = 0u32;
    for i in list {
        let bit = 1u32 << (i.instruction_type().value() & 15);
        if seen & bit != 0 {
            return Err(err(
                ErrorCode::BadInstruction(BadInstructionCode::UnsupInst),
                "instruction given twice",
            ));
        }
        seen |= bit;
        match i {
            Instruction::GotoTable(t) if *t <= table_id || *t >= cx.n_tables => {
                return Err(err(
                    ErrorCode::BadInstruction(BadInstructionCode::BadTableId),
                    "goto_table must go forward to an existing table",
                ))
            }
            Instruction::Meter(m) if !cx.meters.contains_key(m) => {
                return Err(err(
                    ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter),
                    "meter does not exist",
                ))
            }
            Instruction::WriteActions(a) if !a.iter().all(Action::allowed_in_set) => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadType),
                    "action not allowed in an action set (write_actions)",
                ))
            }
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => {
                actions(a, Packets::Matching(match_), cx)?
            }
            Instruction::Experimenter { .. } => {
                return Err(err(
                    ErrorCode::BadInstruction(BadInstructionCode::BadExperimenter),
                    "no experimenter instructions known",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}
