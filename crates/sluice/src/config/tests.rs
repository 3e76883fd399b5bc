//! The configuration's tests: files good and bad, the key each problem is
//! reported under, and the agreement of the file format (schema.rs) with
//! docs/CONFIG.md, the README's samples and the service's installed file.

use super::*;

#[test]
fn tunnel_ports_are_read_and_checked() {
    let c = check_all(
        parse_file(
            "[[port]]\nname = \"vx0\"\ntype = \"vxlan\"\nofport = 100\noptions = { remote_ip = \"flow\", key = \"flow\", local_ip = \"192.0.2.1\" }\n[[port]]\nname = \"gnv0\"\ntype = \"geneve\"\noptions = { remote_ip = \"192.0.2.7\", key = 21, dst_port = 7081 }\n",
        )
        .unwrap(),
        &[],
    )
    .unwrap();
    let specs = c[0].port_specs();
    let Backend::Tunnel(vx) = specs[0].backend else {
        panic!("{:?}", specs[0])
    };
    assert_eq!(specs[0].port_no, 100);
    assert_eq!((vx.remote, vx.out_key, vx.dst_port), (None, None, 4789));
    assert_eq!(vx.local, Some("192.0.2.1".parse().unwrap()));
    let Backend::Tunnel(g) = specs[1].backend else {
        panic!("{:?}", specs[1])
    };
    assert_eq!(g.proto, datapath::TunnelProto::Geneve);
    assert_eq!((g.out_key, g.dst_port), (Some(21), 7081));
    for (text, key) in [
        (
            "type = \"gre\"\noptions = { remote_ip = \"flow\" }",
            "port[0].type",
        ),
        ("options = { remote_ip = \"flow\" }", "port[0].options"),
        ("type = \"vxlan\"", "port[0].options.remote_ip"),
        (
            "type = \"vxlan\"\noptions = { remote_ip = \"flow\", key = -1 }",
            "port[0].options.key",
        ),
        (
            "type = \"vxlan\"\noptions = { remote_ip = true }",
            "port[0].options.remote_ip",
        ),
        (
            "type = \"vxlan\"\nbackend = \"afxdp\"\noptions = { remote_ip = \"flow\" }",
            "port[0].backend",
        ),
        (
            "type = \"vxlan\"\nqueues = [{ id = 1 }]\noptions = { remote_ip = \"flow\" }",
            "port[0].queues",
        ),
    ] {
        let f = parse_file(&format!("[[port]]\nname = \"vx0\"\n{text}\n")).unwrap();
        let e = check_all(f, &[]).unwrap_err();
        assert_eq!(e.key, key, "{text}: {e}");
    }
}

#[test]
fn a_command_line_port_cannot_be_a_pcap_port() {
    let mut f = parse_file("").unwrap();
    f.bridge.backend = Some("pcap".into());
    let e = check_all(f, &["veth0".into()]).unwrap_err().to_string();
    assert!(e.contains("--port veth0"), "{e}");
    assert!(e.contains("pcap_in"), "{e}");
    // The same in a [bridge] backend with command-line ports.
    let f = parse_file("[bridge]\nbackend = \"pcap\"\n").unwrap();
    assert!(check_all(f, &["a".into()]).is_err());
}

#[test]
fn toml_errors_name_the_line_and_column() {
    let e = parse_file("[bridge]\nname = \"br0\"\nworkers = \"two\"\n").unwrap_err();
    assert_eq!(e.key, "line 3, column 11", "{e:?}");
    let e = parse_file("[bridge]\nnmae = 1\n").unwrap_err();
    assert!(e.key.starts_with("line 2, column 1"), "{e:?}");
    assert!(e.problem.contains("nmae"), "{e:?}");
}

#[test]
fn every_configuration_sample_in_the_readme_is_accepted() {
    let readme = include_str!("../../../../README.md");
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(blocks.len() >= 3, "the README's samples were found");
    for b in blocks {
        let f = parse_file(b).unwrap_or_else(|e| panic!("{e:?} in\n{b}"));
        // Samples without ports stand for a bridge given ports elsewhere.
        let cli: Vec<String> = if b.contains("[[port]]") {
            vec![]
        } else {
            vec!["eth0".into()]
        };
        check_all(f, &cli).unwrap_or_else(|e| panic!("{e:?} in\n{b}"));
    }
}

