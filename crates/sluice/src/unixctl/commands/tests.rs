//! The dispatch over a fake switch: argument checks, errors in Open
//! vSwitch's words, and what each command asks of the switch.

use super::*;
use serde_json::{json, Value};

/// Two bridges; records the management commands it is asked.
#[derive(Default)]
struct Fake {
    asked: Vec<(String, Vec<String>)>,
    traced: Vec<(String, u32, usize, pipeline::trace::Options)>,
    filter: String,
}

impl Switch for Fake {
    fn bridges(&self) -> Vec<String> {
        vec!["br0".into(), "br1".into()]
    }
    fn command(&mut self, bridge: &str, words: &[String]) -> Result<String, String> {
        self.asked.push((bridge.into(), words.to_vec()));
        match words[0].as_str() {
            "fdb-show" => Ok(" port  VLAN  MAC                Age\n".into()),
            "dump-conntrack" if words.iter().any(|w| w == "zone=x") => {
                Err("dump-conntrack: \"zone=x\": bad zone".into())
            }
            "dump-conntrack" => Ok(format!("tcp,orig=(...) on {bridge}\n")),
            _ => Ok("done\n".into()),
        }
    }
    fn port_number(&self, _bridge: &str, name: &str) -> Option<u32> {
        (name == "p1").then_some(1)
    }
    fn trace(
        &mut self,
        bridge: &str,
        in_port: u32,
        frame: &[u8],
        opts: &pipeline::trace::Options,
    ) -> String {
        self.traced
            .push((bridge.into(), in_port, frame.len(), opts.clone()));
        "Bridge: dpid 0000000000000001, in_port 1 (p1)\nFlow: tcp,in_port=1\n 0. priority 0\n    NORMAL\n\nFinal flow: unchanged\nDatapath actions: 2\n".into()
    }
    fn dump_flows(&mut self, bridge: &str) -> String {
        format!("duration=1s, n_packets=0, n_bytes=0, priority=0,actions=NORMAL ({bridge})\n")
    }
    fn counters(&self) -> Vec<(String, u64)> {
        vec![("rx_packets".into(), 7), ("pipeline_dropped".into(), 0)]
    }
    fn memory(&self) -> Vec<(String, u64)> {
        vec![("bridges".into(), 2), ("rules".into(), 5)]
    }
    fn log_filter(&self) -> String {
        self.filter.clone()
    }
    fn set_log_filter(&mut self, spec: &str) -> Result<String, String> {
        self.filter = spec.into();
        Ok(spec.into())
    }
    fn log_level(&self, _module: &str) -> vlog::Level {
        vlog::Level::Info
    }
    fn datapath_views(&self) -> Vec<DatapathView> {
        let port = |port_no, name: &str, kind| DatapathPort {
            port_no,
            name: name.into(),
            kind,
        };
        vec![
            DatapathView {
                bridge: "br0".into(),
                hits: 10,
                misses: 3,
                rules: 5,
                workers: 2,
                ports: vec![
                    port(0xffff_fffe, "br0", "internal"),
                    port(2, "vx0", "vxlan"),
                    port(1, "p1", "system"),
                ],
            },
            DatapathView {
                bridge: "br1".into(),
                workers: 1,
                ports: vec![port(1, "q1", "system")],
                ..Default::default()
            },
        ]
    }
}

fn call(sw: &mut Fake, method: &str, args: &[&str]) -> Result<String, String> {
    let params: Vec<Value> = args.iter().map(|a| json!(a)).collect();
    run(sw, &State::default(), method, &params, 1).0
}

#[test]
fn the_table_is_sorted_and_list_commands_shows_it_as_open_vswitch_does() {
    assert!(COMMANDS.windows(2).all(|w| w[0].name < w[1].name));
    let text = call(&mut Fake::default(), "list-commands", &[]).unwrap();
    assert!(text.starts_with("The available commands are:\n"));
    assert!(
        text.contains("\n  fdb/show                bridge\n"),
        "{text}"
    );
    assert!(text.contains("\n  version                 \n"));
}

#[test]
fn unknown_commands_and_argument_counts_in_open_vswitchs_words() {
    let mut sw = Fake::default();
    assert_eq!(
        call(&mut sw, "foo/bar", &[]),
        Err("\"foo/bar\" is not a valid command (use \"list-commands\" to see a list of valid commands)\n".into())
    );
    assert_eq!(
        call(&mut sw, "fdb/show", &[]),
        Err("\"fdb/show\" command requires at least 1 arguments\n".into())
    );
    assert_eq!(
        call(&mut sw, "version", &["x"]),
        Err("\"version\" command takes at most 0 arguments\n".into())
    );
    let (r, _) = run(&mut sw, &State::default(), "fdb/show", &[json!(1)], 1);
    assert_eq!(
        r,
        Err("\"fdb/show\" command has non-string argument\n".into())
    );
    assert!(sw.asked.is_empty(), "nothing refused reached the switch");
}

