//! The text of Open vSwitch's Nicira actions of [`crate::nicira`] and
//! [`crate::multipath`], parsed and printed as ovs-ofctl 3.1 does
//! (`lib/ofp-actions.c`, `lib/multipath.c`, `lib/bundle.c`). Where
//! ovs-ofctl reads a bad number as 0 (C's `atoi`: `dec_ttl(x)`,
//! `multipath(eth_src,x,...)`) or drops what follows without a word
//! (arguments after a multipath's destination, bundle members past
//! 2048), sluice refuses the text instead.

use bytes::Bytes;

use super::actions::{format_subfield, parse_actions_ctx, parse_subfield, Ctx};
use super::names::{parse_port, Names};
use super::value::parse_num;
use super::{split_top, TextError};
use crate::action::{
    Action, BdAlgorithm, Bundle, Controller, ControllerForm, HashFields, MpAlgorithm, Multipath,
    OutputReg, OutputRegForm, Sample, SampleDirection, Subfield, NX_CTLR_NO_METER,
    OFPCML_NO_BUFFER,
};
use crate::nicira::{MAX_NESTING, OFPR_ACTION, PACKET_IN_REASONS};
use crate::port::port_no;
use crate::resubmit::Resubmit;

/// Bytes written as pairs of hex digits, with periods (or white space)
/// between them where one likes, as Open vSwitch's `ofpbuf_put_hex` reads
/// them.
pub(crate) fn parse_hex_dotted(s: &str, what: &str) -> Result<Vec<u8>, TextError> {
    let mut out = Vec::with_capacity(s.len() / 2);
    let b = s.as_bytes();
    let mut i = 0;
    loop {
        while i < b.len() && matches!(b[i], b'.' | b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        if i == b.len() {
            return Ok(out);
        }
        let pair = s
            .get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(|_| b[i].is_ascii_hexdigit() && b[i + 1].is_ascii_hexdigit());
        match pair {
            Some(x) => out.push(x),
            None => {
                return Err(TextError::new(
                    s,
                    format!("{what}: pairs of hex digits, like 01.02.ff"),
                ))
            }
        }
        i += 2;
    }
}

/// Bytes as ovs-ofctl prints them: hex pairs joined by periods.
pub fn format_hex_dotted(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(".")
}

/// `note:HEX`: the bytes padded with zeros as Open vSwitch pads them (to
/// 6 more than a multiple of 8, what a whole action holds), so the text
/// and the wire give the same action.
pub(crate) fn parse_note(arg: &str) -> Result<Action, TextError> {
    let mut b = parse_hex_dotted(arg, "note")?;
    let pad = (8 - (b.len() + 2) % 8) % 8;
    b.resize(b.len() + pad, 0);
    Ok(Action::Note(Bytes::from(b)))
}

/// `dec_ttl(ID,...)`: at least one 16-bit controller id.
pub(crate) fn parse_dec_ttl_ids(tok: &str, arg: &str) -> Result<Action, TextError> {
    let ids = arg
        .split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(|t| parse_num::<u16>(t, "a controller id (0-65535)"))
        .collect::<Result<Vec<u16>, _>>()?;
    if ids.is_empty() {
        return Err(TextError::new(
            tok,
            "dec_ttl(ID[,ID...]): at least one controller id",
        ));
    }
    Ok(Action::DecTtlIds(ids))
}

/// `output:ARG` where ARG is no port: a field's bits (`output:reg0[0..15]`),
/// as ovs-ofctl tries a port first and a field after.
pub(crate) fn parse_output_field(arg: &str) -> Result<Action, TextError> {
    let (field, ofs, n_bits) = parse_subfield(arg).map_err(|e| {
        TextError::new(
            arg,
            format!("a port, or a field like reg0[0..15] ({})", e.expected),
        )
    })?;
    Ok(Action::OutputReg(OutputReg {
        src: Subfield { field, ofs, n_bits },
        max_len: OFPCML_NO_BUFFER,
        form: OutputRegForm::OutputReg,
    }))
}

/// `check_pkt_larger(N)->FIELD[BIT]`: one bit, as ovs-ofctl takes it.
pub(crate) fn parse_check_pkt_larger(tok: &str, rest: &str) -> Result<Action, TextError> {
    let (len, dst) = rest
        .split_once(")->")
        .ok_or_else(|| TextError::new(tok, "check_pkt_larger(LENGTH)->FIELD[BIT]"))?;
    let pkt_len = parse_num(len, "a packet length (0-65535)")?;
    let (field, ofs, n_bits) = parse_subfield(dst)?;
    if n_bits != 1 {
        return Err(TextError::new(dst, "one bit, like reg0[0]"));
    }
    Ok(Action::CheckPktLarger(crate::action::CheckPktLarger {
        pkt_len,
        dst: Subfield { field, ofs, n_bits },
    }))
}

/// `push:FIELD[..]` or `pop:FIELD[..]`.
pub(crate) fn parse_stack(pop: bool, arg: &str) -> Result<Action, TextError> {
    let (field, ofs, n_bits) = parse_subfield(arg)?;
    let s = Subfield { field, ofs, n_bits };
    Ok(if pop {
        Action::StackPop(s)
    } else {
        Action::StackPush(s)
    })
}

/// `clone(ACTIONS)`: the actions parsed as a list of their own, from the
/// state of the packet here (and what they change stays inside).
pub(crate) fn parse_clone(tok: &str, arg: &str, ctx: &Ctx) -> Result<Action, TextError> {
    if ctx.depth + 1 >= MAX_NESTING {
        return Err(TextError::new(
            tok,
            "actions nested at most 100 deep (Open vSwitch's limit)",
        ));
    }
    let mut inner = Ctx {
        depth: ctx.depth + 1,
        in_ct: false,
        ..*ctx
    };
    parse_actions_ctx(arg, &mut inner).map(Action::Clone)
}

/// `sample(probability=N[,collector_set_id=N][,obs_domain_id=N]
/// [,obs_point_id=N][,sampling_port=P][,ingress|egress])`.
pub(crate) fn parse_sample(tok: &str, arg: &str) -> Result<Action, TextError> {
    let mut s = Sample {
        probability: 0,
        collector_set_id: 0,
        obs_domain_id: 0,
        obs_point_id: 0,
        sampling_port: port_no::ANY,
        direction: SampleDirection::Default,
        form: crate::action::SampleForm::Sample,
    };
    for kv in split_top(arg) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "probability" => {
                s.probability = parse_num(v, "a probability (1-65535 in 65535)")?;
                if s.probability == 0 {
                    return Err(TextError::new(kv, "a probability of 1 to 65535 (in 65535)"));
                }
            }
            "collector_set_id" => s.collector_set_id = parse_num(v, "a 32-bit collector set id")?,
            "obs_domain_id" => s.obs_domain_id = parse_num(v, "a 32-bit observation domain id")?,
            "obs_point_id" => s.obs_point_id = parse_num(v, "a 32-bit observation point id")?,
            "sampling_port" => {
                let p = parse_port(v)?;
                if !Resubmit::port_fits(p) {
                    return Err(TextError::new(v, "a port below 65280 or a reserved port"));
                }
                s.sampling_port = p;
            }
            "ingress" if v.is_empty() => s.direction = SampleDirection::Ingress,
            "egress" if v.is_empty() => s.direction = SampleDirection::Egress,
            _ => {
                return Err(TextError::new(
                    kv,
                    "probability, collector_set_id, obs_domain_id, obs_point_id, sampling_port, ingress or egress",
                ))
            }
        }
    }
    if s.probability == 0 {
        return Err(TextError::new(
            tok,
            "sample(probability=N,...) with N of 1 to 65535",
        ));
    }
    s.form = s.least_form();
    Ok(Action::Sample(s))
}

