//! Reading actions and instructions from ovs-ofctl text: one token at a
//! time ([`parse_action`]), with what the flow around it tells ([`Ctx`]:
//! the match's transport protocol, whether a VLAN tag is there, `clone`
//! depth, inside `ct(exec(...))`), and instructions in the one order
//! ovs-ofctl reads them.

use bytes::Bytes;

use crate::action::{
    bits_mask, Action, Conjunction, LoadForm, RegLoad, RegMove, Resubmit, OFPCML_NO_BUFFER,
};
use crate::instruction::Instruction;
use crate::oxm::{MatchEntry, Oxm, OxmField, OFPVID_PRESENT};
use crate::port::port_no;
use crate::text::flow::field_by_name;
use crate::text::names::parse_port;
use crate::text::nicira;
use crate::text::value::{parse_masked, parse_num, parse_uint};
use crate::text::{key_value, split_top, TextError};

/// An action or instruction's name and argument: `NAME:ARG`, `NAME=ARG`,
/// or `NAME(ARG)`, which ovs-ofctl takes for every action alike
/// (`output(2)`, `goto_table(3)`, `load(5->NXM_NX_TUN_ID[])`).
fn action_key_value(tok: &str) -> (&str, Option<&str>) {
    if let Some((name, rest)) = tok.split_once('(') {
        if let Some(arg) = rest.strip_suffix(')') {
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return (name, Some(arg));
            }
        }
    }
    key_value(tok)
}

/// `resubmit:PORT`'s port, or `resubmit(PORT,TABLE)`'s arguments (either
/// may be empty, not both; a third, `ct`, is connection tracking's and not
/// taken yet), as ovs-ofctl reads them.
fn parse_resubmit(tok: &str, args: &str) -> Result<Action, TextError> {
    let mut it = args.split(',').map(str::trim);
    let (port, table) = (it.next().unwrap_or(""), it.next());
    if let Some(extra) = it.next() {
        return Err(TextError::new(
            tok,
            format!(
                "resubmit takes PORT and TABLE ({extra:?}: connection tracking is not supported)"
            ),
        ));
    }
    // A port by name, or by Open vSwitch's 16-bit number (65280 and up
    // are the reserved ports).
    let in_port = match port {
        "" => port_no::IN_PORT,
        p => match port_no::from_name(p) {
            Some(r) => r,
            None => {
                let n: u32 = parse_num(p, "a port number or reserved port name")?;
                if n > 0xffff {
                    return Err(TextError::new(p, "resubmit to unknown port"));
                }
                Resubmit::port_from_u16(n as u16)
            }
        },
    };
    let table = match table.unwrap_or("") {
        "" => Resubmit::CURRENT_TABLE,
        t => parse_num(t, "a table number (0-254, or 255: the current one)")?,
    };
    if in_port == port_no::IN_PORT && table == Resubmit::CURRENT_TABLE {
        return Err(TextError::new(
            tok,
            "at least one of the port and the table must be given",
        ));
    }
    Ok(Action::Resubmit(Resubmit::new(in_port, table)))
}

fn parse_hex_bytes(s: &str) -> Result<Bytes, TextError> {
    let bad = || TextError::new(s, "hex bytes like 0x0102");
    let h = s.strip_prefix("0x").ok_or_else(bad)?;
    if h.len() % 2 != 0 {
        return Err(bad());
    }
    (0..h.len())
        .step_by(2)
        .map(|i| h.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .map(Bytes::from)
        .ok_or_else(bad)
}

/// Parses `name(k=v,k=v)` arguments.
fn paren_args<'a>(tok: &'a str, name: &str) -> Option<Vec<(&'a str, &'a str)>> {
    let inner = tok
        .strip_prefix(name)?
        .strip_prefix('(')?
        .strip_suffix(')')?;
    Some(
        split_top(inner)
            .into_iter()
            .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
            .collect(),
    )
}

fn set_field(field: OxmField, value: u128, mask: Option<u128>) -> Action {
    Action::SetField(MatchEntry::Basic(Oxm { field, value, mask }))
}

