//! What the fast path can do with a rule: its instructions reduced to a
//! [`Plan`] (drop, or some edits of Ethernet and IPv4 addresses and
//! TCP/UDP ports, and one output), or the reason the packets it matches
//! must go up to the user-space pipeline.
//!
//! The reduction follows the pipeline's semantics (`pipeline::exec`)
//! exactly for what it accepts: apply-actions run in order, then the
//! action set (set_field before output, a later write of a field replacing
//! the earlier one). Anything outside that subset is [`Up`], never an
//! approximation: a punted packet is processed by the reference itself.

use std::fmt;

use ofp::oxm::{MatchEntry, OxmField};
use ofp::port::port_no;
use ofp::{Action, Instruction};
use pipeline::Rule;

/// An edit the fast path makes in place (one per OXM field: a later
/// write of the same field in an action set replaces it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edit {
    EthDst(u64),
    EthSrc(u64),
    /// The IPv4 source/destination, with the header checksum and the
    /// TCP/UDP checksum's pseudo-header updated.
    Ipv4Src(u32),
    Ipv4Dst(u32),
    /// A transport port, with the transport checksum updated.
    TcpSrc(u16),
    TcpDst(u16),
    UdpSrc(u16),
    UdpDst(u16),
    /// A new outer VLAN tag with this TPID (TCI copied from the outer
    /// tag, or 0), and the outer tag taken off (see [`checks`]).
    PushVlan(u16),
    PopVlan,
    /// The outer tag's VID (12 bits) and PCP (3 bits).
    VlanVid(u16),
    VlanPcp(u8),
}

/// What a packet must have for the program to make a plan's edits as the
/// pipeline does (`pipeline::edit` skips a field the packet lacks); a
/// packet without it goes up before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Every flag of `flags` in the flow key, and the IP protocol `proto`.
    Key {
        flags: u64,
        proto: Option<u8>,
        header: &'static str,
    },
    /// At least this many bytes (a pop that would leave a frame shorter
    /// than Ethernet's minimum, which the pipeline pads, goes up).
    Len(u32),
}

/// The checks `edits` need, in order.
pub fn checks(edits: &[Edit]) -> Vec<Check> {
    let mut out = Vec::new();
    let mut pushed = false;
    for e in edits {
        match e {
            Edit::PushVlan(_) => pushed = true,
            Edit::PopVlan => {
                out.push(Check::Key {
                    flags: packet::flags::VLAN,
                    proto: None,
                    header: "VLAN",
                });
                out.push(Check::Len(4 + pipeline::edit::MIN_FRAME as u32));
            }
            Edit::VlanVid(_) | Edit::VlanPcp(_) if !pushed => out.push(Check::Key {
                flags: packet::flags::VLAN,
                proto: None,
                header: "VLAN",
            }),
            _ => {
                if let Some((flags, proto)) = e.needs() {
                    out.push(Check::Key {
                        flags,
                        proto,
                        header: e.header(),
                    });
                }
            }
        }
    }
    out
}

/// Whether a packet with flow key `key`, `len` bytes long, passes
/// `checks`; the header it lacks if not.
pub fn passes(checks: &[Check], key: &packet::FlowKey, len: usize) -> Result<(), &'static str> {
    for c in checks {
        match *c {
            Check::Key {
                flags,
                proto,
                header,
            } => {
                let ok = key.flags() & flags == flags
                    && proto.is_none_or(|p| key.get(packet::slots::IP_PROTO) == p as u64);
                if !ok {
                    return Err(header);
                }
            }
            Check::Len(n) => {
                if len < n as usize {
                    return Err("a frame a pop would leave shorter than 60 bytes");
                }
            }
        }
    }
    Ok(())
}

/// Why the program cannot make `edits` in this order (it knows where the
/// headers are only as the parser found them): at most one push or pop of
/// a VLAN tag, no IPv4 or port edit after a push (the pipeline parses the
/// pushed frame afresh, and a third tag ends its parse), no VID or PCP
/// after a pop (which tag is outer then depends on the packet).
fn order_ok(edits: &[Edit]) -> Result<(), &'static str> {
    let stack = edits
        .iter()
        .filter(|e| matches!(e, Edit::PushVlan(_) | Edit::PopVlan))
        .count();
    if stack > 1 {
        return Err("more than one push or pop of a VLAN tag");
    }
    let mut pushed = false;
    let mut popped = false;
    for e in edits {
        match e {
            Edit::PushVlan(_) => pushed = true,
            Edit::PopVlan => popped = true,
            Edit::VlanVid(_) | Edit::VlanPcp(_) if popped => {
                return Err("a VLAN field set after pop_vlan")
            }
            Edit::Ipv4Src(_)
            | Edit::Ipv4Dst(_)
            | Edit::TcpSrc(_)
            | Edit::TcpDst(_)
            | Edit::UdpSrc(_)
            | Edit::UdpDst(_)
                if pushed =>
            {
                return Err("an IPv4 or port field set after push_vlan")
            }
            _ => {}
        }
    }
    Ok(())
}