/// `controller(...)`'s arguments (`controller(N)` is `max_len=N`). With
/// none but max_len it is OpenFlow's output to CONTROLLER, as ovs-ofctl
/// sends it.
pub(crate) fn parse_controller(arg: &str) -> Result<Action, TextError> {
    let mut c = Controller {
        max_len: OFPCML_NO_BUFFER,
        id: 0,
        reason: OFPR_ACTION,
        userdata: Bytes::new(),
        pause: false,
        meter_id: NX_CTLR_NO_METER,
        form: ControllerForm::Controller,
    };
    let mut userdata = false;
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        c.max_len = parse_num(arg, "a max_len (0-65535)")?;
    } else {
        for kv in split_top(arg) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "reason" => {
                    c.reason = PACKET_IN_REASONS
                        .iter()
                        .position(|n| n.eq_ignore_ascii_case(v))
                        .ok_or_else(|| {
                            TextError::new(
                                v,
                                "a reason: no_match, action, invalid_ttl, action_set, group or packet_out",
                            )
                        })? as u8
                }
                "max_len" => c.max_len = parse_num(v, "a max_len (0-65535)")?,
                "id" => c.id = parse_num(v, "a controller connection id (0-65535)")?,
                "userdata" => {
                    userdata = true;
                    c.userdata = Bytes::from(parse_hex_dotted(v, "userdata")?);
                }
                "pause" => c.pause = true,
                "meter_id" => c.meter_id = parse_num(v, "a 32-bit meter id")?,
                _ => {
                    return Err(TextError::new(
                        k,
                        "reason, max_len, id, userdata, pause or meter_id",
                    ))
                }
            }
        }
    }
    if c.reason == OFPR_ACTION
        && c.id == 0
        && !userdata
        && !c.pause
        && c.meter_id == NX_CTLR_NO_METER
    {
        return Ok(Action::Output {
            port: port_no::CONTROLLER,
            max_len: c.max_len,
        });
    }
    if c.needs_controller2() {
        c.form = ControllerForm::Controller2;
    }
    Ok(Action::Controller(Box::new(c)))
}