/// What parsing an action list knows of the flow around it, as ovs-ofctl
/// uses it: the match's IP protocol (which port `mod_tp_src` sets) and
/// whether the packet has a VLAN tag at this point of the list (whether
/// `mod_vlan_vid` and `mod_vlan_pcp` push one first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ctx {
    pub proto: Option<u128>,
    pub vlan: bool,
    /// How deep in `clone` the list being parsed is (0: the flow's own).
    pub depth: u32,
    /// Whether the list is `ct`'s `exec(...)`: only `nat` and writes of
    /// `ct_mark`/`ct_label` there, and those only there.
    pub in_ct: bool,
}

impl Ctx {
    /// No match known: no transport protocol, and the VLAN aliases only set
    /// the tag's fields (they push none).
    pub const UNKNOWN: Ctx = Ctx {
        proto: None,
        vlan: true,
        depth: 0,
        in_ct: false,
    };
}

/// Pushes the leading 64-bit pieces of a wide load to `out` and returns
/// the last, as ovs-ofctl splits them (one NXAST_REG_LOAD holds 64 bits).
fn push_load(tok: &str, l: RegLoad, out: &mut Vec<Action>) -> Result<Action, TextError> {
    let _ = tok;
    let mut rest = l;
    while rest.n_bits > 64 {
        out.push(Action::RegLoad(RegLoad {
            n_bits: 64,
            value: rest.value & bits_mask(0, 64),
            ..rest
        }));
        rest.ofs += 64;
        rest.n_bits -= 64;
        rest.value >>= 64;
    }
    Ok(Action::RegLoad(rest))
}

/// A value of `field` in its text form (no mask).
fn parse_value(field: OxmField, v: &str) -> Result<u128, TextError> {
    match parse_masked(field, v)? {
        (value, None) => Ok(value),
        (_, Some(_)) => Err(TextError::new(v, "a value without a mask")),
    }
}

/// A field for `load:` and `move:`: its NXM or OXM name
/// (`NXM_NX_TUN_ID`, `OXM_OF_METADATA`) or its short name (`tun_id`,
/// `eth_dst`, `dl_dst`, `metadata`, `tun_dst`).
fn subfield_field(name: &str) -> Option<OxmField> {
    // In load, move and learn, `in_port` is Open vSwitch's 16-bit port
    // field (NXM_OF_IN_PORT), which they may write.
    if name == "in_port" {
        return Some(OxmField::NxmInPort);
    }
    OxmField::from_nxm_name(name).or_else(|| field_by_name(name))
}

/// Parses `FIELD[]`, `FIELD[a..b]`, `FIELD[n]` or `FIELD` (the whole
/// field) into (field, ofs, n_bits), the bits checked against the field.
pub(crate) fn parse_subfield(s: &str) -> Result<(OxmField, u16, u16), TextError> {
    let (name, bits) = match s.find('[') {
        Some(i) => (&s[..i], Some(&s[i..])),
        None => (s, None),
    };
    let field = subfield_field(name).ok_or_else(|| {
        TextError::new(
            name,
            "a field like NXM_NX_TUN_ID, OXM_OF_METADATA or tun_dst",
        )
    })?;
    let width = field.subfield_bits();
    let bad = || {
        TextError::new(
            s,
            "FIELD[], FIELD[BIT] or FIELD[START..END] inside the field",
        )
    };
    let (start, end) = match bits {
        None | Some("[]") => (0, width.saturating_sub(1)),
        Some(b) => {
            let inner = b
                .strip_prefix('[')
                .and_then(|b| b.strip_suffix(']'))
                .ok_or_else(bad)?;
            let num = |x: &str| x.parse::<u16>().map_err(|_| bad());
            match inner.split_once("..") {
                Some((a, b)) => (num(a)?, num(b)?),
                None => {
                    let n = num(inner)?;
                    (n, n)
                }
            }
        }
    };
    if start > end || end >= width {
        return Err(bad());
    }
    Ok((field, start, end - start + 1))
}

