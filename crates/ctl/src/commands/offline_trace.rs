//! offline-trace: packets through a pipeline built from flow text, with no
//! switch: the pipeline of the switch (`pipeline::Pipeline`) and the
//! datapath's path through it (`Worker::process`), in this process. The
//! sluice side of the differential test against Open vSwitch's
//! `ofproto/trace` (scripts/ovs_diff.py).
//!
//! The FILEs are read in order as one text (a flows file then a packets
//! file, or one file holding both), a line each:
//!
//! - `case NAME`: a new case (a new, empty pipeline) named NAME; the lines
//!   before the first `case` are a case named `-`;
//! - `group_id=...`: a group, as `ovs-ofctl add-group(s)` takes it;
//! - `packet IN_PORT PACKET`: a frame received on IN_PORT, PACKET in hex
//!   or described as `trace` takes it (a match: `tcp,tp_dst=80`);
//! - `port N KEY=VALUE...`: port N's VLAN settings, as `add-port` takes
//!   them (`tag=10`, `trunks=10,20`, `vlan_mode=native-untagged`), for
//!   NORMAL (with `--normal`);
//! - `fdb PORT VLAN MAC`: an address NORMAL has learned (with `--normal`);
//! - anything else: a flow, as `ovs-ofctl add-flow(s)` takes it;
//! - blank lines and `#` comments are skipped.
//!
//! A case's groups are added first, then its flows, each in file order, as
//! the switch takes them from a controller: parsed, encoded as an OpenFlow
//! 1.3 message, decoded, validated (`Message::validate`) and applied
//! (`Pipeline::group_mod`, `Pipeline::flow_mod_with_match`). The ports
//! `--ports` names are up. Then each packet runs through
//! `Worker::process` on the case's snapshot.
//!
//! Output, one JSON object a line:
//! - `{"case":C,"error":"line L: ERROR: TEXT"}` for a flow or group
//!   refused (the rest of the case still runs);
//! - `{"case":C,"packet":I,"in_port":P,"outputs":[...]}` per packet (I
//!   counts from 0 in its case), the outputs in order, each
//!   `{"port":2,"frame":HEX}`; reserved ports by name (`"LOCAL"`,
//!   `"NORMAL"`, `"CONTROLLER"`, the last with `"reason"`, `"table"`,
//!   `"max_len"` and `"controller_id"`).
//!   An output to a port number the switch lacks is left out (the
//!   datapath has nowhere to send it). With `--normal`, a NORMAL output
//!   is replaced by the outputs the datapath's NORMAL gives it
//!   (`datapath::normal::switch`, as `trace` runs it: learning nothing),
//!   each frame with the VLAN header it leaves that port with, and
//!   `"normal"` says why (NORMAL's line of the trace). `"check"` is added when the same
//!   packet run again (now in the exact-match cache) or traced
//!   (`pipeline::trace`) went elsewhere, with those outputs; `"steps"`
//!   holds the trace's text with `--steps`; `"datapath_actions"` the
//!   trace's `Datapath actions:` (NORMAL unresolved), one per block (the
//!   first pass, then each recirculation after a `ct(table=N)`).

use std::fmt::Write as _;

use bytes::Bytes;
use datapath::normal::Egress;
use datapath::{MacTable, PortRequest, PortVlans, VlanConfig};
use ofp::port::port_no;
use ofp::text::{parse_flow_mod, parse_group_mod};
use ofp::Message;
use pipeline::{Config, Output as Out, Pipeline, PortState, Worker};

use super::parse_flows::NameMap;
use super::{usage, Output, Result};

#[derive(Debug)]
struct Case {
    name: String,
    groups: Vec<(usize, String)>,
    flows: Vec<(usize, String)>,
    packets: Vec<(u32, Vec<u8>)>,
    /// Ports' VLAN settings (`port` lines).
    vlans: Vec<(u32, VlanConfig)>,
    /// Learned addresses (`fdb` lines): port, VLAN, MAC.
    fdb: Vec<(u32, u16, u64)>,
}

impl Case {
    fn new(name: &str) -> Case {
        Case {
            name: name.to_string(),
            groups: Vec::new(),
            flows: Vec::new(),
            packets: Vec::new(),
            vlans: Vec::new(),
            fdb: Vec::new(),
        }
    }
}