fn num<T: TryFrom<u128>>(tok: &str, what: &str) -> Result<T, TextError> {
    parse_num(tok, what)
}

fn hash_fields(t: &str) -> Result<HashFields, TextError> {
    HashFields::from_name(t).ok_or_else(|| {
        TextError::new(
            t,
            "fields: eth_src, symmetric_l4, symmetric_l3l4, symmetric_l3l4+udp, nw_src, nw_dst or symmetric_l3",
        )
    })
}

fn nxm_subfield(t: &str) -> Result<Subfield, TextError> {
    let (field, ofs, n_bits) = parse_subfield(t)?;
    if field.nxm_header().is_none() {
        return Err(TextError::new(t, "a field with an NXM header"));
    }
    Ok(Subfield { field, ofs, n_bits })
}

/// `multipath(fields,basis,algorithm,n_links,arg,dst)`.
pub(crate) fn parse_multipath(tok: &str, arg: &str) -> Result<Action, TextError> {
    let t: Vec<&str> = arg.split([',', ' ']).filter(|t| !t.is_empty()).collect();
    let [fields, basis, algorithm, n_links, a, dst] = t[..] else {
        return Err(TextError::new(
            tok,
            "multipath(FIELDS,BASIS,ALGORITHM,N_LINKS,ARG,DST[BITS])",
        ));
    };
    let fields = hash_fields(fields)?;
    let basis = num(basis, "a 16-bit basis")?;
    let algorithm = MpAlgorithm::from_name(algorithm)
        .ok_or_else(|| TextError::new(algorithm, "modulo_n, hash_threshold, hrw or iter_hash"))?;
    let n: u32 = num(n_links, "a number of links (1-65536)")?;
    if !(1..=65536).contains(&n) {
        return Err(TextError::new(n_links, "a number of links (1-65536)"));
    }
    let arg: u32 = num(a, "a 32-bit argument")?;
    let dst = nxm_subfield(dst)?;
    if dst.n_bits < 16 && n > 1u32 << dst.n_bits {
        return Err(TextError::new(
            tok,
            format!(
                "a destination of {} bits holds {} values, fewer than {n} links",
                dst.n_bits,
                1u32 << dst.n_bits
            ),
        ));
    }
    Ok(Action::Multipath(Multipath {
        fields,
        basis,
        algorithm,
        max_link: (n - 1) as u16,
        arg,
        dst,
    }))
}

/// `bundle(fields,basis,algorithm,ofport,members:P,...)` and
/// `bundle_load(fields,basis,algorithm,ofport,dst,members:P,...)`
/// (`slaves:` is the old spelling of `members:`).
pub(crate) fn parse_bundle(tok: &str, arg: &str, load: bool) -> Result<Action, TextError> {
    let usage = || {
        TextError::new(
            tok,
            if load {
                "bundle_load(FIELDS,BASIS,ALGORITHM,ofport,DST[BITS],members:PORT,...)"
            } else {
                "bundle(FIELDS,BASIS,ALGORITHM,ofport,members:PORT,...)"
            },
        )
    };
    let t: Vec<&str> = arg.split([',', ' ']).filter(|t| !t.is_empty()).collect();
    let head = if load { 5 } else { 4 };
    if t.len() <= head {
        return Err(usage());
    }
    let fields = hash_fields(t[0])?;
    let basis = num(t[1], "a 16-bit basis")?;
    let algorithm = match t[2] {
        a if a.eq_ignore_ascii_case("hrw") => BdAlgorithm::Hrw,
        a if a.eq_ignore_ascii_case("active_backup") => BdAlgorithm::ActiveBackup,
        a => return Err(TextError::new(a, "hrw or active_backup")),
    };
    if !t[3].eq_ignore_ascii_case("ofport") {
        return Err(TextError::new(t[3], "ofport (the only member type)"));
    }
    let dst = if load {
        Some(nxm_subfield(t[4])?)
    } else {
        None
    };
    let (delim, first) = t[head].split_once(':').unwrap_or((t[head], ""));
    if !delim.eq_ignore_ascii_case("members") && !delim.eq_ignore_ascii_case("slaves") {
        return Err(TextError::new(t[head], "members:PORT,..."));
    }
    let mut members = Vec::new();
    for m in std::iter::once(first)
        .chain(t[head + 1..].iter().copied())
        .flat_map(|m| m.split(['[', ']']))
        .filter(|m| !m.is_empty())
    {
        let p = parse_port(m)?;
        if !Resubmit::port_fits(p) {
            return Err(TextError::new(m, "a port below 65280 or a reserved port"));
        }
        members.push(p);
    }
    if members.len() > crate::multipath::BUNDLE_MAX_MEMBERS {
        return Err(TextError::new(tok, "at most 2048 members"));
    }
    Ok(Action::Bundle(Box::new(Bundle {
        fields,
        basis,
        algorithm,
        members,
        dst,
    })))
}