/// Parses one action token, with no match around it (see [`Ctx::UNKNOWN`]).
/// A `load:` wider than 64 bits is two actions: parse it in a list.
pub fn parse_action(tok: &str) -> Result<Action, TextError> {
    let mut v = Vec::with_capacity(1);
    let mut ctx = Ctx::UNKNOWN;
    parse_action_into(tok, &mut ctx, &mut v)?;
    match <[Action; 1]>::try_from(v) {
        Ok([a]) => Ok(a),
        Err(_) => Err(TextError::new(
            tok,
            "one action (this is more than one: parse it in a list)",
        )),
    }
}

/// Parses one action token into `out` (most give one action; `load:` of more
/// than 64 bits and the VLAN aliases may give two), updating `ctx`.
pub(crate) fn parse_action_into(
    tok: &str,
    ctx: &mut Ctx,
    out: &mut Vec<Action>,
) -> Result<(), TextError> {
    let a = parse_one(tok, ctx, out)?;
    // Open vSwitch's nesting rules, with its words (ofpacts_verify_nested).
    let ct_write = crate::ct::write_dst(&a).map(|f| f.requires_ct());
    if ctx.in_ct {
        if !matches!(a, Action::Nat(_)) && ct_write != Some(true) {
            return Err(TextError::new(
                tok,
                "in ct's exec(...), only nat and set_field, load or move to ct_mark or ct_label",
            ));
        }
    } else if matches!(a, Action::Nat(_)) {
        return Err(TextError::new(tok, "nat only inside a \"ct\" action"));
    } else if ct_write == Some(true) {
        return Err(TextError::new(
            tok,
            "ct_mark and ct_label set only inside ct(commit,exec(...)) (cannot set CT fields outside of ct action)",
        ));
    }
    match a {
        Action::PushVlan(_) => ctx.vlan = true,
        Action::PopVlan => ctx.vlan = false,
        _ => {}
    }
    out.push(a);
    Ok(())
}

