//! The unixctl commands: their table (names, usage, argument counts, as
//! `list-commands` shows them) and what each does, over the [`Switch`]
//! trait (the daemon's bridges; a fake one in the tests).
//!
//! Contract: a command answers `Ok(text)` or `Err(text)` (ovs-appctl
//! prints the first on stdout and exits 0, the second on stderr and
//! exits 2); the text of argument and bridge errors is Open vSwitch's
//! where an integration might look at it ("no such bridge", "... is not a
//! valid command ..."). A refused command changes nothing. Commands run
//! on the control thread, between two rounds of the OpenFlow side, so
//! each sees a consistent switch.

use super::coverage::Coverage;
use super::vlog;

/// What the commands need of the daemon.
pub trait Switch {
    /// The bridges' names, in order.
    fn bridges(&self) -> Vec<String>;
    /// Runs one of sluice's management commands (`fdb-show`,
    /// `dump-conntrack`...; what `sluice-ctl` sends) on `bridge`.
    fn command(&mut self, bridge: &str, words: &[String]) -> Result<String, String>;
    /// A port's number from its name.
    fn port_number(&self, bridge: &str, name: &str) -> Option<u32>;
    /// sluice's trace of `frame` arriving on `in_port` (the text of
    /// `sluice-ctl trace`), traced as `opts` say (with `generate`, what
    /// the packet's `learn` actions teach is added).
    fn trace(
        &mut self,
        bridge: &str,
        in_port: u32,
        frame: &[u8],
        opts: &pipeline::trace::Options,
    ) -> String;
    /// Every flow, one line each, in `bridge/dump-flows`'s shape.
    fn dump_flows(&mut self, bridge: &str) -> String;
    /// The counters' totals, named.
    fn counters(&self) -> Vec<(String, u64)>;
    /// What the switch holds, named (`memory/show`).
    fn memory(&self) -> Vec<(String, u64)>;
    /// The running log filter.
    fn log_filter(&self) -> String;
    /// Sets the log filter; the new one as `tracing` reads it.
    fn set_log_filter(&mut self, spec: &str) -> Result<String, String>;
    /// The most verbose level on for `module`.
    fn log_level(&self, module: &str) -> vlog::Level;
    /// Each bridge's datapath: its ports and lookup counters
    /// (`dpctl/show`, `dpif/show`, `upcall/show`).
    fn datapath_views(&self) -> Vec<DatapathView>;
}

/// One bridge's datapath, as `dpctl/show` and `dpif/show` read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatapathView {
    pub bridge: String,
    /// Table lookups the workers' exact-match caches answered.
    pub hits: u64,
    /// Table lookups the caches missed (or skipped while bypassed).
    pub misses: u64,
    /// OpenFlow rules in the bridge's tables.
    pub rules: u64,
    /// Worker threads.
    pub workers: u64,
    pub ports: Vec<DatapathPort>,
}

/// A port of a [`DatapathView`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatapathPort {
    /// Its OpenFlow number (sluice's datapath numbers are the same).
    pub port_no: u32,
    pub name: String,
    /// Open vSwitch's type name: `system`, `internal`, `vxlan`, `geneve`,
    /// `patch` (and sluice's own `pcap`).
    pub kind: &'static str,
}

/// One command: name, usage, and how many arguments it takes.
pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub min: usize,
    pub max: usize,
}

const MANY: usize = usize::MAX;

/// The commands, sorted by name (`list-commands` prints them so).
pub const COMMANDS: &[Command] = &[
    cmd("bridge/dump-flows", "bridge", 1, 1),
    cmd("coverage/show", "", 0, 0),
    cmd("dpctl/del-flows", "[dp]", 0, 1),
    cmd("dpctl/dump-conntrack", "[-m] [-s] [dp] [zone=N]", 0, 4),
    cmd(
        "dpctl/dump-flows",
        "[-m] [--names | --no-names] [dp] [filter=..]",
        0,
        6,
    ),
    cmd(
        "dpctl/flush-conntrack",
        "[dp] [zone=N] [ct-orig-tuple] [ct-reply-tuple]",
        0,
        4,
    ),
    cmd("dpctl/show", "[-m] [dp...]", 0, MANY),
    cmd("dpif/show", "", 0, 0),
    cmd("exit", "[--cleanup]", 0, 1),
    cmd("fdb/flush", "[bridge]", 0, 1),
    cmd("fdb/show", "bridge", 1, 1),
    cmd("list-commands", "", 0, 0),
    cmd("memory/show", "", 0, 0),
    cmd("ofproto/list", "", 0, 0),
    cmd(
        "ofproto/trace",
        "{[dp_name] odp_flow | bridge br_flow} [OPTIONS...] [-generate|packet]",
        1,
        MANY,
    ),
    cmd("upcall/show", "", 0, 0),
    cmd("version", "", 0, 0),
    cmd("vlog/list", "", 0, 0),
    cmd("vlog/set", "{spec | PATTERN:destination:pattern}", 0, MANY),
];