/// Writes the actions of this module as ovs-ofctl prints them; `None`
/// for any other.
pub(crate) fn format(a: &Action, names: &Names) -> Option<String> {
    let mut s = String::new();
    match a {
        Action::Note(n) => s = format!("note:{}", format_hex_dotted(n)),
        Action::Exit => s.push_str("exit"),
        Action::PopQueue => s.push_str("pop_queue"),
        Action::OutputTrunc { port, max_len } => s.push_str(&format!(
            "output(port={},max_len={max_len})",
            names.port(*port)
        )),
        Action::Ct(c) => super::ct::format_ct(c, names, &mut s),
        Action::Nat(n) => super::ct::format_nat(n, &mut s),
        Action::CtClear => s.push_str("ct_clear"),
        Action::OutputReg(o) => {
            s.push_str("output:");
            format_subfield(o.src.field, o.src.ofs, o.src.n_bits, &mut s);
        }
        Action::DecTtlIds(ids) => {
            let ids: Vec<String> = ids.iter().map(u16::to_string).collect();
            s = format!("dec_ttl({})", ids.join(","));
        }
        Action::StackPush(f) | Action::StackPop(f) => {
            s.push_str(if matches!(a, Action::StackPush(_)) {
                "push:"
            } else {
                "pop:"
            });
            format_subfield(f.field, f.ofs, f.n_bits, &mut s);
        }
        Action::Clone(list) => {
            s = format!(
                "clone({})",
                super::actions::format_actions_named(list, names)
            );
        }
        Action::Sample(x) => {
            s = format!(
                "sample(probability={},collector_set_id={},obs_domain_id={},obs_point_id={}",
                x.probability, x.collector_set_id, x.obs_domain_id, x.obs_point_id
            );
            if x.sampling_port != port_no::ANY {
                s.push_str(&format!(",sampling_port={}", names.port(x.sampling_port)));
            }
            match x.direction {
                SampleDirection::Ingress => s.push_str(",ingress"),
                SampleDirection::Egress => s.push_str(",egress"),
                SampleDirection::Default => {}
            }
            s.push(')');
        }
        Action::Controller(c) => {
            if c.reason == OFPR_ACTION && c.id == 0 && !c.needs_controller2() {
                return Some(format!("CONTROLLER:{}", c.max_len));
            }
            let mut parts = Vec::new();
            if c.reason != OFPR_ACTION {
                let r = match c.reason {
                    r @ 0..=5 => PACKET_IN_REASONS[r as usize].to_string(),
                    // Open vSwitch's internal explicit_miss and implicit_miss.
                    6 | 7 => String::new(),
                    r => r.to_string(),
                };
                parts.push(format!("reason={r}"));
            }
            if c.max_len != OFPCML_NO_BUFFER {
                parts.push(format!("max_len={}", c.max_len));
            }
            if c.id != 0 {
                parts.push(format!("id={}", c.id));
            }
            if !c.userdata.is_empty() {
                parts.push(format!("userdata={}", format_hex_dotted(&c.userdata)));
            }
            if c.pause {
                parts.push("pause".into());
            }
            if c.meter_id != NX_CTLR_NO_METER {
                parts.push(format!("meter_id={}", c.meter_id));
            }
            s = format!("controller({})", parts.join(","));
        }
        Action::Multipath(m) => {
            s = format!(
                "multipath({},{},{},{},{},",
                m.fields.name(),
                m.basis,
                m.algorithm.name(),
                m.max_link as u32 + 1,
                m.arg
            );
            format_subfield(m.dst.field, m.dst.ofs, m.dst.n_bits, &mut s);
            s.push(')');
        }
        Action::Bundle(b) => {
            s = format!(
                "{}({},{},{},ofport,",
                if b.dst.is_some() {
                    "bundle_load"
                } else {
                    "bundle"
                },
                b.fields.name(),
                b.basis,
                b.algorithm.name()
            );
            if let Some(d) = &b.dst {
                format_subfield(d.field, d.ofs, d.n_bits, &mut s);
                s.push(',');
            }
            let m: Vec<String> = b.members.iter().map(|&p| names.port(p)).collect();
            s.push_str(&format!("members:{})", m.join(",")));
        }
        Action::CheckPktLarger(c) => {
            s = format!("check_pkt_larger({})->", c.pkt_len);
            format_subfield(c.dst.field, c.dst.ofs, c.dst.n_bits, &mut s);
        }
        _ => return None,
    }
    Some(s)
}