/// One action; loads of more than 64 bits and VLAN aliases push their
/// leading parts to `out` themselves.
fn parse_one(tok: &str, ctx: &mut Ctx, out: &mut Vec<Action>) -> Result<Action, TextError> {
    if let Some(arg) = tok
        .strip_prefix("controller(")
        .and_then(|r| r.strip_suffix(')'))
    {
        return nicira::parse_controller(arg);
    }
    if let Some(args) = paren_args(tok, "output") {
        // `output(PORT)` is `output:PORT`, as ovs-ofctl reads it.
        if let [(p, "")] = args[..] {
            return Ok(Action::Output {
                port: parse_port(p)?,
                max_len: 0,
            });
        }
        // Open vSwitch's truncating output (NXAST_OUTPUT_TRUNC).
        let (mut port, mut max_len) = (None, None);
        for (k, v) in args {
            match k {
                "port" => port = Some(parse_port(v)?),
                "max_len" => max_len = Some(parse_num::<u32>(v, "a max_len")?),
                _ => return Err(TextError::new(k, "port or max_len")),
            }
        }
        let (Some(port), Some(max_len)) = (port, max_len) else {
            return Err(TextError::new(tok, "output(port=N,max_len=M)"));
        };
        if port > port_no::MAX && port != port_no::LOCAL && port != port_no::IN_PORT {
            return Err(TextError::new(
                tok,
                "a physical port, LOCAL or IN_PORT to truncate to",
            ));
        }
        if max_len < crate::nicira::OUTPUT_TRUNC_MIN {
            return Err(TextError::new(
                tok,
                "a max_len of at least 14 (an Ethernet header)",
            ));
        }
        return Ok(Action::OutputTrunc { port, max_len });
    }
    if let Some(args) = paren_args(tok, "experimenter") {
        let (mut id, mut data) = (None, Bytes::new());
        for (k, v) in args {
            match k {
                "id" => id = Some(parse_num(v, "an experimenter id")?),
                "data" => data = parse_hex_bytes(v)?,
                _ => return Err(TextError::new(k, "id or data")),
            }
        }
        let experimenter =
            id.ok_or_else(|| TextError::new(tok, "experimenter(id=N[,data=0xHEX])"))?;
        return Ok(Action::Experimenter { experimenter, data });
    }
    if let Some(v) = tok
        .strip_prefix("set_mpls_ttl(")
        .and_then(|r| r.strip_suffix(')'))
    {
        return Ok(Action::SetMplsTtl(parse_num(v, "a TTL (0-255)")?));
    }
    if let Some(rest) = tok.strip_prefix("check_pkt_larger(") {
        return nicira::parse_check_pkt_larger(tok, rest);
    }
    if let Some(args) = tok
        .strip_prefix("resubmit(")
        .and_then(|r| r.strip_suffix(')'))
    {
        return parse_resubmit(tok, args);
    }
    if tok.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Action::Output {
            port: parse_port(tok)?,
            max_len: 0,
        });
    }
    let (key, arg) = action_key_value(tok);
    let need = |what: &str| arg.ok_or_else(|| TextError::new(tok, format!("{key}:{what}")));
    let lower = key.to_ascii_lowercase();
    let key = lower.as_str();
    let a = match key {
        "note" => return nicira::parse_note(arg.unwrap_or("")),
        // As ovs-ofctl: an argument is ignored.
        "exit" => Action::Exit,
        "pop_queue" if arg.is_none() => Action::PopQueue,
        "enqueue" | "set_vlan_vid" | "set_vlan_pcp" | "set_mpls_label" | "set_mpls_tc" => {
            return parse_ovs_word(tok, key, need("ARG")?, out)
        }
        "dec_ttl" if arg.is_some_and(|a| !a.is_empty()) => {
            return nicira::parse_dec_ttl_ids(tok, arg.unwrap_or(""))
        }
        "push" | "pop" => return nicira::parse_stack(key == "pop", need("FIELD[BITS]")?),
        "clone" => return nicira::parse_clone(tok, arg.unwrap_or(""), ctx),
        "ct" => return crate::text::ct::parse_ct(tok, arg.unwrap_or(""), ctx),
        "ct_clear" if arg.is_none() => Action::CtClear,
        "nat" => return crate::text::ct::parse_nat(tok, arg.unwrap_or("")),
        "sample" => return nicira::parse_sample(tok, arg.unwrap_or("")),
        "multipath" => return nicira::parse_multipath(tok, need("(...)")?),
        "bundle" | "bundle_load" => {
            return nicira::parse_bundle(tok, need("(...)")?, key == "bundle_load")
        }
        "output" if parse_port(need("PORT")?).is_err() => {
            return nicira::parse_output_field(need("PORT")?)
        }
        "output" => {
            let port = parse_port(need("PORT")?)?;
            // As ovs-ofctl: `output:controller` is `controller`, which
            // sends the whole packet.
            let max_len = if port == port_no::CONTROLLER {
                OFPCML_NO_BUFFER
            } else {
                0
            };
            Action::Output { port, max_len }
        }
        "controller" => return nicira::parse_controller(arg.unwrap_or("")),
        "in_port" | "all" | "flood" | "normal" | "local" | "table" | "any" if arg.is_none() => {
            Action::Output {
                port: parse_port(key)?,
                max_len: 0,
            }
        }
        "group" => Action::Group(parse_num(need("GROUP_ID")?, "a group id")?),
        "set_queue" => Action::SetQueue(parse_num(need("QUEUE_ID")?, "a queue id")?),
        "push_vlan" => Action::PushVlan(parse_num(need("ETHERTYPE")?, "an ethertype like 0x8100")?),
        // strip_vlan is ovs-ofctl's OpenFlow 1.0 name (it refuses it under
        // 1.3); sluice takes it as pop_vlan.
        "pop_vlan" | "strip_vlan" => Action::PopVlan,
        "push_mpls" => Action::PushMpls(parse_num(need("ETHERTYPE")?, "an ethertype like 0x8847")?),
        "pop_mpls" => Action::PopMpls(parse_num(need("ETHERTYPE")?, "an ethertype like 0x0800")?),
        "push_pbb" => Action::PushPbb(parse_num(need("ETHERTYPE")?, "an ethertype like 0x88e7")?),
        "pop_pbb" => Action::PopPbb,
        "set_mpls_ttl" => Action::SetMplsTtl(parse_num(need("TTL")?, "a TTL (0-255)")?),
        "dec_mpls_ttl" => Action::DecMplsTtl,
        "set_nw_ttl" | "mod_nw_ttl" => Action::SetNwTtl(parse_num(need("TTL")?, "a TTL (0-255)")?),
        "dec_nw_ttl" | "dec_ttl" => Action::DecNwTtl,
        "copy_ttl_out" => Action::CopyTtlOut,
        "copy_ttl_in" => Action::CopyTtlIn,
        "set_field" => {
            let body = need("VALUE->FIELD")?;
            let (v, f) = body
                .split_once("->")
                .ok_or_else(|| TextError::new(body, "VALUE->FIELD"))?;
            let field = field_by_name(f)
                .ok_or_else(|| TextError::new(f, "a settable field name like eth_dst"))?;
            // `set_field:5->vlan_vid` is VLAN_VID 5, without
            // OFPVID_PRESENT, which validation refuses, as Open vSwitch
            // does (write 4101, or mod_vlan_vid:5).
            let (value, mask) = parse_masked(field, v)?;
            match mask {
                // A masked set_field is a load of the masked bits, as
                // ovs-ofctl sends it under OpenFlow 1.3.
                Some(m) => {
                    let ofs = m.trailing_zeros() as u16;
                    let n_bits = (128 - m.leading_zeros() as u16).saturating_sub(ofs);
                    if m == 0 || m != bits_mask(ofs, n_bits) || value & !m != 0 {
                        return Err(TextError::new(
                            v,
                            "a mask that is one run of bits, and a value inside it",
                        ));
                    }
                    return push_load(
                        tok,
                        RegLoad {
                            dst: field,
                            ofs,
                            n_bits,
                            value: value >> ofs,
                            form: LoadForm::for_field(field),
                        },
                        out,
                    );
                }
                None => set_field(field, value, None),
            }
        }
        "load" => {
            let body = need("VALUE->FIELD[BITS]")?;
            let (v, f) = body
                .split_once("->")
                .ok_or_else(|| TextError::new(body, "VALUE->FIELD[BITS]"))?;
            let (dst, ofs, n_bits) = parse_subfield(f)?;
            let value = parse_uint(v, "an integer (decimal or 0x hex)")?;
            if n_bits < 128 && value >> n_bits != 0 {
                return Err(TextError::new(
                    tok,
                    format!("a value that fits in {n_bits} bits"),
                ));
            }
            return push_load(
                tok,
                RegLoad {
                    dst,
                    ofs,
                    n_bits,
                    value,
                    form: LoadForm::for_field(dst),
                },
                out,
            );
        }
        "resubmit" => {
            let port = need("PORT")?;
            return parse_resubmit(tok, port);
        }
        "learn" => {
            let body = need("learn(SPECS)")?;
            return Ok(Action::Learn(Box::new(crate::text::learn::parse_learn(
                tok, body,
            )?)));
        }
        "conjunction" => {
            let what = "conjunction(ID,K/N)";
            let body = need(what)?;
            let (id, kn) = body
                .split_once(',')
                .ok_or_else(|| TextError::new(tok, what))?;
            let (k, n) = kn
                .split_once('/')
                .ok_or_else(|| TextError::new(tok, what))?;
            let c = Conjunction {
                id: parse_num(id.trim(), "a 32-bit conjunction id")?,
                clause: parse_num(k.trim(), "a clause number (1-64)")?,
                n_clauses: parse_num(n.trim(), "a number of clauses (2-64)")?,
            };
            c.check().map_err(|e| TextError::new(tok, e.detail))?;
            return Ok(Action::Conjunction(c));
        }
        "move" => {
            let body = need("SRC[BITS]->DST[BITS]")?;
            let (s, d) = body
                .split_once("->")
                .ok_or_else(|| TextError::new(body, "SRC[BITS]->DST[BITS]"))?;
            let (src, src_ofs, n) = parse_subfield(s)?;
            let (dst, dst_ofs, dn) = parse_subfield(d)?;
            if n != dn {
                return Err(TextError::new(
                    tok,
                    format!("source and destination of the same width ({n} and {dn} bits)"),
                ));
            }
            Action::RegMove(RegMove {
                src,
                src_ofs,
                dst,
                dst_ofs,
                n_bits: n,
            })
        }
        "mod_dl_src" | "mod_dl_dst" | "mod_nw_src" | "mod_nw_dst" => {
            let field = match key {
                "mod_dl_src" => OxmField::EthSrc,
                "mod_dl_dst" => OxmField::EthDst,
                "mod_nw_src" => OxmField::Ipv4Src,
                _ => OxmField::Ipv4Dst,
            };
            let v = need("VALUE")?;
            let value = parse_value(field, v)?;
            set_field(field, value, None)
        }
        "mod_vlan_vid" | "mod_vlan_pcp" => {
            let a = if key == "mod_vlan_vid" {
                let vid: u16 = parse_num(need("VID")?, "a VLAN id (0-4095)")?;
                if vid > 0xfff {
                    return Err(TextError::new(tok, "a VLAN id (0-4095)"));
                }
                set_field(OxmField::VlanVid, (vid | OFPVID_PRESENT) as u128, None)
            } else {
                let pcp: u8 = parse_num(need("PCP")?, "a VLAN priority (0-7)")?;
                if pcp > 7 {
                    return Err(TextError::new(tok, "a VLAN priority (0-7)"));
                }
                set_field(OxmField::VlanPcp, pcp as u128, None)
            };
            // As ovs-ofctl: with no tag at this point, push one first.
            if !ctx.vlan {
                out.push(Action::PushVlan(0x8100));
                ctx.vlan = true;
            }
            a
        }
        "mod_nw_tos" => {
            let tos: u8 = parse_num(need("TOS")?, "a TOS byte with the two ECN bits clear")?;
            if tos & 3 != 0 {
                return Err(TextError::new(
                    tok,
                    "a TOS byte with the two ECN bits clear",
                ));
            }
            set_field(OxmField::IpDscp, (tos >> 2) as u128, None)
        }
        "mod_nw_ecn" => {
            let ecn: u8 = parse_num(need("ECN")?, "an ECN value (0-3)")?;
            if ecn > 3 {
                return Err(TextError::new(tok, "an ECN value (0-3)"));
            }
            set_field(OxmField::IpEcn, ecn as u128, None)
        }
        "mod_tp_src" | "mod_tp_dst" => {
            let src = key == "mod_tp_src";
            let field =
                match ctx.proto {
                    Some(6) => [OxmField::TcpDst, OxmField::TcpSrc][src as usize],
                    Some(17) => [OxmField::UdpDst, OxmField::UdpSrc][src as usize],
                    Some(132) => [OxmField::SctpDst, OxmField::SctpSrc][src as usize],
                    _ => return Err(TextError::new(
                        tok,
                        "tcp, udp or sctp (or nw_proto=N) in the flow's match, to say which port",
                    )),
                };
            let port: u16 = parse_num(need("PORT")?, "a port number (0-65535)")?;
            set_field(field, port as u128, None)
        }
        "set_tunnel" | "set_tunnel64" => {
            let id: u64 = parse_num(need("TUNNEL_ID")?, "a 64-bit tunnel id")?;
            if key == "set_tunnel" && id > u32::MAX as u64 {
                return Err(TextError::new(
                    tok,
                    "a 32-bit tunnel id (set_tunnel64 for more)",
                ));
            }
            set_field(OxmField::TunnelId, id as u128, None)
        }
        _ => {
            return Err(TextError::new(
                tok,
                "an action (output:N, set_field:V->F, group:N, push_vlan:T, ...)",
            ))
        }
    };
    Ok(a)
}