impl Edit {
    /// What the packet must have for the program to make this edit as the
    /// pipeline does (`pipeline::edit::set_field` skips a field the packet
    /// lacks); a packet without it goes up. From the flow key's flags and
    /// IP protocol: (flags every one of which is needed, protocol).
    pub fn needs(&self) -> Option<(u64, Option<u8>)> {
        use packet::flags;
        use packet::parse::ipproto;
        match self {
            Edit::EthDst(_)
            | Edit::EthSrc(_)
            | Edit::PushVlan(_)
            | Edit::PopVlan
            | Edit::VlanVid(_)
            | Edit::VlanPcp(_) => None,
            Edit::Ipv4Src(_) | Edit::Ipv4Dst(_) => Some((flags::IPV4, None)),
            Edit::TcpSrc(_) | Edit::TcpDst(_) => Some((flags::L4, Some(ipproto::TCP))),
            Edit::UdpSrc(_) | Edit::UdpDst(_) => Some((flags::L4, Some(ipproto::UDP))),
        }
    }

    /// The header the edit writes, as [`Up::NoField`] names it.
    pub fn header(&self) -> &'static str {
        match self {
            Edit::EthDst(_) | Edit::EthSrc(_) => "Ethernet",
            Edit::PushVlan(_) | Edit::PopVlan | Edit::VlanVid(_) | Edit::VlanPcp(_) => "VLAN",
            Edit::Ipv4Src(_) | Edit::Ipv4Dst(_) => "IPv4",
            Edit::TcpSrc(_) | Edit::TcpDst(_) => "TCP",
            Edit::UdpSrc(_) | Edit::UdpDst(_) => "UDP",
        }
    }
}

/// Where a forwarded packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Out {
    /// Nowhere: dropped.
    Drop,
    /// Out of OpenFlow port `n` (not a reserved port).
    Port(u32),
    /// Back out of the port it came in on (OFPP_IN_PORT).
    InPort,
    /// Out of every port but the ingress one (OFPP_FLOOD, OFPP_ALL:
    /// `all`), through a DEVMAP broadcast.
    Flood { all: bool },
}

/// Why packets go up to user space.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Up {
    /// The frame has headers the program does not parse the way the
    /// pipeline does (MPLS, PBB, IPv6 extension headers, ND, a third VLAN
    /// tag, a frame shorter than an Ethernet header).
    Headers(&'static str),
    /// A rule's instruction the program does not run.
    Instruction(&'static str),
    /// A rule's action the program does not run.
    Action(String),
    /// More than one output.
    SeveralOutputs,
    /// An output to a reserved port other than IN_PORT.
    Reserved(u32),
    /// An output to a port that is not served by XDP (tap, tunnel,
    /// AF_PACKET, or one not attached yet).
    NotXdp(u32),
    /// The ingress port has OFPPC_NO_RECV (the datapath drops).
    NoRecv,
    /// The rule sets a field the packet does not have whole (a truncated
    /// or later-fragment transport header, a cut IPv4 header, no VLAN
    /// tag to pop), or pops a tag off a frame shorter than 64 bytes.
    NoField(&'static str),
    /// The rule's edits come in an order the program does not make.
    Order(&'static str),
}

impl fmt::Display for Up {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Up::Headers(h) => write!(
                f,
                "the packet has headers the fast path does not parse ({h})"
            ),
            Up::Instruction(i) => write!(f, "the rule has instruction {i}"),
            Up::Action(a) => write!(f, "the rule has action {a}"),
            Up::SeveralOutputs => write!(f, "the rule outputs more than once"),
            Up::Reserved(p) => write!(
                f,
                "the rule outputs to reserved port {}",
                ofp::text::format_port(*p)
            ),
            Up::NotXdp(p) => write!(f, "the rule outputs to port {p}, which is not an XDP port"),
            Up::NoRecv => write!(f, "the ingress port has no_recv"),
            Up::Order(why) => write!(f, "the rule's edits: {why}"),
            Up::NoField(h) => write!(
                f,
                "the rule sets a field of a header the packet does not have whole ({h})"
            ),
        }
    }
}

/// A rule reduced to what the fast path does, before the ingress port is
/// known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Plan {
    Run { edits: Vec<Edit>, out: Out },
    Up(Up),
}