/// The keys docs/CONFIG.md lists under `heading`'s table.
fn documented(doc: &str, heading: &str) -> Vec<String> {
    let section = doc
        .split(&format!("## `{heading}`\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("CONFIG.md has no section {heading}"));
    let section = section.split("\n## ").next().unwrap();
    let mut keys: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    keys.sort();
    keys
}

/// The fields of `struct name` in `src` (schema.rs's source).
fn fields(src: &str, name: &str) -> Vec<String> {
    let body = src
        .split(&format!("pub struct {name} {{\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("no struct {name}"));
    let body = body.split("\n}").next().unwrap();
    let mut keys: Vec<String> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .filter_map(|l| l.split(':').next())
        .map(|k| k.trim_start_matches("r#").to_string())
        .collect();
    keys.sort();
    keys
}

#[test]
fn every_key_is_documented() {
    let doc = include_str!("../../../../docs/CONFIG.md");
    let src = include_str!("schema.rs");
    for (heading, strukt) in [
        ("[bridge]", "BridgeSection"),
        ("[[port]]", "PortSection"),
        ("[[port]].queues", "QueueSection"),
        ("[tls]", "TlsSection"),
        ("[conntrack]", "ConntrackSection"),
    ] {
        assert_eq!(
            documented(doc, heading),
            fields(src, strukt),
            "docs/CONFIG.md's {heading} and config/schema.rs's {strukt} list different keys"
        );
    }
    // The file the service installs is a valid configuration.
    let sample = include_str!("../../../../dist/sluice.toml");
    check_all(parse_file(sample).unwrap(), &[]).unwrap();
}

#[test]
fn queue_rates_that_would_overflow_are_refused() {
    let f = "[[port]]\nname = \"a\"\n[[port.queues]]\nid = 1\nmax_rate = 9223372036854775807\n";
    let e = check_all(parse_file(f).unwrap(), &[]).unwrap_err();
    assert_eq!(e.key, "port[0].queues[0].max_rate", "{e:?}");
}

#[test]
fn max_flows_is_passed_on_and_zero_is_refused() {
    let c = check_all(
        parse_file("[bridge]\nmax_flows = 10\n").unwrap(),
        &["a".into()],
    )
    .unwrap();
    assert_eq!(c[0].max_flows, 10);
    let c = check_all(parse_file("").unwrap(), &["a".into()]).unwrap();
    assert_eq!(c[0].max_flows, pipeline::Config::default().max_flows);
    let e = check_all(
        parse_file("[bridge]\nmax_flows = 0\n").unwrap(),
        &["a".into()],
    )
    .unwrap_err();
    assert_eq!(e.key, "bridge.max_flows");
}

#[test]
fn learn_limits_are_passed_on_and_zero_burst_or_cap_is_refused() {
    let c = check_all(
        parse_file("[bridge]\nlearn_rate = 0\nlearn_burst = 5\nlearned_max = 7\n").unwrap(),
        &["a".into()],
    )
    .unwrap();
    assert_eq!(
        c[0].learn,
        super::LearnLimits {
            rate: 0,
            burst: 5,
            max: 7
        }
    );
    let d = pipeline::Config::default();
    let c = check_all(parse_file("").unwrap(), &["a".into()]).unwrap();
    assert_eq!(
        (c[0].learn.rate, c[0].learn.burst, c[0].learn.max),
        (d.learn_rate, d.learn_burst, d.learned_max)
    );
    for key in ["learn_burst", "learned_max"] {
        let e = check_all(
            parse_file(&format!("[bridge]\n{key} = 0\n")).unwrap(),
            &["a".into()],
        )
        .unwrap_err();
        assert_eq!(e.key, format!("bridge.{key}"));
    }
    let e = parse_file("[bridge]\nlearn_rate = -1\n").unwrap_err();
    assert!(
        e.to_string().contains("learn_rate") || e.to_string().contains("line 2"),
        "{e}"
    );
}

#[test]
fn good_and_bad_configs() {
    let f = parse_file("[bridge]\ndatapath_id = \"0x2a\"\n[[port]]\nname = \"a\"\n[[port]]\nname = \"b\"\nofport = 7\n").unwrap();
    let c = check_all(f, &["c".into()]).unwrap().remove(0);
    assert_eq!(c.datapath_id, 42);
    assert_eq!(
        c.ports,
        vec![(1, "a".into()), (7, "b".into()), (2, "c".into())]
    );

    let e = parse_file("[bridge]\nnmae = \"x\"\n").unwrap_err();
    assert!(e.problem.contains("unknown field"), "{e}");
    let e = check_all(File::default(), &["a=0".into()]).unwrap_err();
    assert_eq!(e.key, "port[0].ofport");
    let e = check_all(File::default(), &["a".into(), "a".into()]).unwrap_err();
    assert_eq!(e.key, "port[1].name");
    // A bridge of its LOCAL port alone is one (as `ovs-vsctl add-br`
    // makes); without it, a bridge needs a port.
    assert_eq!(check_all(File::default(), &[]).unwrap()[0].ports, vec![]);
    let f = parse_file("[bridge]\nlocal_port = false\n").unwrap();
    let e = check_all(f, &[]).unwrap_err();
    assert_eq!(e.key, "port");
    let f = parse_file("[bridge]\nflows = [\"tp_dst=80,actions=drop\"]\n[[port]]\nname = \"a\"\n")
        .unwrap();
    let e = check_all(f, &[]).unwrap_err();
    assert_eq!(e.key, "bridge.flows[0]");
    assert!(e.problem.contains("`tp_dst=80`: no prerequisite"), "{e}");
    let two = "[[bridges]]\nname = \"x\"\nports = [{ name = \"a\" }]\n[[bridges]]\nname = \"y\"\ndatapath_id = \"2\"\nports = [{ name = \"b\" }, { name = \"c\", ofport = 0 }]\n";
    let e = check_all(parse_file(two).unwrap(), &[]).unwrap_err();
    assert_eq!(e.key, "bridges[1].ports[1].ofport");
    let same_port = "[[bridges]]\nname = \"x\"\nports = [{ name = \"a\" }]\n[[bridges]]\nname = \"y\"\ndatapath_id = \"2\"\nports = [{ name = \"a\" }]\n";
    assert_eq!(
        check_all(parse_file(same_port).unwrap(), &[])
            .unwrap_err()
            .key,
        "bridges[1].ports"
    );
    let ok = "[[bridges]]\nname = \"x\"\nports = [{ name = \"a\" }]\n[[bridges]]\nname = \"y\"\ndatapath_id = \"2\"\nports = [{ name = \"b\" }]\n";
    assert_eq!(check_all(parse_file(ok).unwrap(), &[]).unwrap().len(), 2);
    let f = parse_file("[bridge]\ndatapath_id = \"zz\"\n[[port]]\nname = \"a\"\n").unwrap();
    assert_eq!(check_all(f, &[]).unwrap_err().key, "bridge.datapath_id");
}

#[test]
fn back_ends_and_workers() {
    let check = |text: &str| check_all(parse_file(text).unwrap(), &["c".into()]);
    let c = check(
        "[bridge]
backend = \"afxdp\"\nworkers = 2\n[[port]]\nname = \"a\"\nbackend = \"afpacket-mmsg\"\n",
    )
    .unwrap()
    .remove(0);
    assert_eq!(
        c.backends,
        vec![
            (1, Backend::AfPacket { rings: false }),
            (2, Backend::AfXdp { generic: false })
        ],
        "a port's own back end, else the bridge's"
    );
    assert_eq!(c.workers, vec![None, None]);
    let c = check(
        "[bridge]
cpus = [0]
",
    )
    .unwrap()
    .remove(0);
    assert_eq!(c.workers, vec![Some(0)]);
    assert_eq!(c.backends, vec![(1, Backend::AfPacket { rings: true })]);
    for (text, key) in [
        (
            "[bridge]
backend = \"dpdk\"\n",
            "bridge.backend",
        ),
        (
            "[[port]]
name = \"a\"\nbackend = \"netmap\"\n",
            "port[0].backend",
        ),
        (
            "[bridge]
workers = 0
",
            "bridge.workers",
        ),
        (
            "[bridge]
cpus = [0]
workers = 2
",
            "bridge.workers",
        ),
        (
            "[bridge]
cpus = [4096]
",
            "bridge.cpus",
        ),
        (
            "[bridge]
cpu = 0
cpus = [0]
",
            "bridge.cpu",
        ),
        (
            "[bridge]
workers = 2
[[port]]
name = \"a\"\nbackend = \"pcap\"\npcap_in = \"x\"\n",
            "bridge.workers",
        ),
    ] {
        assert_eq!(check(text).unwrap_err().key, key, "{text}");
    }
}

#[test]
fn table_names_are_checked_and_named_by_their_key() {
    let c = check_all(
        parse_file(
            "[bridge]\ntables = { 0 = \"Classifier\", 10 = \"l2_lookup\", 253 = \"Out.v2\" }\n",
        )
        .unwrap(),
        &["a".into()],
    )
    .unwrap();
    let want: Vec<(u8, &str)> = vec![(0, "Classifier"), (10, "l2_lookup"), (253, "Out.v2")];
    assert_eq!(
        c[0].tables
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect::<Vec<_>>(),
        want
    );
    for (tables, key, says) in [
        (
            "{ 254 = \"A\" }",
            "bridge.tables.254",
            "not a table number (0-253)",
        ),
        ("{ x = \"A\" }", "bridge.tables.x", "not a table number"),
        (
            "{ \"+1\" = \"A\" }",
            "bridge.tables.+1",
            "not a table number",
        ),
        ("{ 1 = \"\" }", "bridge.tables.1", "empty"),
        (
            "{ 1 = \"abcdefghijklmnopqrstuvwxyz012345\" }",
            "bridge.tables.1",
            "32 bytes",
        ),
        ("{ 1 = \"a b\" }", "bridge.tables.1", "' ' is not allowed"),
        ("{ 1 = \"a,b\" }", "bridge.tables.1", "',' is not allowed"),
        (
            "{ 1 = \"a\\\"b\" }",
            "bridge.tables.1",
            "'\"' is not allowed",
        ),
        (
            "{ 1 = \"tab\\u00e9\" }",
            "bridge.tables.1",
            "is not allowed",
        ),
        ("{ 1 = \"5\" }", "bridge.tables.1", "as a number"),
        ("{ 1 = \"0x5\" }", "bridge.tables.1", "as a number"),
        ("{ 1 = \"-x\" }", "bridge.tables.1", "as a number"),
        ("{ 1 = \"ALL\" }", "bridge.tables.1", "every table"),
        (
            "{ 1 = \"A\", 2 = \"A\" }",
            "bridge.tables.2",
            "names table 1 too",
        ),
    ] {
        let f = parse_file(&format!("[bridge]\ntables = {tables}\n")).unwrap();
        let e = check_all(f, &["a".into()]).unwrap_err();
        assert_eq!(e.key, key, "{tables}: {e}");
        assert!(e.problem.contains(says), "{tables}: {e}");
    }
    // A 31-byte name fits; in [[bridges]] the key is the entry's.
    let f = parse_file(
        "[[bridges]]\nports = [{ name = \"a\" }]\ntables = { 3 = \"abcdefghijklmnopqrstuvwxyz01234\" }\n[[bridges]]\nname = \"br1\"\ndatapath_id = \"2\"\nports = [{ name = \"b\" }]\ntables = { 3 = \"3\" }\n",
    )
    .unwrap();
    let e = check_all(f, &[]).unwrap_err();
    assert_eq!(e.key, "bridges[1].tables.3", "{e}");
}

#[test]
fn conntrack_settings_are_checked_and_passed_on() {
    let f = "[conntrack]\nlimit = 5000\ndefault_zone_limit = 100\nzone_limits = { 1 = 10, 7 = 0 }\ntimeouts = { udp = 60, tcp_established = 3600 }\n";
    let c = check_all(parse_file(f).unwrap(), &["a".into()]).unwrap();
    let ct = &c[0].conntrack;
    assert_eq!((ct.limits.total, ct.limits.zone_default), (5000, 100));
    assert_eq!(
        ct.zones.iter().map(|(z, l)| (*z, *l)).collect::<Vec<_>>(),
        vec![(1, 10), (7, 0)]
    );
    assert_eq!((ct.timeouts.udp, ct.timeouts.tcp_established), (60, 3600));
    assert_eq!(ct.timeouts.icmp, conntrack::Timeouts::default().icmp);
    // Into the pipeline's tracker at start.
    let mut pc = pipeline::Config::default();
    ct.apply(&mut pc);
    let p = pipeline::Pipeline::new(pc);
    ct.apply_zones(p.conntrack());
    assert_eq!(p.conntrack().limits().total, 5000);
    assert_eq!(p.conntrack().zone_usage(1), (10, 0));
    assert_eq!(p.conntrack().zone_usage(7), (0, 0));
    assert_eq!(p.conntrack().zone_usage(8), (100, 0));
    // A reload applies what changed: zone 1 no longer limited, a limit set
    // with sluice-ctl on zone 9 kept.
    p.conntrack().set_zone_limit(9, Some(3));
    let g = "[conntrack]\nlimit = 5000\ndefault_zone_limit = 100\nzone_limits = { 7 = 0 }\ntimeouts = { udp = 60, tcp_established = 3600 }\n";
    let new = check_all(parse_file(g).unwrap(), &["a".into()]).unwrap();
    assert_eq!(
        new[0].conntrack.apply_changes(ct, p.conntrack()),
        vec!["zone limits"]
    );
    assert_eq!(p.conntrack().zone_usage(1), (100, 0));
    assert_eq!(p.conntrack().zone_usage(9), (3, 0));
    // Every bridge of [[bridges]] gets them.
    let f2 = format!("{f}[[bridges]]\nname = \"b1\"\ndatapath_id = \"1\"\nports = [{{ name = \"x\" }}]\n[[bridges]]\nname = \"b2\"\ndatapath_id = \"2\"\nports = [{{ name = \"y\" }}]\n");
    let c = check_all(parse_file(&f2).unwrap(), &[]).unwrap();
    assert!(c.iter().all(|b| b.conntrack.limits.total == 5000));
}

#[test]
fn bad_conntrack_settings_name_their_key() {
    for (body, key, problem) in [
        ("limit = -1", "conntrack.limit", "-1"),
        (
            "default_zone_limit = 4294967296",
            "conntrack.default_zone_limit",
            "4294967296",
        ),
        (
            "zone_limits = { x = 1 }",
            "conntrack.zone_limits.x",
            "not a zone",
        ),
        (
            "zone_limits = { 65536 = 1 }",
            "conntrack.zone_limits.65536",
            "not a zone",
        ),
        (
            "timeouts = { tcp = 5 }",
            "conntrack.timeouts.tcp",
            "unknown conntrack timeout `tcp`",
        ),
        (
            "timeouts = { udp = 0 }",
            "conntrack.timeouts.udp",
            "at least 1 second",
        ),
    ] {
        let e = check_all(
            parse_file(&format!("[conntrack]\n{body}\n")).unwrap(),
            &["a".into()],
        )
        .unwrap_err();
        assert_eq!(e.key, key, "{body}: {e}");
        assert!(e.problem.contains(problem), "{body}: {e}");
    }
    let e = parse_file("[conntrack]\nmax = 1\n").unwrap_err();
    assert!(e.problem.contains("unknown field `max`"), "{e}");
}

#[test]
fn vlan_keys_are_read_and_checked() {
    let c = check_all(
        parse_file(
            "[[port]]\nname = \"a\"\ntag = 10\n[[port]]\nname = \"b\"\ntrunks = [20, 10]\n[[port]]\nname = \"c\"\ntag = 20\nvlan_mode = \"native-untagged\"\n[[port]]\nname = \"d\"\n",
        )
        .unwrap(),
        &[],
    )
    .unwrap();
    let specs = c[0].port_specs();
    let v: Vec<String> = specs.iter().map(|s| s.vlan.to_string()).collect();
    assert_eq!(
        v,
        [
            "tag=10",
            "trunks=10,20",
            "tag=20 vlan_mode=native-untagged",
            "trunk of every VLAN"
        ]
    );
    assert_eq!(specs[0].vlan.mode(), datapath::VlanMode::Access);
    assert_eq!(c[0].vlans.len(), 3, "only ports with settings are listed");
    for (text, key, said) in [
        (
            "tag = 4096",
            "port[0].tag",
            "4096 is not a VLAN ID (0 to 4095)",
        ),
        ("trunks = [1, -2]", "port[0].trunks", "-2 is not a VLAN ID"),
        (
            "vlan_mode = \"hybrid\"",
            "port[0].vlan_mode",
            "\"hybrid\" is not a VLAN mode",
        ),
        (
            "tag = 1\ntrunks = [2]",
            "port[0].trunks",
            "an access port carries",
        ),
        (
            "tag = 1\nvlan_mode = \"trunk\"",
            "port[0].tag",
            "a trunk port has no tag",
        ),
        (
            "vlan_mode = \"native-tagged\"",
            "port[0].tag",
            "vlan_mode \"native-tagged\" needs a tag",
        ),
    ] {
        let e = check_all(
            parse_file(&format!("[[port]]\nname = \"a\"\n{text}\n")).unwrap(),
            &[],
        )
        .unwrap_err();
        assert_eq!(e.key, key, "{text}: {e:?}");
        assert!(e.problem.starts_with(said), "{text}: {e:?}");
    }
}