#[test]
fn version_and_exit() {
    let mut sw = Fake::default();
    let v = call(&mut sw, "version", &[]).unwrap();
    assert!(
        v.starts_with("ovs-vswitchd (sluice) ") && v.ends_with('\n'),
        "{v}"
    );
    let (r, after) = run(&mut sw, &State::default(), "exit", &[], 1);
    assert_eq!((r, after), (Ok(String::new()), After::Exit));
    let (r, after) = run(&mut sw, &State::default(), "exit", &[json!("--cleanup")], 1);
    assert_eq!((r, after), (Ok(String::new()), After::Exit));
    let (r, after) = run(&mut sw, &State::default(), "exit", &[json!("now")], 1);
    assert!(r.is_err());
    assert_eq!(after, After::Nothing);
}

#[test]
fn fdb_commands_name_the_bridge_or_say_there_is_none() {
    let mut sw = Fake::default();
    assert!(call(&mut sw, "fdb/show", &["br1"])
        .unwrap()
        .starts_with(" port  VLAN"));
    assert_eq!(
        call(&mut sw, "fdb/show", &["nobr"]),
        Err("no such bridge\n".into())
    );
    assert_eq!(
        call(&mut sw, "fdb/flush", &[]),
        Ok("table successfully flushed\n".into())
    );
    assert_eq!(
        call(&mut sw, "fdb/flush", &["nobr"]),
        Err("no such bridge\n".into())
    );
    let asked: Vec<String> = sw
        .asked
        .iter()
        .map(|(b, w)| format!("{b} {}", w.join(" ")))
        .collect();
    assert_eq!(asked, ["br1 fdb-show", "br0 fdb-flush", "br1 fdb-flush"]);
}

#[test]
fn conntrack_commands_go_to_each_datapath_asked_for() {
    let mut sw = Fake::default();
    let out = call(&mut sw, "dpctl/dump-conntrack", &["-m", "zone=3"]).unwrap();
    assert_eq!(out, "tcp,orig=(...) on br0\ntcp,orig=(...) on br1\n");
    call(&mut sw, "dpctl/dump-conntrack", &["netdev@br1", "-s"]).unwrap();
    assert_eq!(
        call(&mut sw, "dpctl/flush-conntrack", &["br0", "zone=1"]),
        Ok(String::new())
    );
    call(&mut sw, "dpctl/flush-conntrack", &["ovs-netdev"]).unwrap();
    let asked: Vec<String> = sw
        .asked
        .iter()
        .map(|(b, w)| format!("{b} {}", w.join(" ")))
        .collect();
    assert_eq!(
        asked,
        [
            "br0 dump-conntrack zone=3",
            "br1 dump-conntrack zone=3",
            "br1 dump-conntrack -s",
            "br0 flush-conntrack zone=1",
            "br0 flush-conntrack",
            "br1 flush-conntrack",
        ]
    );
    assert!(call(&mut sw, "dpctl/dump-conntrack", &["nodp"])
        .unwrap_err()
        .starts_with("datapath not found"));
    assert!(call(&mut sw, "dpctl/dump-conntrack", &["zone=x"])
        .unwrap_err()
        .contains("bad zone"));
}

#[test]
fn trace_takes_a_bridge_a_flow_with_port_names_and_an_optional_packet() {
    let mut sw = Fake::default();
    let out = call(
        &mut sw,
        "ofproto/trace",
        &["br0", "in_port=p1,tcp,tp_dst=80"],
    )
    .unwrap();
    assert_eq!(
        out,
        "Flow: tcp,in_port=1\n\nbridge(\"br0\")\n-------------\n 0. priority 0\n    NORMAL\n\nFinal flow: unchanged\nDatapath actions: 2\n"
    );
    assert_eq!(sw.traced[0].0, "br0");
    assert_eq!(sw.traced[0].1, 1, "in_port by name");
    assert_eq!(sw.traced[0].2, 60, "an Ethernet + IPv4 + TCP frame, padded");
    call(
        &mut sw,
        "ofproto/trace",
        &["br1", "in_port=2,udp", "-generate", "--ct-next", "trk,est"],
    )
    .unwrap();
    assert!(sw.traced[1].3.generate);
    assert_eq!(sw.traced[1].3.ct_next, [0x22]);
    let hex = "ffffffffffff0200000000010806".to_string() + &"00".repeat(28);
    call(&mut sw, "ofproto/trace", &["br1", "in_port=2", &hex]).unwrap();
    assert_eq!(sw.traced[2].2, 42, "the packet given, as given");
    // Errors, in Open vSwitch's words where it has them.
    let e = |sw: &mut Fake, a: &[&str]| call(sw, "ofproto/trace", a).unwrap_err();
    assert_eq!(e(&mut sw, &["nobr", "in_port=1"]), "nobr: unknown bridge\n");
    assert_eq!(
        e(&mut sw, &["in_port=1,tcp"]),
        "syntax error at in_port=1,tcp (or the bridge name was omitted)\n"
    );
    let bad = e(&mut sw, &["br0", "in_port=1,bogus=3"]);
    assert!(
        bad.starts_with("Bad openflow flow syntax: in_port=1,bogus=3: "),
        "{bad}"
    );
    assert!(e(&mut sw, &["br0", "tcp"]).contains("give in_port"));
    assert_eq!(
        e(&mut sw, &["br0", "in_port=1", "--ct-next"]),
        "Missing argument for option --ct-next\n"
    );
    assert_eq!(
        e(&mut sw, &["br0", "in_port=1", "--ct-next", "est"]),
        "est: invalid connection state: If \"trk\" is unset, no other flags are set\n"
    );
    assert_eq!(
        e(&mut sw, &["br0", "in_port=1", "--bogus"]),
        "--bogus: unknown option\n"
    );
    assert!(e(&mut sw, &["br0", "in_port=1", "in_port=2"]).contains("not a packet in hex"));
    assert_eq!(
        sw.traced.len(),
        3,
        "refused traces never reached the switch"
    );
}