/// The ports the compiler knows: every port of the snapshot with whether
/// it may be sent to, and which of them XDP can redirect to.
pub trait Ports {
    /// `Some(true)`: live and not no_fwd; `Some(false)`: the pipeline drops
    /// outputs to it; `None`: unknown to the snapshot.
    fn usable(&self, port: u32) -> Option<bool>;
    /// Whether XDP can redirect to it.
    fn xdp(&self, port: u32) -> bool;
    /// The ports FLOOD (`all`: ALL) sends to, the ingress port among them
    /// if it is one: every usable port, each served by XDP; why not, if
    /// the program cannot flood (a usable port XDP does not serve, or one
    /// with no_flood, which would need a second set).
    fn flood(&self, all: bool) -> Result<Vec<u32>, Up>;
}

/// The plan of `rule` (a table 0 rule).
/// A rule's match as the program sees it: the packet words only. The
/// metadata words (registers, packet mark, conjunction id, the Geneve
/// option fields `tun_metadataN`) are zero in an arriving packet, so a
/// rule that wants them zero matches as if it did not look at them, and
/// one that wants a non-zero value never matches (`None`: it is left out
/// of the program). Every rule matching a `tun_metadataN` field wants its
/// present bit, so none is in the program: the XDP program never sees a
/// packet from a tunnel (tunnel ports are UDP sockets of the host stack),
/// and such packets run in user space.
pub fn arrival_key(k: &pipeline::MaskedKey) -> Option<pipeline::MaskedKey> {
    let meta = packet::PACKET_WORDS..packet::KEY_WORDS;
    if k.value.w[meta.clone()].iter().any(|&v| v != 0) {
        return None;
    }
    let mut k = *k;
    k.mask.w[meta.clone()].fill(0);
    k.value.w[meta].fill(0);
    Some(k)
}

pub fn plan(rule: &Rule) -> Plan {
    let mut edits = Vec::new();
    let mut out: Option<Out> = None;
    let mut outputs = 0;
    // The action set: its edits (one per field) and its output.
    let mut set_edits: Vec<Edit> = Vec::new();
    let mut set_out: Option<Out> = None;
    for ins in rule.instructions.iter() {
        match ins {
            Instruction::Meter(_) => return Plan::Up(Up::Instruction("meter")),
            Instruction::GotoTable(_) => return Plan::Up(Up::Instruction("goto_table")),
            // Metadata is only seen by later tables, and there are none here.
            Instruction::WriteMetadata { .. } | Instruction::Experimenter { .. } => {}
            Instruction::ClearActions => {
                set_edits.clear();
                set_out = None;
            }
            Instruction::ApplyActions(list) => {
                for a in list {
                    match step(a) {
                        Err(u) => return Plan::Up(u),
                        Ok(Step::None) => {}
                        Ok(Step::Edit(e)) => {
                            if out.is_none() {
                                edits.push(e)
                            }
                        }
                        Ok(Step::Out(o)) => {
                            outputs += 1;
                            out = Some(o);
                        }
                    }
                }
            }
            Instruction::WriteActions(list) => {
                for a in list {
                    match step(a) {
                        Err(u) => return Plan::Up(u),
                        Ok(Step::None) => {}
                        Ok(Step::Edit(e)) => {
                            set_edits.retain(|x| {
                                std::mem::discriminant(x) != std::mem::discriminant(&e)
                            });
                            set_edits.push(e);
                        }
                        Ok(Step::Out(o)) => set_out = Some(o),
                    }
                }
            }
        }
    }
    if let Some(o) = set_out {
        outputs += 1;
        if out.is_none() {
            // The action set's order (spec 5.10): pop, push, then the
            // set_fields as written.
            set_edits.sort_by_key(|e| match e {
                Edit::PopVlan => 0,
                Edit::PushVlan(_) => 1,
                _ => 2,
            });
            edits.extend(set_edits);
            out = Some(o);
        }
    }
    if outputs > 1 {
        return Plan::Up(Up::SeveralOutputs);
    }
    if let Err(why) = order_ok(&edits) {
        return Plan::Up(Up::Order(why));
    }
    match out {
        Some(out) => Plan::Run { edits, out },
        None => Plan::Run {
            edits: Vec::new(),
            out: Out::Drop,
        },
    }
}