/// NORMAL as the datapath runs it, for a case: its ports' VLAN settings
/// and a MAC table holding the case's `fdb` lines.
struct Normal {
    macs: MacTable,
    vlans: PortVlans,
}

/// When the `fdb` addresses were learned and the packets run (ns).
const NORMAL_NOW: u64 = 1_000_000_000;

impl Normal {
    fn of(case: &Case) -> Normal {
        let macs = MacTable::default();
        for &(port, vlan, mac) in &case.fdb {
            macs.learn(vlan, mac, port, NORMAL_NOW);
        }
        let vlans = case
            .vlans
            .iter()
            .fold(PortVlans::default(), |t, (p, c)| t.with(*p, c));
        Normal { macs, vlans }
    }

    /// `outs` with each NORMAL output replaced by where NORMAL sends it
    /// (frames as they leave each port); and NORMAL's words.
    fn resolve(
        &self,
        snap: &pipeline::Snapshot,
        in_port: u32,
        outs: &[Out],
        final_frame: &[u8],
    ) -> (Vec<Out>, Vec<String>) {
        let mut out = Vec::new();
        let mut why = Vec::new();
        for o in outs {
            if o.port != port_no::NORMAL {
                out.push(o.clone());
                continue;
            }
            let frame = o.data.as_deref().unwrap_or(final_frame);
            let Some(hop) = self
                .macs
                .explain(&self.vlans, &snap.ports, frame, in_port, NORMAL_NOW)
            else {
                continue;
            };
            for (p, h) in &hop.outs {
                let mut b = Vec::new();
                Egress::between(hop.came, *h).write(frame, &mut b);
                out.push(Out {
                    port: *p,
                    data: Some(b),
                    controller: None,
                    ..o.clone()
                });
            }
            why.push(hop.why);
        }
        (out, why)
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .fold(String::with_capacity(b.len() * 2), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}

/// A MAC address as `02:00:00:00:00:0a`.
fn mac(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    parts.iter().try_fold(0u64, |a, p| {
        (p.len() == 2)
            .then(|| u8::from_str_radix(p, 16).ok())
            .flatten()
            .map(|b| a << 8 | b as u64)
    })
}

/// Reads `--ports`: N (1..=N) or numbers and ranges (`1-4,10`).
fn parse_ports(s: &str) -> std::result::Result<Vec<u32>, String> {
    let num = |t: &str| -> std::result::Result<u32, String> {
        match t.trim().parse::<u32>() {
            Ok(n) if (1..=port_no::MAX).contains(&n) => Ok(n),
            _ => Err(format!(
                "`{t}`: expected a port number (1 to {})",
                port_no::MAX
            )),
        }
    };
    if !s.contains([',', '-']) {
        return Ok((1..=num(s)?).collect());
    }
    let mut out = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(num(a)?..=num(b)?),
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The outputs as JSON objects, those to ports the switch has.
fn describe(outs: &[Out], final_frame: &[u8], ports: &[u32]) -> Vec<String> {
    outs.iter()
        .filter(|o| o.port > port_no::MAX || ports.binary_search(&o.port).is_ok())
        .map(|o| {
            let port = match o.port {
                p if p > port_no::MAX => json_str(&ofp::text::format_port(p)),
                p => p.to_string(),
            };
            let mut s = format!("{{\"port\":{port}");
            if let Some(c) = &o.controller {
                let reason = json_str(&c.reason.to_string());
                let _ = write!(
                    s,
                    ",\"reason\":{reason},\"table\":{},\"max_len\":{},\"controller_id\":{}",
                    c.table_id, c.max_len, c.controller_id
                );
            }
            let frame = hex(o.data.as_deref().unwrap_or(final_frame));
            let _ = write!(s, ",\"frame\":\"{frame}\"}}");
            s
        })
        .collect()
}

/// Adds a flow or a group as the switch takes one from the wire.
fn apply(p: &mut Pipeline, text: &str, group: bool) -> std::result::Result<(), String> {
    let msg = if group {
        Message::GroupMod(parse_group_mod(text).map_err(|e| e.to_string())?)
    } else {
        Message::FlowMod(parse_flow_mod(text).map_err(|e| e.to_string())?)
    };
    let bytes = msg
        .try_to_bytes(1)
        .map_err(|e| format!("does not encode: {} bytes", e.len))?;
    let (_, msg) = Message::decode(&Bytes::from(bytes.clone())).map_err(|e| e.to_string())?;
    msg.validate().map_err(|e| e.to_string())?;
    match msg {
        Message::FlowMod(fm) => p
            .flow_mod_with_match(&fm, ofp::FlowMod::match_bytes(&bytes), 0)
            .map(drop),
        Message::GroupMod(gm) => p.group_mod(&gm, 0).map(drop),
        _ => unreachable!("parsed as a flow or a group"),
    }
    .map_err(|e| e.to_string())
}

fn run_case(case: &Case, ports: &[u32], steps: bool, normal: bool, out: &mut String) {
    let mut p = Pipeline::new(Config::default());
    for n in ports {
        p.set_port(PortState::up(*n));
    }
    let name = json_str(&case.name);
    for (group, list) in [(true, &case.groups), (false, &case.flows)] {
        for (line, text) in list {
            if let Err(e) = apply(&mut p, text, group) {
                let msg = json_str(&format!("line {line}: {e}: {text}"));
                let _ = writeln!(out, "{{\"case\":{name},\"error\":{msg}}}");
            }
        }
    }
    let snap = p.snapshot();
    let mut worker = Worker::new(0);
    let nl = normal.then(|| Normal::of(case));
    // NORMAL resolved (with --normal), and its words.
    let resolved = |outs: &[Out], f: &[u8], in_port: u32| match &nl {
        Some(n) => n.resolve(&snap, in_port, outs, f),
        None => (outs.to_vec(), Vec::new()),
    };
    for (i, (in_port, frame)) in case.packets.iter().enumerate() {
        let mut f = frame.clone();
        let outs = worker.process(&snap, *in_port, &mut f, 1_000).to_vec();
        let (outs, why) = resolved(&outs, &f, *in_port);
        let first = describe(&outs, &f, ports);
        // Again, now that the exact-match cache holds the packet.
        let mut g = frame.clone();
        let outs = worker.process(&snap, *in_port, &mut g, 2_000).to_vec();
        let again = describe(&resolved(&outs, &g, *in_port).0, &g, ports);
        let mut t = pipeline::trace::trace(&snap, *in_port, frame);
        t.set_ports(ports.to_vec());
        let traced = describe(
            &resolved(&t.outputs, &t.final_frame, *in_port).0,
            &t.final_frame,
            ports,
        );
        let _ = write!(
            out,
            "{{\"case\":{name},\"packet\":{i},\"in_port\":{in_port},\"outputs\":[{}]",
            first.join(",")
        );
        let mut checks = Vec::new();
        if again != first {
            checks.push(format!("\"cached\":[{}]", again.join(",")));
        }
        if traced != first {
            checks.push(format!("\"traced\":[{}]", traced.join(",")));
        }
        if !checks.is_empty() {
            let _ = write!(out, ",\"check\":{{{}}}", checks.join(","));
        }
        if !why.is_empty() {
            let _ = write!(out, ",\"normal\":{}", json_str(&why.join("\n")));
        }
        let dp: Vec<String> = t
            .datapath_actions_blocks()
            .iter()
            .map(|a| json_str(a))
            .collect();
        let _ = write!(out, ",\"datapath_actions\":[{}]", dp.join(","));
        if steps {
            let text = match &nl {
                Some(n) => t.text_with(*in_port, &|o: &Out| {
                    let data = o.data.as_deref().unwrap_or(&t.final_frame);
                    n.macs
                        .explain(&n.vlans, &snap.ports, data, *in_port, NORMAL_NOW)
                }),
                None => t.text(*in_port),
            };
            let _ = write!(out, ",\"steps\":{}", json_str(&text));
        }
        out.push_str("}\n");
    }
}

/// Reads the cases of `text` (one file's lines) into `cases`.
fn read_cases(
    file: &str,
    text: &str,
    map: &NameMap,
    cases: &mut Vec<Case>,
) -> std::result::Result<(), String> {
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let at = n + 1;
        if let Some(name) = l.strip_prefix("case ") {
            cases.push(Case::new(name.trim()));
            continue;
        }
        let case = cases.last_mut().expect("one case at least");
        if let Some(rest) = l.strip_prefix("port ") {
            let words: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
            let no = words
                .first()
                .and_then(|w| w.parse::<u32>().ok())
                .ok_or_else(|| format!("{file}:{at}: port: expected `port N KEY=VALUE...`"))?;
            // add-port's words, checked as add-port checks them.
            let mut w = vec!["p".to_string()];
            w.extend_from_slice(&words[1..]);
            let spec = PortRequest::from_words(&w, &[])
                .and_then(|r| r.check(no, datapath::Backend::Local))
                .map_err(|e| format!("{file}:{at}: port {no}: {}", e.in_words()))?;
            case.vlans.push((no, spec.vlan));
        } else if let Some(rest) = l.strip_prefix("fdb ") {
            let w: Vec<&str> = rest.split_whitespace().collect();
            let parsed = match w[..] {
                [p, v, m] => (|| {
                    let port = map.port_or(p);
                    Some((
                        ofp::text::parse_port(&port).ok()?,
                        v.parse::<u16>().ok().filter(|&v| v <= 4095)?,
                        mac(m)?,
                    ))
                })(),
                _ => None,
            };
            case.fdb.push(parsed.ok_or_else(|| {
                format!("{file}:{at}: fdb: expected `fdb PORT VLAN MAC` (VLAN 0-4095)")
            })?);
        } else if let Some(rest) = l.strip_prefix("packet ") {
            let rest = rest.trim_start();
            let (port, packet) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let port = map.port_or(port);
            let in_port =
                ofp::text::parse_port(&port).map_err(|e| format!("{file}:{at}: packet: {e}"))?;
            let d = crate::frame::parse(packet).map_err(|e| format!("{file}:{at}: {e}"))?;
            case.packets.push((in_port, d.frame));
        } else if l.starts_with("group_id=") {
            case.groups.push((at, l.to_string()));
        } else {
            case.flows.push((at, map.substitute(l)));
        }
    }
    Ok(())
}

/// offline-trace FILE... [--ports PORTS] [--name-map FILE] [--steps]
/// [--normal].
pub(super) fn offline_trace(
    files: &[String],
    ports: &str,
    name_map: Option<&str>,
    steps: bool,
    normal: bool,
) -> Result<Output> {
    let read = |f: &str| {
        if f == "-" {
            std::io::read_to_string(std::io::stdin()).or_else(|e| usage("stdin", e))
        } else {
            std::fs::read_to_string(f).or_else(|e| usage(f, e))
        }
    };
    let ports = parse_ports(ports).or_else(|e| usage("--ports", e))?;
    let map = match name_map {
        Some(f) => NameMap::parse(&read(f)?).or_else(|e| usage(&format!("--name-map {f}"), e))?,
        None => NameMap::default(),
    };
    let mut cases = vec![Case::new("-")];
    for f in files {
        read_cases(f, &read(f)?, &map, &mut cases).map_err(super::CmdError::Usage)?;
    }
    let mut out = String::new();
    for (i, case) in cases.iter().enumerate() {
        let empty = case.groups.is_empty() && case.flows.is_empty() && case.packets.is_empty();
        if i == 0 && empty {
            continue;
        }
        run_case(case, &ports, steps, normal, &mut out);
    }
    Ok(Output {
        text: out,
        status: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> String {
        let mut cases = vec![Case::new("-")];
        read_cases("t", text, &NameMap::default(), &mut cases).unwrap();
        let mut out = String::new();
        for c in &cases[1..] {
            run_case(c, &[1, 2, 3, 4], false, false, &mut out);
        }
        out
    }

    #[test]
    fn outputs_in_order_with_the_frame_as_it_left() {
        let out = run("case a\n\
             group_id=7,type=all,bucket=output:4\n\
             priority=1,in_port=1,actions=output:2,mod_dl_src:02:00:00:00:00:09,resubmit(,1)\n\
             table=1,priority=1,actions=group:7,controller,output:9\n\
             packet 1 020000000002020000000001 88b5 0000\n");
        let orig = "02000000000202000000000188b50000";
        let modified = "02000000000202000000000988b50000";
        assert_eq!(
            out,
            format!(
                "{{\"case\":\"a\",\"packet\":0,\"in_port\":1,\"outputs\":[\
                 {{\"port\":2,\"frame\":\"{orig}\"}},{{\"port\":4,\"frame\":\"{modified}\"}},\
                 {{\"port\":\"CONTROLLER\",\"reason\":\"action\",\"table\":1,\"max_len\":65535,\"controller_id\":0,\"frame\":\"{modified}\"}}],\
                 \"datapath_actions\":[\"2,set(eth(src=02:00:00:00:00:09)),4,controller(reason=action,table=1)\"]}}\n"
            )
        );
    }

    #[test]
    fn ports_as_a_number_or_a_list() {
        assert_eq!(parse_ports("3"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_ports("10,1-3,2"), Ok(vec![1, 2, 3, 10]));
        assert!(parse_ports("0").is_err());
        assert!(parse_ports("1,x").is_err());
    }

    #[test]
    fn refusals_are_reported_and_the_case_goes_on() {
        let out = run("case b\ntable=3,actions=goto_table:1\nactions=output:3\npacket 2 tcp\n");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(
            lines[0].starts_with("{\"case\":\"b\",\"error\":\"line 2: "),
            "{out}"
        );
        assert!(lines[1].contains("\"outputs\":[{\"port\":3,"), "{out}");
        let mut cases = vec![Case::new("-")];
        let e = read_cases("t", "packet x 00", &NameMap::default(), &mut cases).unwrap_err();
        assert!(e.starts_with("t:1: packet"), "{e}");
    }

    #[test]
    fn normal_is_resolved_with_the_ports_vlans_and_the_fdb() {
        let mut cases = vec![Case::new("-")];
        read_cases(
            "t",
            "case v\n\
             port 1 tag=10\nport 2 tag=20\nport 3 trunks=10,20\n\
             fdb 3 20 02:00:00:00:00:0b\n\
             actions=normal\n\
             packet 1 ffffffffffff0200000000aa88b5\n\
             packet 2 02000000000b0200000000aa88b5\n\
             packet 1 ffffffffffff0200000000aa8100000a88b5\n",
            &NameMap::default(),
            &mut cases,
        )
        .unwrap();
        let mut out = String::new();
        run_case(&cases[1], &[1, 2, 3, 4], false, true, &mut out);
        let lines: Vec<&str> = out.lines().collect();
        // Broadcast from access port 1: the trunk, tagged VID 10, and
        // port 4 (no settings: a trunk of all), tagged too.
        assert!(
            lines[0].contains(
                "\"outputs\":[{\"port\":3,\"frame\":\"ffffffffffff0200000000aa8100000a88b5\"},\
                 {\"port\":4,\"frame\":\"ffffffffffff0200000000aa8100000a88b5\"}]"
            ),
            "{out}"
        );
        // To the address learned in VLAN 20 on the trunk.
        assert!(
            lines[1].contains(
                "\"outputs\":[{\"port\":3,\"frame\":\"02000000000b0200000000aa8100001488b5\"}]"
            ),
            "{out}"
        );
        assert!(lines[1].contains("learned on port 3 in VLAN 20"), "{out}");
        // A tagged frame on an access port is dropped.
        assert!(lines[2].contains("\"outputs\":[]"), "{out}");
        assert!(!out.contains("\"check\""), "{out}");
        let mut cases = vec![Case::new("-")];
        let e = read_cases("t", "port 1 tag=5000", &NameMap::default(), &mut cases).unwrap_err();
        assert!(e.starts_with("t:1: port 1: tag=5000:"), "{e}");
        let e = read_cases(
            "t",
            "fdb 1 4096 02:00:00:00:00:01",
            &NameMap::default(),
            &mut cases,
        )
        .unwrap_err();
        assert!(e.starts_with("t:1: fdb"), "{e}");
    }
}