#[test]
fn dump_flows_coverage_and_memory() {
    let mut sw = Fake::default();
    assert!(call(&mut sw, "bridge/dump-flows", &["br1"])
        .unwrap()
        .contains("(br1)"));
    assert_eq!(
        call(&mut sw, "bridge/dump-flows", &["x"]),
        Err("no such bridge\n".into())
    );
    let cov = call(&mut sw, "coverage/show", &[]).unwrap();
    assert!(
        cov.contains("\nrx_packets ") && cov.ends_with("1 events never hit\n"),
        "{cov}"
    );
    assert_eq!(
        call(&mut sw, "memory/show", &[]),
        Ok("bridges:2 rules:5\n".into())
    );
    assert_eq!(call(&mut sw, "ofproto/list", &[]), Ok("br0\nbr1\n".into()));
}

#[test]
fn vlog_set_is_all_or_nothing_and_list_has_every_module() {
    let mut sw = Fake {
        filter: "info".into(),
        ..Fake::default()
    };
    assert_eq!(
        call(&mut sw, "vlog/set", &["datapath:dbg", "ofproto:warn"]),
        Ok(String::new())
    );
    assert_eq!(sw.filter, "info,datapath=debug,agent=warn");
    assert_eq!(
        call(&mut sw, "vlog/set", &["info", "bogus"]),
        Err("no destination, level, or module \"bogus\"\n".into())
    );
    assert_eq!(sw.filter, "info,datapath=debug,agent=warn", "unchanged");
    call(&mut sw, "vlog/set", &[]).unwrap();
    assert_eq!(sw.filter, "debug", "no spec: every module at dbg");
    let list = call(&mut sw, "vlog/list", &[]).unwrap();
    assert!(
        list.contains("\nsluice            INFO       INFO       INFO\n"),
        "{list}"
    );
}

#[test]
fn dpctl_show_lists_each_bridges_datapath_in_open_vswitchs_layout() {
    let mut sw = Fake::default();
    assert_eq!(
        call(&mut sw, "dpctl/show", &[]).unwrap(),
        "netdev@br0:\n  lookups: hit:10 missed:3 lost:0\n  flows: 0\n  port 1: p1\n  port 2: vx0 (vxlan)\n  port 65534: br0 (internal)\n\
         netdev@br1:\n  lookups: hit:0 missed:0 lost:0\n  flows: 0\n  port 1: q1\n"
    );
    assert_eq!(
        call(&mut sw, "dpctl/show", &["netdev@br1"]).unwrap(),
        "netdev@br1:\n  lookups: hit:0 missed:0 lost:0\n  flows: 0\n  port 1: q1\n"
    );
    assert!(call(&mut sw, "dpctl/show", &["-m", "ovs-netdev"])
        .unwrap()
        .contains("netdev@br1:"));
    assert!(call(&mut sw, "dpctl/show", &["nope"])
        .unwrap_err()
        .starts_with("datapath not found: \"nope\""));
    assert!(call(&mut sw, "dpctl/show", &["-s"]).is_err());
}

#[test]
fn dpif_show_lists_bridges_and_ports_by_name() {
    assert_eq!(
        call(&mut Fake::default(), "dpif/show", &[]).unwrap(),
        "netdev@br0: hit:10 missed:3\n  br0:\n    br0 65534/65534: (internal)\n    p1 1/1: (system)\n    vx0 2/2: (vxlan)\n\
         netdev@br1: hit:0 missed:0\n  br1:\n    q1 1/1: (system)\n"
    );
}

#[test]
fn upcall_show_says_what_sluice_has_instead() {
    let text = call(&mut Fake::default(), "upcall/show", &[]).unwrap();
    assert!(
        text.starts_with("netdev@br0:\n  no upcalls: 2 worker(s)"),
        "{text}"
    );
    assert!(text.contains("  rules         : 5\n  cache         : hit:10 missed:3\n"));
}

#[test]
fn datapath_flows_are_an_honest_error() {
    let mut sw = Fake::default();
    for m in ["dpctl/dump-flows", "dpctl/del-flows"] {
        let e = call(&mut sw, m, &[]).unwrap_err();
        assert_eq!(e, format!("{NO_DATAPATH_FLOWS}\n"));
        assert!(e.contains("ofproto/trace"));
    }
    assert!(sw.asked.is_empty());
}