enum Step {
    None,
    Edit(Edit),
    Out(Out),
}

fn step(a: &Action) -> Result<Step, Up> {
    match a {
        Action::Output { port, .. } => match *port {
            port_no::IN_PORT => Ok(Step::Out(Out::InPort)),
            port_no::FLOOD => Ok(Step::Out(Out::Flood { all: false })),
            port_no::ALL => Ok(Step::Out(Out::Flood { all: true })),
            p if p > port_no::MAX => Err(Up::Reserved(p)),
            p => Ok(Step::Out(Out::Port(p))),
        },
        Action::SetField(MatchEntry::Basic(o)) => {
            let full = o
                .mask
                .is_none_or(|m| m & o.field.width_mask() == o.field.width_mask());
            let v = o.value;
            let e = match o.field {
                _ if !full => None,
                OxmField::EthDst => Some(Edit::EthDst(v as u64)),
                OxmField::EthSrc => Some(Edit::EthSrc(v as u64)),
                OxmField::Ipv4Src => Some(Edit::Ipv4Src(v as u32)),
                OxmField::Ipv4Dst => Some(Edit::Ipv4Dst(v as u32)),
                OxmField::TcpSrc => Some(Edit::TcpSrc(v as u16)),
                OxmField::TcpDst => Some(Edit::TcpDst(v as u16)),
                OxmField::UdpSrc => Some(Edit::UdpSrc(v as u16)),
                OxmField::UdpDst => Some(Edit::UdpDst(v as u16)),
                OxmField::VlanVid => Some(Edit::VlanVid(v as u16 & 0x0fff)),
                OxmField::VlanPcp => Some(Edit::VlanPcp(v as u8 & 7)),
                _ => None,
            };
            e.map(Step::Edit)
                .ok_or_else(|| Up::Action(ofp::text::format_action(a)))
        }
        Action::PushVlan(tpid) => Ok(Step::Edit(Edit::PushVlan(*tpid))),
        Action::PopVlan => Ok(Step::Edit(Edit::PopVlan)),
        // The pipeline ignores these (sample: sluice has no IPFIX collector).
        Action::SetField(MatchEntry::Other(_))
        | Action::Experimenter { .. }
        | Action::Note(_)
        | Action::Sample(_) => Ok(Step::None),
        // exit, output:FIELD, dec_ttl(ids), push/pop, clone,
        // controller(...), multipath and bundle go up to the pipeline.
        _ => Err(Up::Action(ofp::text::format_action(a))),
    }
}

/// What a plan does for packets that came in on `in_port`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Final {
    Drop,
    /// Edits, then out of `port` (which XDP serves).
    Redirect {
        edits: Vec<Edit>,
        port: u32,
    },
    /// Edits, then back out of the ingress port.
    Back {
        edits: Vec<Edit>,
    },
    /// Edits, then out of each of `to` (a DEVMAP broadcast that leaves
    /// out the ingress port).
    Flood {
        edits: Vec<Edit>,
        to: Vec<u32>,
    },
    Up(Up),
}

/// Specialises `plan` to `in_port`, as `pipeline::exec` resolves outputs:
/// never back out of the ingress port unless through IN_PORT; a port that
/// is down or no_fwd drops; a port unknown to the snapshot goes up (the
/// datapath decides).
pub fn specialise(plan: &Plan, in_port: u32, ports: &dyn Ports) -> Final {
    match plan {
        Plan::Up(u) => Final::Up(u.clone()),
        Plan::Run { out: Out::Drop, .. } => Final::Drop,
        Plan::Run {
            edits,
            out: Out::InPort,
        } => Final::Back {
            edits: edits.clone(),
        },
        Plan::Run {
            edits,
            out: Out::Flood { all },
        } => match ports.flood(*all) {
            Err(u) => Final::Up(u),
            Ok(set) => {
                let to: Vec<u32> = set.into_iter().filter(|&p| p != in_port).collect();
                if to.is_empty() {
                    Final::Drop
                } else {
                    Final::Flood {
                        edits: edits.clone(),
                        to,
                    }
                }
            }
        },
        Plan::Run {
            edits,
            out: Out::Port(p),
        } => {
            if *p == in_port {
                return Final::Drop;
            }
            match ports.usable(*p) {
                Some(false) => Final::Drop,
                Some(true) if ports.xdp(*p) => Final::Redirect {
                    edits: edits.clone(),
                    port: *p,
                },
                _ => Final::Up(Up::NotXdp(*p)),
            }
        }
    }
}