/// Open vSwitch's own words for actions sluice holds otherwise (kept out
/// of [`parse_one`], whose frame every nesting level of `clone(...)`
/// pays for).
#[inline(never)]
fn parse_ovs_word(
    tok: &str,
    key: &str,
    arg: &str,
    out: &mut Vec<Action>,
) -> Result<Action, TextError> {
    Ok(match key {
        // Open vSwitch's enqueue (1.0's ENQUEUE): the queue for this one
        // output, as it writes it to 1.1 and later peers.
        "enqueue" => {
            let a = arg;
            let (p, q) = a
                .split_once([':', ','])
                .ok_or_else(|| TextError::new(tok, "enqueue:PORT:QUEUE or enqueue(PORT,QUEUE)"))?;
            let port = parse_port(p.trim())?;
            let q = q.trim();
            let q = q.strip_prefix('q').unwrap_or(q);
            out.push(Action::SetQueue(parse_num(q, "a queue id")?));
            out.push(Action::Output {
                port,
                max_len: u16::MAX,
            });
            Action::PopQueue
        }
        // Open vSwitch's set_vlan_vid/_pcp: set the tag's fields without
        // pushing one (mod_vlan_vid/_pcp push one when there is none).
        "set_vlan_vid" => {
            let vid: u16 = parse_num(arg, "a VLAN id (0-4095)")?;
            if vid > 0xfff {
                return Err(TextError::new(tok, "a VLAN id (0-4095)"));
            }
            set_field(OxmField::VlanVid, (vid | OFPVID_PRESENT) as u128, None)
        }
        "set_vlan_pcp" => {
            let pcp: u8 = parse_num(arg, "a VLAN priority (0-7)")?;
            if pcp > 7 {
                return Err(TextError::new(tok, "a VLAN priority (0-7)"));
            }
            set_field(OxmField::VlanPcp, pcp as u128, None)
        }
        // Open vSwitch's set_mpls_label/_tc: set_field of the top label's.
        "set_mpls_label" => {
            let label: u32 = parse_num(arg, "an MPLS label (0-1048575)")?;
            if label > 0xf_ffff {
                return Err(TextError::new(tok, "an MPLS label (0-1048575)"));
            }
            set_field(OxmField::MplsLabel, label as u128, None)
        }
        "set_mpls_tc" => {
            let tc: u8 = parse_num(arg, "an MPLS traffic class (0-7)")?;
            if tc > 7 {
                return Err(TextError::new(tok, "an MPLS traffic class (0-7)"));
            }
            set_field(OxmField::MplsTc, tc as u128, None)
        }
        _ => unreachable!("parse_one passes only the words above"),
    })
}