const fn cmd(name: &'static str, usage: &'static str, min: usize, max: usize) -> Command {
    Command {
        name,
        usage,
        min,
        max,
    }
}

/// What a command asks of the daemon beyond its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Nothing,
    /// Stop, as on SIGTERM, once the answer is sent.
    Exit,
}

/// The state commands keep between calls.
#[derive(Default)]
pub struct State {
    pub coverage: Coverage,
}

/// Runs `method` with `params` (as they came: unixctl's arguments are
/// JSON strings). The answer's text ends with a newline unless empty, as
/// Open vSwitch's does.
pub fn run(
    sw: &mut dyn Switch,
    state: &State,
    method: &str,
    params: &[serde_json::Value],
    now_ns: u64,
) -> (Result<String, String>, After) {
    let mut after = After::Nothing;
    let r = check(method, params).and_then(|args| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = dispatch(sw, state, method, &a, now_ns);
        if method == "exit" && r.is_ok() {
            after = After::Exit;
        }
        r
    });
    let nl = |mut s: String| {
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s
    };
    (r.map(nl).map_err(nl), after)
}

/// The command exists and its arguments are strings, as many as it takes.
fn check(method: &str, params: &[serde_json::Value]) -> Result<Vec<String>, String> {
    let Some(c) = COMMANDS.iter().find(|c| c.name == method) else {
        return Err(format!(
            "\"{method}\" is not a valid command (use \"list-commands\" to see a list of valid commands)"
        ));
    };
    if params.len() < c.min {
        return Err(format!(
            "\"{method}\" command requires at least {} arguments",
            c.min
        ));
    }
    if params.len() > c.max {
        return Err(format!(
            "\"{method}\" command takes at most {} arguments",
            c.max
        ));
    }
    params
        .iter()
        .map(|p| p.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()
        .ok_or_else(|| format!("\"{method}\" command has non-string argument"))
}

fn words(ws: &[&str]) -> Vec<String> {
    ws.iter().map(|w| w.to_string()).collect()
}

fn dispatch(
    sw: &mut dyn Switch,
    state: &State,
    method: &str,
    a: &[&str],
    now_ns: u64,
) -> Result<String, String> {
    let bridge = |sw: &dyn Switch, name: &str| {
        if sw.bridges().iter().any(|b| b == name) {
            Ok(name.to_string())
        } else {
            Err("no such bridge".to_string())
        }
    };
    match method {
        "version" => Ok(format!(
            "ovs-vswitchd (sluice) {}",
            env!("CARGO_PKG_VERSION")
        )),
        "list-commands" => {
            let mut s = String::from("The available commands are:\n");
            for c in COMMANDS {
                s.push_str(&format!("  {:<23} {}\n", c.name, c.usage));
            }
            Ok(s)
        }
        "exit" => match a.first() {
            None | Some(&"--cleanup") => Ok(String::new()),
            Some(x) => Err(format!("exit: unexpected {x:?} (only --cleanup)")),
        },
        "ofproto/list" => Ok(sw.bridges().iter().map(|b| format!("{b}\n")).collect()),
        "fdb/show" => {
            let b = bridge(sw, a[0])?;
            sw.command(&b, &words(&["fdb-show"]))
        }
        "fdb/flush" => {
            let targets = match a.first() {
                Some(b) => vec![bridge(sw, b)?],
                None => sw.bridges(),
            };
            for b in targets {
                sw.command(&b, &words(&["fdb-flush"]))?;
            }
            Ok("table successfully flushed".into())
        }
        "bridge/dump-flows" => {
            let b = bridge(sw, a[0])?;
            Ok(sw.dump_flows(&b))
        }
        "dpctl/dump-conntrack" | "dpctl/flush-conntrack" => conntrack(sw, method, a),
        "dpctl/show" => dpctl_show(sw, a),
        "dpif/show" => Ok(dpif_show(&sw.datapath_views())),
        "upcall/show" => Ok(upcall_show(&sw.datapath_views())),
        "dpctl/dump-flows" | "dpctl/del-flows" => Err(NO_DATAPATH_FLOWS.to_string()),
        "ofproto/trace" => trace(sw, a),
        "coverage/show" => Ok(state.coverage.show(now_ns, &sw.counters())),
        "memory/show" => Ok(sw
            .memory()
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(" ")),
        "vlog/list" => Ok(vlog::list(&|m| sw.log_level(m))),
        "vlog/set" => {
            // Every spec read before any is applied: all or nothing.
            let settings = a
                .iter()
                .map(|s| vlog::parse(s))
                .collect::<Result<Vec<_>, _>>()?;
            let settings = if settings.is_empty() {
                vec![vlog::parse("dbg")?]
            } else {
                settings
            };
            let mut filter = sw.log_filter();
            for s in &settings {
                filter = vlog::apply(&filter, s);
            }
            sw.set_log_filter(&filter).map(|_| String::new())
        }
        _ => Err(format!("\"{method}\": not implemented")),
    }
}

/// The bridges a `dp` argument names: a bridge, `netdev@BRIDGE`, or Open
/// vSwitch's one userspace datapath (`ovs-netdev`, `netdev@ovs-netdev`:
/// every bridge).
fn datapaths(sw: &dyn Switch, dp: Option<&str>) -> Result<Vec<String>, String> {
    let all = sw.bridges();
    let Some(dp) = dp else {
        return Ok(all);
    };
    let name = dp.strip_prefix("netdev@").unwrap_or(dp);
    if name == "ovs-netdev" {
        return Ok(all);
    }
    if all.iter().any(|b| b == name) {
        return Ok(vec![name.to_string()]);
    }
    Err(format!(
        "datapath not found: {dp:?} (sluice's: ovs-netdev for all, or a bridge: {})",
        all.join(", ")
    ))
}

/// `dpctl/dump-conntrack [-m] [-s] [dp] [zone=N]` and
/// `dpctl/flush-conntrack [dp] [zone=N] [ct-orig-tuple [ct-reply-tuple]]`:
/// each bridge's tracker (sluice has one per bridge, Open vSwitch one per
/// datapath), in the tracker's dpctl text.
fn conntrack(sw: &mut dyn Switch, method: &str, a: &[&str]) -> Result<String, String> {
    let dump = method == "dpctl/dump-conntrack";
    let mut dp = None;
    let mut rest = vec![if dump {
        "dump-conntrack"
    } else {
        "flush-conntrack"
    }];
    for (i, w) in a.iter().enumerate() {
        match *w {
            "-m" | "--more" if dump => {}
            "-s" | "--statistics" if dump => rest.push("-s"),
            // The datapath comes first, and is a word without '='.
            w if i == 0 && !w.contains('=') && !w.starts_with('-') => dp = Some(w),
            w => rest.push(w),
        }
    }
    let targets = datapaths(sw, dp)?;
    let mut out = String::new();
    for b in targets {
        let text = sw.command(&b, &words(&rest))?;
        if dump {
            out.push_str(&text);
        }
    }
    Ok(out)
}

/// The answer of `dpctl/dump-flows` and `dpctl/del-flows`: sluice's
/// workers cache table lookups in exact-match caches that only their own
/// thread reads or writes, so there is nothing another thread could list
/// or empty without adding to the packet path.
pub const NO_DATAPATH_FLOWS: &str = "sluice keeps no datapath flow table: each worker runs packets through the OpenFlow tables, with an exact-match cache only that worker reads (use ofproto/trace to see what a packet does, bridge/dump-flows for the flows)";

/// Open vSwitch's 16-bit form of a reserved port number (LOCAL: 65534).
fn ofp16(port_no: u32) -> u32 {
    if port_no >= 0xffff_ff00 {
        port_no - 0xffff_0000
    } else {
        port_no
    }
}

/// `dpctl/show [-m] [dp...]`: each bridge's datapath (sluice has one per
/// bridge, named `netdev@BRIDGE`), its lookup counters (the workers'
/// exact-match caches; nothing is lost, there being no upcall queue), no
/// datapath flows, and its ports by number (a type unless `system`).
fn dpctl_show(sw: &dyn Switch, a: &[&str]) -> Result<String, String> {
    let mut names = Vec::new();
    for w in a {
        match *w {
            "-m" | "--more" => {}
            o if o.starts_with('-') => {
                return Err(format!("dpctl/show: sluice does not support {o}"))
            }
            dp => names.extend(datapaths(sw, Some(dp))?),
        }
    }
    let views = sw.datapath_views();
    let mut out = String::new();
    for v in views
        .iter()
        .filter(|v| names.is_empty() || names.contains(&v.bridge))
    {
        out.push_str(&format!(
            "netdev@{}:\n  lookups: hit:{} missed:{} lost:0\n  flows: 0\n",
            v.bridge, v.hits, v.misses
        ));
        let mut ports: Vec<&DatapathPort> = v.ports.iter().collect();
        ports.sort_by_key(|p| ofp16(p.port_no));
        for p in ports {
            out.push_str(&format!("  port {}: {}", ofp16(p.port_no), p.name));
            if p.kind != "system" {
                out.push_str(&format!(" ({})", p.kind));
            }
            out.push('\n');
        }
    }
    Ok(out)
}

/// `dpif/show`: each bridge's datapath with its counters, the bridge, and
/// its ports by name as `NAME OFPORT/DPPORT: (TYPE)` (the two numbers are
/// the same in sluice).
fn dpif_show(views: &[DatapathView]) -> String {
    let mut out = String::new();
    for v in views {
        out.push_str(&format!(
            "netdev@{}: hit:{} missed:{}\n  {}:\n",
            v.bridge, v.hits, v.misses, v.bridge
        ));
        let mut ports: Vec<&DatapathPort> = v.ports.iter().collect();
        ports.sort_by(|a, b| a.name.cmp(&b.name));
        for p in ports {
            let n = ofp16(p.port_no);
            out.push_str(&format!("    {} {n}/{n}: ({})\n", p.name, p.kind));
        }
    }
    out
}

/// `upcall/show`: sluice has no upcalls, handlers or revalidators (Open
/// vSwitch's lines about them would mean nothing here), so what it has in
/// their place: per bridge, its workers, its rules and the caches' counts.
fn upcall_show(views: &[DatapathView]) -> String {
    let mut out = String::new();
    for v in views {
        out.push_str(&format!(
            "netdev@{}:\n  no upcalls: {} worker(s) look every packet up in the OpenFlow tables themselves\n  rules         : {}\n  cache         : hit:{} missed:{}\n",
            v.bridge, v.workers, v.rules, v.hits, v.misses
        ));
    }
    out
}

/// `ofproto/trace [BRIDGE] FLOW [-generate | PACKET] [--ct-next STATE]...`:
/// the flow in ovs-ofctl's match syntax (its `in_port` a number or a port
/// name); the packet built from it, or given in hex after it. Options go
/// anywhere, as Open vSwitch reads them: `-generate` (or `--generate`)
/// adds the flows the packet's `learn` actions teach; each `--ct-next`
/// gives the connection state of the next recirculation after a `ct`.
/// Without a bridge, the one bridge when there is one (Open vSwitch wants
/// a datapath flow then).
fn trace(sw: &mut dyn Switch, a: &[&str]) -> Result<String, String> {
    let mut opts = pipeline::trace::Options::default();
    let mut args = Vec::new();
    let mut i = 0;
    while i < a.len() {
        match a[i] {
            "-generate" | "--generate" => opts.generate = true,
            "--ct-next" => {
                let st = a
                    .get(i + 1)
                    .ok_or("Missing argument for option --ct-next")?;
                opts.ct_next.push(pipeline::trace::parse_ct_state(st)?);
                i += 1;
            }
            o @ ("--l7" | "--l7-len" | "-names" | "--names" | "-consistent" | "--consistent") => {
                return Err(format!("ofproto/trace: sluice does not support {o}"))
            }
            o if o.starts_with('-') => return Err(format!("{o}: unknown option")),
            o => args.push(o),
        }
        i += 1;
    }
    if args.len() > 3 {
        return Err("too many arguments".into());
    }
    let bridges = sw.bridges();
    let looks_like_flow = |s: &str| s.contains('=') || s.contains(',') || s.contains('(');
    let first = *args
        .first()
        .ok_or("ofproto/trace: which flow? (e.g. in_port=1,tcp,tp_dst=80)")?;
    let (bridge, rest) = if bridges.iter().any(|b| b == first) {
        (first.to_string(), &args[1..])
    } else if !looks_like_flow(first) && args.len() > 1 {
        return Err(format!("{first}: unknown bridge"));
    } else if bridges.len() == 1 {
        (bridges[0].clone(), &args[..])
    } else {
        return Err(format!(
            "syntax error at {first} (or the bridge name was omitted)"
        ));
    };
    let Some((flow, more)) = rest.split_first() else {
        return Err("ofproto/trace: which flow? (e.g. in_port=1,tcp,tp_dst=80)".into());
    };
    let packet = match more {
        [] => None,
        [p] if !opts.generate => Some(*p),
        [p] => {
            return Err(format!(
                "ofproto/trace: -generate and a packet ({p:?}): one or the other"
            ))
        }
        [_, x, ..] => return Err(format!("ofproto/trace: unexpected {x:?}")),
    };
    // in_port by name: the port's number.
    let flow: String = flow
        .split(',')
        .map(|part| match part.split_once('=') {
            Some(("in_port", v)) if v.parse::<u32>().is_err() => match sw.port_number(&bridge, v) {
                Some(n) => format!("in_port={n}"),
                None => part.to_string(),
            },
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",");
    let bad = |e: String| {
        let e = e.strip_prefix("packet: ").unwrap_or(&e).to_string();
        format!("Bad openflow flow syntax: {flow}: {e}")
    };
    let described = pipeline::flow_packet::parse(&flow).map_err(bad)?;
    let in_port = described
        .in_port
        .ok_or_else(|| format!("ofproto/trace: {flow}: give in_port (a port number or name)"))?;
    opts.tci = described.tci;
    let frame = match packet {
        None => described.frame,
        Some(hex) => {
            let p = pipeline::flow_packet::parse(hex)
                .map_err(|e| format!("ofproto/trace: packet {hex:?}: {e}"))?;
            if p.in_port.is_some()
                || !hex
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || ":.- ".contains(c))
            {
                return Err(format!("ofproto/trace: {hex:?} is not a packet in hex"));
            }
            p.frame
        }
    };
    Ok(ovs_shape(
        &bridge,
        &sw.trace(&bridge, in_port, &frame, &opts),
    ))
}

/// sluice's trace text in `ofproto/trace`'s shape: for each block (the
/// packet's first pass, then each recirculation after its `=` header),
/// the flow, the bridge's name underlined, the steps laid out as Open
/// vSwitch lays them out ([`pipeline::trace::ovs_layout`]; a
/// recirculation's `thaw` and `Resuming from table N` first, indented as
/// Open vSwitch indents them), the final flow and the datapath actions
/// (sluice's own first line, naming the datapath id and in_port, is left
/// out; its NORMAL and XDP lines stay).
pub fn ovs_shape(bridge: &str, text: &str) -> String {
    let mut out = String::new();
    let header = format!("bridge(\"{bridge}\")");
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("Bridge: ") {
            continue;
        }
        let Some(flow) = line.strip_prefix("Flow: ") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        out.push_str(&format!(
            "Flow: {flow}\n\n{header}\n{}\n",
            "-".repeat(header.len())
        ));
        // The steps, up to the blank line before the final flow.
        let mut steps = Vec::new();
        while let Some(line) = lines.next_if(|l| !l.is_empty()) {
            steps.push(line.to_string());
        }
        if steps.first().is_some_and(|l| l == "thaw") {
            let resume = steps.get(1).map_or("", |l| l.trim_start());
            out.push_str(&format!("    thaw\n        {resume}\n"));
            steps.drain(..steps.len().min(2));
        }
        out.push_str(&pipeline::trace::ovs_layout(&steps));
    }
    out
}

#[cfg(test)]
mod tests;