/// Parses a comma-separated action list; `drop` alone is the empty list.
/// No match is known (see [`Ctx::UNKNOWN`]).
pub fn parse_actions(s: &str) -> Result<Vec<Action>, TextError> {
    let mut ctx = Ctx::UNKNOWN;
    parse_actions_ctx(s, &mut ctx)
}

pub(crate) fn parse_actions_ctx(s: &str, ctx: &mut Ctx) -> Result<Vec<Action>, TextError> {
    let toks = split_top(s);
    if toks.len() == 1 && toks[0].eq_ignore_ascii_case("drop") {
        return Ok(Vec::new());
    }
    let mut v = Vec::with_capacity(toks.len());
    for t in toks {
        if t.eq_ignore_ascii_case("drop") {
            return Err(TextError::new(t, "drop only as the sole action"));
        }
        parse_action_into(t, ctx, &mut v)?;
    }
    Ok(v)
}

/// Parses the `actions=` part of a flow into instructions, in canonical
/// order. No match is known (see [`Ctx::UNKNOWN`]).
pub fn parse_instructions(s: &str) -> Result<Vec<Instruction>, TextError> {
    parse_instructions_ctx(s, Ctx::UNKNOWN)
}

/// As [`parse_instructions`], knowing the flow's match through `ctx`.
pub(crate) fn parse_instructions_ctx(s: &str, ctx: Ctx) -> Result<Vec<Instruction>, TextError> {
    let mut apply_ctx = ctx;
    let toks = split_top(s);
    if toks.len() == 1 && toks[0].eq_ignore_ascii_case("drop") {
        return Ok(Vec::new());
    }
    let mut meter = None;
    let mut apply = Vec::new();
    let mut clear = false;
    let mut write: Option<Vec<Action>> = None;
    let mut metadata = None;
    let mut goto = None;
    let once = |tok: &str, taken: bool| {
        if taken {
            Err(TextError::new(tok, "each instruction at most once"))
        } else {
            Ok(())
        }
    };
    // ovs-ofctl takes the instructions in the order OpenFlow 1.1+ runs
    // them only: meter, actions (apply), clear_actions, write_actions,
    // write_metadata, goto_table.
    const ORDER: [&str; 6] = [
        "meter",
        "apply_actions",
        "clear_actions",
        "write_actions",
        "write_metadata",
        "goto_table",
    ];
    let mut last = 0;
    for tok in toks {
        let (key, arg) = action_key_value(tok);
        let stage = match key {
            "meter" => 0,
            "goto_table" => 5,
            "write_metadata" => 4,
            "clear_actions" if arg.is_none() => 2,
            _ if tok.starts_with("write_actions(") && tok.ends_with(')') => 3,
            _ => 1,
        };
        if stage < last {
            return Err(TextError::new(
                tok,
                format!(
                    "{} before {} (instructions in the order meter, actions, clear_actions, \
                     write_actions, write_metadata, goto_table, as ovs-ofctl takes them)",
                    ORDER[stage], ORDER[last]
                ),
            ));
        }
        last = stage;
        match key {
            "meter" => {
                once(tok, meter.is_some())?;
                meter = Some(parse_num(arg.unwrap_or(""), "meter:METER_ID")?);
            }
            "goto_table" => {
                once(tok, goto.is_some())?;
                goto = Some(parse_num(arg.unwrap_or(""), "goto_table:TABLE (0-254)")?);
            }
            "write_metadata" => {
                once(tok, metadata.is_some())?;
                let a = arg.unwrap_or("");
                let (v, m) = match a.split_once('/') {
                    Some((v, m)) => (v, Some(m)),
                    None => (a, None),
                };
                let v: u64 = parse_num(v, "write_metadata:VALUE[/MASK]")?;
                let m: u64 = m.map_or(Ok(u64::MAX), |m| parse_num(m, "a 64-bit mask"))?;
                metadata = Some((v, m));
            }
            "clear_actions" if arg.is_none() => {
                once(tok, clear)?;
                clear = true;
            }
            _ if tok.starts_with("write_actions(") && tok.ends_with(')') => {
                once(tok, write.is_some())?;
                // The action set runs after the apply-actions: start from
                // the state they leave.
                let mut c = apply_ctx;
                write = Some(parse_actions_ctx(
                    &tok["write_actions(".len()..tok.len() - 1],
                    &mut c,
                )?);
            }
            "drop" => return Err(TextError::new(tok, "drop only as the sole action")),
            _ => parse_action_into(tok, &mut apply_ctx, &mut apply)?,
        }
    }
    let mut v = Vec::new();
    if let Some(m) = meter {
        v.push(Instruction::Meter(m));
    }
    if !apply.is_empty() {
        v.push(Instruction::ApplyActions(apply));
    }
    if clear {
        v.push(Instruction::ClearActions);
    }
    if let Some(w) = write {
        v.push(Instruction::WriteActions(w));
    }
    if let Some((metadata, mask)) = metadata {
        v.push(Instruction::WriteMetadata { metadata, mask });
    }
    if let Some(t) = goto {
        v.push(Instruction::GotoTable(t));
    }
    Ok(v)
}
