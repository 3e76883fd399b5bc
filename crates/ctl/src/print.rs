//! Printing replies the way ovs-ofctl 3.x does, so that its users read
//! them at a glance (and scripts written for ovs-ofctl's output keep
//! working): reply header lines with the request's xid, durations as
//! ovs-ofctl writes them, reserved ports in upper case. Groups and meters
//! print in the syntax `add-group` and `add-meter` read, so a dump can be
//! fed back.

use ofp::msg::group::GroupMod;
use ofp::msg::meter::{MeterMod, MeterModCommand};
use ofp::msg::multipart::{
    AggregateStats, FlowStats, GroupDesc, GroupFeatures, GroupStats, MeterConfig, MeterFeatures,
    MeterStats, PortStats, QueueStats, TableStats,
};
use ofp::msg::simple::{FeaturesReply, PortStatus, QueueGetConfigReply, QueueProp, SwitchConfig};
use ofp::port::{port_config, port_features as pf, port_state, PortDesc};
use ofp::text::{format_instructions_named, format_match, format_match_named, format_port, Names};
use ofp::{FlowRemoved, PacketIn};

/// The version the connection speaks, for the `(OF1.3)` of each line
/// (sluice-ctl holds one connection at a time; set when it is made).
static VERSION: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(4);

/// Makes the printed lines name `v` (`(OF1.0)` ... `(OF1.5)`).
pub fn set_version(v: ofp::Version) {
    VERSION.store(v.wire(), std::sync::atomic::Ordering::Relaxed);
}

/// `OF1.3`, as ovs-ofctl names the connection's version.
pub fn of() -> &'static str {
    match ofp::Version::from_wire(VERSION.load(std::sync::atomic::Ordering::Relaxed)) {
        Some(ofp::Version::V1_0) => "OF1.0",
        Some(ofp::Version::V1_2) => "OF1.2",
        Some(ofp::Version::V1_4) => "OF1.4",
        Some(ofp::Version::V1_5) => "OF1.5",
        _ => "OF1.3",
    }
}

/// A reply's header line, as ovs-ofctl prints it:
/// `OFPST_FLOW reply (OF1.3) (xid=0x2):`.
pub fn header(what: &str, xid: u32) -> String {
    format!("{what} ({}) (xid={xid:#x}):", of())
}

fn mac(a: &[u8; 6]) -> String {
    a.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A duration as ovs-ofctl writes it: whole seconds alone; milliseconds
/// with three decimals when the nanoseconds are a whole number of them;
/// otherwise the nanoseconds without trailing zeros (`1.234s`,
/// `0.063306677s`, `62.78017075s`).
pub fn duration(sec: u32, nsec: u32) -> String {
    if nsec == 0 {
        format!("{sec}s")
    } else if nsec.is_multiple_of(1_000_000) {
        format!("{sec}.{:03}s", nsec / 1_000_000)
    } else {
        let frac = format!("{nsec:09}");
        format!("{sec}.{}s", frac.trim_end_matches('0'))
    }
}

/// `show`: features, then every port, then the switch configuration; the
/// xids are those of the three requests.
pub fn features(
    f: &FeaturesReply,
    ports: &[PortDesc],
    config: &SwitchConfig,
    xids: [u32; 3],
) -> String {
    use ofp::msg::simple::capabilities as cap;
    let caps: Vec<&str> = [
        (cap::FLOW_STATS, "FLOW_STATS"),
        (cap::TABLE_STATS, "TABLE_STATS"),
        (cap::PORT_STATS, "PORT_STATS"),
        (cap::GROUP_STATS, "GROUP_STATS"),
        (cap::IP_REASM, "IP_REASM"),
        (cap::QUEUE_STATS, "QUEUE_STATS"),
        (cap::PORT_BLOCKED, "PORT_BLOCKED"),
    ]
    .into_iter()
    .filter(|(b, _)| f.capabilities & b != 0)
    .map(|(_, n)| n)
    .collect();
    let mut s = format!(
        "{} dpid:{:016x}\nn_tables:{}, n_buffers:{}\ncapabilities: {}\n",
        header("OFPT_FEATURES_REPLY", xids[0]),
        f.datapath_id,
        f.n_tables,
        f.n_buffers,
        caps.join(" ")
    );
    s.push_str(&header("OFPST_PORT_DESC reply", xids[1]));
    s.push('\n');
    for p in ports {
        s.push_str(&port_desc(p));
    }
    let frags = match config.flags & 3 {
        0 => "normal",
        1 => "drop",
        2 => "reassemble",
        _ => "mask",
    };
    s.push_str(&format!(
        "{} frags={frags} miss_send_len={}\n",
        header("OFPT_GET_CONFIG_REPLY", xids[2]),
        config.miss_send_len
    ));
    s
}

/// One port as `show` and `dump-ports-desc` print it.
pub fn port_desc(p: &PortDesc) -> String {
    let bits = |v: u32, names: &[(u32, &str)]| -> String {
        let v: Vec<&str> = names
            .iter()
            .filter(|(b, _)| v & b != 0)
            .map(|(_, n)| *n)
            .collect();
        if v.is_empty() {
            "0".into()
        } else {
            v.join(" ")
        }
    };
    let config = bits(
        p.config,
        &[
            (port_config::PORT_DOWN, "PORT_DOWN"),
            (port_config::NO_RECV, "NO_RECV"),
            (1 << 4, "NO_FLOOD"),
            (port_config::NO_FWD, "NO_FWD"),
            (port_config::NO_PACKET_IN, "NO_PACKET_IN"),
        ],
    );
    let state = bits(
        p.state,
        &[
            (port_state::LINK_DOWN, "LINK_DOWN"),
            (port_state::BLOCKED, "BLOCKED"),
            (port_state::LIVE, "LIVE"),
        ],
    );
    let mut s = format!(
        " {}({}): addr:{}\n     config:     {config}\n     state:      {state}\n",
        format_port(p.port_no),
        p.name.as_str(),
        mac(&p.hw_addr),
    );
    for (what, v) in [
        ("current:   ", p.curr),
        ("advertised:", p.advertised),
        ("supported: ", p.supported),
        ("peer:      ", p.peer),
    ] {
        if v != 0 {
            s.push_str(&format!("     {what} {}\n", port_features(v)));
        }
    }
    s.push_str(&format!(
        "     speed: {} Mbps now, {} Mbps max\n",
        p.curr_speed / 1000,
        p.max_speed / 1000
    ));
    s
}

/// `ofp_port_features` bits by ovs-ofctl's names (`10GB-FD COPPER`).
fn port_features(v: u32) -> String {
    let names = [
        (pf::F_10MB_HD, "10MB-HD"),
        (pf::F_10MB_FD, "10MB-FD"),
        (pf::F_100MB_HD, "100MB-HD"),
        (pf::F_100MB_FD, "100MB-FD"),
        (pf::F_1GB_HD, "1GB-HD"),
        (pf::F_1GB_FD, "1GB-FD"),
        (pf::F_10GB_FD, "10GB-FD"),
        (pf::F_40GB_FD, "40GB-FD"),
        (pf::F_100GB_FD, "100GB-FD"),
        (pf::F_1TB_FD, "1TB-FD"),
        (pf::OTHER, "OTHER"),
        (pf::COPPER, "COPPER"),
        (pf::FIBER, "FIBER"),
        (pf::AUTONEG, "AUTO_NEG"),
        (1 << 14, "AUTO_PAUSE"),
        (1 << 15, "AUTO_PAUSE_ASYM"),
    ];
    names
        .iter()
        .filter(|(b, _)| v & b != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One flow as `dump-flows` prints it (without the leading space), as
/// ovs-ofctl does: the default priority (32768) left out, the match then
/// a space (none when the match is empty), then the actions. Without
/// statistics, the cookie and the table only when they are not 0.
pub fn flow(f: &FlowStats, stats: bool, names: &Names) -> String {
    let table = names.table_name(f.table_id);
    let table = table.as_deref();
    let mut s = String::new();
    if stats || f.cookie != 0 {
        s.push_str(&format!("cookie={:#x}, ", f.cookie));
    }
    if stats {
        s.push_str(&format!(
            "duration={}, ",
            duration(f.duration_sec, f.duration_nsec)
        ));
    }
    match table {
        Some(name) => s.push_str(&format!("table={name}, ")),
        None if stats || f.table_id != 0 => s.push_str(&format!("table={}, ", f.table_id)),
        None => {}
    }
    if stats {
        s.push_str(&format!(
            "n_packets={}, n_bytes={}, ",
            f.packet_count, f.byte_count
        ));
    }
    if f.idle_timeout != 0 {
        s.push_str(&format!("idle_timeout={}, ", f.idle_timeout));
    }
    if f.hard_timeout != 0 {
        s.push_str(&format!("hard_timeout={}, ", f.hard_timeout));
    }
    for (bit, name) in [
        (1, "send_flow_rem"),
        (2, "check_overlap"),
        (4, "reset_counts"),
        (8, "no_packet_counts"),
        (16, "no_byte_counts"),
    ] {
        if f.flags & bit != 0 {
            s.push_str(name);
            s.push(' ');
        }
    }
    // The ages only the Nicira and 1.5 forms carry; hard_age only when a
    // MODIFY made it differ from the duration (ovs-ofctl's rule).
    if let (true, Some(a)) = (stats, f.idle_age) {
        s.push_str(&format!("idle_age={a}, "));
    }
    if let (true, Some(a)) = (stats, f.hard_age) {
        if a != f.duration_sec {
            s.push_str(&format!("hard_age={a}, "));
        }
    }
    let rule = rule(f.priority, &f.match_, names);
    if !rule.is_empty() {
        s.push_str(&rule);
        s.push(' ');
    }
    s.push_str(&format!(
        "actions={}",
        format_instructions_named(&f.instructions, names)
    ));
    s
}

/// Priority and match as ovs-ofctl writes a rule: `priority=N,` unless N is
/// the default (32768), then the match; empty for the default priority
/// and the empty match.
pub fn rule(priority: u16, m: &ofp::Match, names: &Names) -> String {
    let m = format_match_named(m, names);
    let p = (priority != ofp::msg::flow::DEFAULT_PRIORITY).then(|| format!("priority={priority}"));
    match (p, m.is_empty()) {
        (None, _) => m,
        (Some(p), true) => p,
        (Some(p), false) => format!("{p},{m}"),
    }
}

/// `dump-ports`: ports below 10 get one more space before the number, as
/// in ovs-ofctl.
pub fn port_stats(v: &[PortStats], xid: u32, names: &Names) -> String {
    let mut s = format!("{} {} ports\n", header("OFPST_PORT reply", xid), v.len());
    for p in v {
        let pad = if p.port_no < 10 { " " } else { "" };
        s.push_str(&format!(
            "  port {pad}{}: rx pkts={}, bytes={}, drop={}, errs={}, frame={}, over={}, crc={}\n",
            names.port(p.port_no),
            p.rx_packets,
            p.rx_bytes,
            p.rx_dropped,
            p.rx_errors,
            p.rx_frame_err,
            p.rx_over_err,
            p.rx_crc_err
        ));
        s.push_str(&format!(
            "           tx pkts={}, bytes={}, drop={}, errs={}, coll={}\n           duration={}\n",
            p.tx_packets,
            p.tx_bytes,
            p.tx_dropped,
            p.tx_errors,
            p.collisions,
            duration(p.duration_sec, p.duration_nsec)
        ));
    }
    s
}

/// `queue-stats`, as ovs-ofctl prints it.
pub fn queue_stats(v: &[QueueStats], xid: u32) -> String {
    let mut s = format!("{} {} queues\n", header("OFPST_QUEUE reply", xid), v.len());
    for q in v {
        s.push_str(&format!(
            "  port {} queue {}: bytes={}, pkts={}, errors={}, duration={}\n",
            format_port(q.port_no),
            q.queue_id,
            q.tx_bytes,
            q.tx_packets,
            q.tx_errors,
            duration(q.duration_sec, q.duration_nsec)
        ));
    }
    s
}

/// `dump-tables`, as ovs-ofctl prints it: each table's counters, an empty
/// line between tables; a table whose counters equal the previous table's
/// is "ditto", and a run of such tables is condensed
/// (`tables 5...253: ditto`).
pub fn table_stats(v: &[TableStats], xid: u32) -> String {
    let mut entries = Vec::new();
    let same = |a: &TableStats, b: &TableStats| {
        (a.active_count, a.lookup_count, a.matched_count)
            == (b.active_count, b.lookup_count, b.matched_count)
    };
    let mut i = 0;
    while i < v.len() {
        let t = &v[i];
        if i > 0 && same(&v[i - 1], t) {
            let mut j = i;
            while j + 1 < v.len() && same(&v[j + 1], t) {
                j += 1;
            }
            entries.push(if j == i {
                format!("  table {}: ditto\n", t.table_id)
            } else {
                format!("  tables {}...{}: ditto\n", t.table_id, v[j].table_id)
            });
            i = j + 1;
            continue;
        }
        entries.push(format!(
            "  table {}:\n    active={}, lookup={}, matched={}\n",
            t.table_id, t.active_count, t.lookup_count, t.matched_count
        ));
        i += 1;
    }
    format!(
        "{}\n{}",
        header("OFPST_TABLE reply", xid),
        entries.join("\n")
    )
}

/// `dump-groups`: each group as `add-group` reads it, with its buckets'
/// ids in OpenFlow 1.5 (ovs-ofctl prints them in 1.5 only).
pub fn group_desc(v: &[GroupDesc], xid: u32) -> String {
    let mut s = header("OFPST_GROUP_DESC reply", xid);
    s.push('\n');
    let ids = of() == "OF1.5";
    for g in v {
        let mut gm = GroupMod::new(
            ofp::msg::group::GroupModCommand::Add,
            g.group_type,
            g.group_id,
            g.buckets.clone(),
        );
        gm.selection = g.selection.clone();
        if !ids {
            gm.buckets
                .iter_mut()
                .for_each(|b| b.bucket_id = ofp::msg::group::BUCKET_ALL);
        }
        s.push_str(&format!(" {}\n", ofp::text::format_group_mod(&gm)));
    }
    s
}

/// `dump-group-stats`.
pub fn group_stats(v: &[GroupStats], xid: u32) -> String {
    let mut s = header("OFPST_GROUP reply", xid);
    s.push('\n');
    for g in v {
        s.push_str(&format!(
            " group_id={},duration={},ref_count={},packet_count={},byte_count={}",
            g.group_id,
            duration(g.duration_sec, g.duration_nsec),
            g.ref_count,
            g.packet_count,
            g.byte_count
        ));
        for (i, b) in g.bucket_stats.iter().enumerate() {
            s.push_str(&format!(
                ",bucket{i}:packet_count={},byte_count={}",
                b.packet_count, b.byte_count
            ));
        }
        s.push('\n');
    }
    s
}

/// `dump-meters`: each meter as `add-meter` reads it.
pub fn meter_config(v: &[MeterConfig], xid: u32) -> String {
    let mut s = header("OFPST_METER_CONFIG reply", xid);
    s.push('\n');
    for m in v {
        let mm = MeterMod {
            command: MeterModCommand::Add,
            flags: m.flags,
            meter_id: m.meter_id,
            bands: m.bands.clone(),
        };
        s.push_str(&format!("{}\n", ofp::text::format_meter_mod(&mm)));
    }
    s
}

/// `meter-stats`.
pub fn meter_stats(v: &[MeterStats], xid: u32) -> String {
    let mut s = header("OFPST_METER reply", xid);
    s.push('\n');
    for m in v {
        s.push_str(&format!(
            "meter:{} flow_count:{} packet_in_count:{} byte_in_count:{} duration:{} bands:\n",
            m.meter_id,
            m.flow_count,
            m.packet_in_count,
            m.byte_in_count,
            duration(m.duration_sec, m.duration_nsec)
        ));
        for (i, b) in m.band_stats.iter().enumerate() {
            s.push_str(&format!(
                "{i}: packet_count:{} byte_count:{}\n",
                b.packet_band_count, b.byte_band_count
            ));
        }
    }
    s
}

/// `dump-aggregate`, on one line as ovs-ofctl prints it.
pub fn aggregate(a: &AggregateStats, xid: u32) -> String {
    format!(
        "{} packet_count={} byte_count={} flow_count={}\n",
        header("OFPST_AGGREGATE reply", xid),
        a.packet_count,
        a.byte_count,
        a.flow_count
    )
}

/// Action type bits (`1 << OFPAT_*`) by the names ovs-ofctl prints, in its
/// order; the types ovs-ofctl has no name for come last by their spec name.
fn action_bits(v: u32) -> String {
    const NAMES: &[(u32, &str)] = &[
        (0, "output"),
        (22, "group"),
        (25, "set_field"),
        (18, "strip_vlan"),
        (17, "push_vlan"),
        (23, "mod_nw_ttl"),
        (24, "dec_ttl"),
        (15, "set_mpls_ttl"),
        (16, "dec_mpls_ttl"),
        (19, "push_mpls"),
        (20, "pop_mpls"),
        (21, "set_queue"),
        (11, "copy_ttl_out"),
        (12, "copy_ttl_in"),
        (26, "push_pbb"),
        (27, "pop_pbb"),
    ];
    NAMES
        .iter()
        .filter(|(bit, _)| v & (1 << bit) != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `dump-group-features`, as ovs-ofctl prints it.
pub fn group_features(g: &GroupFeatures, xid: u32) -> String {
    let mut s = header("OFPST_GROUP_FEATURES reply", xid);
    s.push_str(&format!(
        "\n Group table:\n    Types:  {:#x}\n    Capabilities:  {:#x}\n",
        g.types, g.capabilities
    ));
    for (i, name) in ["all", "select", "indirect", "fast failover"]
        .iter()
        .enumerate()
    {
        if g.types & (1 << i) != 0 {
            s.push_str(&format!(
                "    {name} group:\n       max_groups={:#x}\n       actions: {}\n",
                g.max_groups[i],
                action_bits(g.actions[i])
            ));
        }
    }
    s
}

/// `meter-features`, as ovs-ofctl prints it.
pub fn meter_features(m: &MeterFeatures, xid: u32) -> String {
    let bits = |v: u32, names: &[(u32, &str)]| -> String {
        names
            .iter()
            .filter(|(b, _)| v & b != 0)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        "{}\nmax_meter:{} max_bands:{} max_color:{}\nband_types: {}\ncapabilities: {}\n",
        header("OFPST_METER_FEATURES reply", xid),
        m.max_meter,
        m.max_bands,
        m.max_color,
        bits(m.band_types, &[(1 << 1, "drop"), (1 << 2, "dscp_remark")]),
        bits(
            m.capabilities,
            &[(1, "kbps"), (2, "pktps"), (4, "burst"), (8, "stats")]
        )
    )
}

/// `queue-get-config`, as ovs-ofctl prints it: the header (with the port
/// asked about when there are queues), then one line per queue with its
/// rates (tenths of a percent of the port's speed on the wire, printed as
/// a percentage; above 1000 means "not configured" and is left out).
pub fn queue_config(q: &QueueGetConfigReply, xid: u32) -> String {
    let mut s = header("OFPT_QUEUE_GET_CONFIG_REPLY", xid);
    if !q.queues.is_empty() {
        s.push_str(&format!(" port={}", format_port(q.port)));
    }
    s.push('\n');
    for queue in &q.queues {
        s.push_str(&format!("queue {}:", queue.queue_id));
        for p in &queue.properties {
            match p {
                QueueProp::MinRate(r) if *r <= 1000 => {
                    s.push_str(&format!(" min_rate:{:.1}%", *r as f64 / 10.0))
                }
                QueueProp::MaxRate(r) if *r <= 1000 => {
                    s.push_str(&format!(" max_rate:{:.1}%", *r as f64 / 10.0))
                }
                QueueProp::Experimenter { experimenter, .. } => {
                    s.push_str(&format!(" experimenter:{experimenter:#x}"))
                }
                _ => {}
            }
        }
        s.push('\n');
    }
    s
}

/// An asynchronous message as `monitor` prints it.
pub fn packet_in(p: &PacketIn) -> String {
    packet_in_as("OFPT_PACKET_IN", p, &[])
}

/// Open vSwitch's NXT_PACKET_IN as `monitor` prints it.
pub fn nx_packet_in(p: &ofp::msg::nxt::NxPacketIn) -> String {
    packet_in_as("NXT_PACKET_IN", &p.to_packet_in(), &[])
}

/// Open vSwitch's NXT_PACKET_IN2 as `monitor` prints it: its userdata on
/// a line of its own, as ovs-ofctl prints it.
pub fn packet_in2(p: &ofp::msg::nxt::PacketIn2) -> String {
    packet_in_as("NXT_PACKET_IN2", &p.to_packet_in(), &p.userdata)
}

fn packet_in_as(kind: &str, p: &PacketIn, userdata: &[u8]) -> String {
    let m = format_match(&p.match_);
    let mut k = packet::FlowKey::default();
    let in_port = p
        .match_
        .get(ofp::OxmField::InPort)
        .map_or(0, |o| o.value as u32);
    packet::extract(&p.data, in_port, &mut k);
    let buffer = if p.buffer_id == ofp::port::NO_BUFFER {
        String::new()
    } else {
        format!(" buffer={:#x}", p.buffer_id)
    };
    let userdata = if userdata.is_empty() {
        String::new()
    } else {
        format!(" userdata={}\n", ofp::text::format_hex_dotted(userdata))
    };
    format!(
        "{kind} ({}): table_id={} cookie={:#x} total_len={} {m} (via {}){buffer} data_len={}\n{userdata}{}\n",
        of(),
        p.table_id,
        p.cookie,
        p.total_len,
        p.reason,
        p.data.len(),
        hex_dump(&p.data)
    )
}

/// A FLOW_REMOVED as `monitor` prints it.
pub fn flow_removed(f: &FlowRemoved) -> String {
    format!(
        "OFPT_FLOW_REMOVED ({}): priority={},{} reason={} table_id={} cookie={:#x} duration={} idle{} hard{} pkts{} bytes{}\n",
        of(),
        f.priority,
        format_match(&f.match_),
        f.reason,
        f.table_id,
        f.cookie,
        duration(f.duration_sec, f.duration_nsec),
        f.idle_timeout,
        f.hard_timeout,
        f.packet_count,
        f.byte_count
    )
}

/// A PORT_STATUS as `monitor` prints it.
pub fn port_status(p: &PortStatus) -> String {
    format!(
        "OFPT_PORT_STATUS ({}): {}\n{}",
        of(),
        p.reason,
        port_desc(&p.desc)
    )
}

/// Bytes as a hex dump, 16 per line with offsets.
pub fn hex_dump(data: &[u8]) -> String {
    data.chunks(16)
        .enumerate()
        .map(|(i, c)| {
            let hex: Vec<String> = c.iter().map(|b| format!("{b:02x}")).collect();
            format!("{:08x}  {}", i * 16, hex.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flow as the switch reports it, from add-flow text.
    fn stats(text: &str, table_id: u8, cookie: u64, (sec, nsec): (u32, u32)) -> FlowStats {
        let fm = ofp::text::parse_flow_mod(text).unwrap();
        FlowStats {
            idle_age: None,
            hard_age: None,
            table_id,
            duration_sec: sec,
            duration_nsec: nsec,
            priority: fm.priority,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            flags: fm.flags,
            cookie,
            packet_count: 0,
            byte_count: 0,
            match_: fm.match_,
            instructions: fm.instructions,
        }
    }

    #[test]
    fn durations_as_ovs_ofctl() {
        assert_eq!(duration(0, 63_306_677), "0.063306677s");
        assert_eq!(duration(62, 780_170_750), "62.78017075s");
        assert_eq!(duration(1, 234_000_000), "1.234s");
        assert_eq!(duration(1, 200_000_000), "1.200s");
        assert_eq!(duration(7, 0), "7s");
    }

    /// The ages as ovs-ofctl prints an NXST_FLOW entry: after the
    /// timeouts, hard_age only when it differs from the duration, neither
    /// without statistics.
    #[test]
    fn ages_as_ovs_ofctl() {
        let none = Names::default();
        let mut f = stats("idle_timeout=9,in_port=2,actions=drop", 0, 0, (12, 0));
        f.idle_age = Some(3);
        f.hard_age = Some(12);
        assert_eq!(
            flow(&f, true, &none),
            "cookie=0x0, duration=12s, table=0, n_packets=0, n_bytes=0, idle_timeout=9, idle_age=3, in_port=2 actions=drop"
        );
        f.hard_age = Some(5);
        assert!(flow(&f, true, &none).contains("idle_age=3, hard_age=5, in_port=2"));
        assert!(!flow(&f, false, &none).contains("age="));
    }

    /// Golden lines: what `ovs-ofctl -O OpenFlow13 dump-flows` (3.1.0)
    /// printed for the same flows on sluice.
    #[test]
    fn flow_lines_as_ovs_ofctl() {
        let none = Names::default();
        let f = stats("in_port=2,actions=normal", 0, 0, (0, 63_306_677));
        assert_eq!(
            flow(&f, true, &none),
            "cookie=0x0, duration=0.063306677s, table=0, n_packets=0, n_bytes=0, in_port=2 actions=NORMAL"
        );
        assert_eq!(flow(&f, false, &none), "in_port=2 actions=NORMAL");
        let f = stats(
            "priority=7,tcp,tp_dst=80,actions=controller:128,in_port,local,flood,all",
            1,
            6,
            (20, 881_122_437),
        );
        assert_eq!(
            flow(&f, true, &none),
            "cookie=0x6, duration=20.881122437s, table=1, n_packets=0, n_bytes=0, priority=7,tcp,tp_dst=80 actions=CONTROLLER:128,IN_PORT,LOCAL,FLOOD,ALL"
        );
        assert_eq!(
            flow(&f, false, &none),
            "cookie=0x6, table=1, priority=7,tcp,tp_dst=80 actions=CONTROLLER:128,IN_PORT,LOCAL,FLOOD,ALL"
        );
        let f = stats("actions=drop", 3, 0, (0, 64_985_725));
        assert_eq!(
            flow(&f, true, &none),
            "cookie=0x0, duration=0.064985725s, table=3, n_packets=0, n_bytes=0, actions=drop"
        );
        let f = stats(
            "priority=32769,send_flow_rem,idle_timeout=10,hard_timeout=20,arp,actions=meter:1,goto_table:4",
            3,
            0,
            (0, 41_712_393),
        );
        assert_eq!(
            flow(&f, true, &none),
            "cookie=0x0, duration=0.041712393s, table=3, n_packets=0, n_bytes=0, idle_timeout=10, hard_timeout=20, send_flow_rem priority=32769,arp actions=meter:1,goto_table:4"
        );
        let f = stats("table=5,priority=0,actions=controller", 5, 5, (1, 0));
        assert_eq!(
            flow(&f, false, &none),
            "cookie=0x5, table=5, priority=0 actions=CONTROLLER:65535"
        );
        // --names: ports by name (ovs-ofctl --names printed these).
        let mut names = Names::default();
        names.insert_port(1, "p1");
        names.insert_port(2, "p2");
        names.insert_port(ofp::port::port_no::LOCAL, "br0");
        names.insert_table(0, "table0");
        let f = stats(
            "priority=10,in_port=1,actions=output:2,goto_table:1",
            0,
            0,
            (1, 0),
        );
        assert_eq!(
            flow(&f, false, &names),
            "table=table0, priority=10,in_port=p1 actions=output:p2,goto_table:1"
        );
        let f = stats("priority=3,in_port=local,actions=in_port", 0, 0, (1, 0));
        assert_eq!(
            flow(&f, true, &names),
            "cookie=0x0, duration=1s, table=table0, n_packets=0, n_bytes=0, priority=3,in_port=LOCAL actions=IN_PORT"
        );
        // Names in resubmit and learn; names ovs-ofctl quotes, quoted; a
        // name two tables share, not used.
        names.insert_port(3, "vm-1");
        names.insert_table(1, "l2_lookup");
        names.insert_table(2, "Out");
        names.insert_table(3, "Twice");
        names.insert_table(4, "Twice");
        let f = stats(
            "table=1,in_port=3,actions=resubmit(1,2),resubmit(,3),resubmit(3,),learn(table=2,NXM_OF_ETH_DST[]),goto_table:4",
            1,
            0,
            (1, 0),
        );
        assert_eq!(
            flow(&f, false, &names),
            "table=\"l2_lookup\", in_port=\"vm-1\" actions=resubmit(p1,Out),resubmit(,3),resubmit:\"vm-1\",learn(table=Out,NXM_OF_ETH_DST[]),goto_table:4"
        );
    }

    #[test]
    fn queue_config_as_ovs_ofctl() {
        use ofp::msg::simple::PacketQueue;
        let q = QueueGetConfigReply {
            port: ofp::port::port_no::ANY,
            queues: vec![
                PacketQueue {
                    queue_id: 1,
                    port: 2,
                    properties: vec![QueueProp::MaxRate(2)],
                },
                PacketQueue {
                    queue_id: 2,
                    port: 2,
                    properties: vec![QueueProp::MinRate(0), QueueProp::MaxRate(0xffff)],
                },
            ],
        };
        assert_eq!(
            queue_config(&q, 2),
            "OFPT_QUEUE_GET_CONFIG_REPLY (OF1.3) (xid=0x2): port=ANY\nqueue 1: max_rate:0.2%\nqueue 2: min_rate:0.0%\n"
        );
        let none = QueueGetConfigReply {
            port: 1,
            queues: vec![],
        };
        assert_eq!(
            queue_config(&none, 2),
            "OFPT_QUEUE_GET_CONFIG_REPLY (OF1.3) (xid=0x2):\n"
        );
    }

    #[test]
    fn headers_and_tables_as_ovs_ofctl() {
        assert_eq!(
            header("OFPST_FLOW reply", 2),
            "OFPST_FLOW reply (OF1.3) (xid=0x2):"
        );
        let t = |table_id, active_count| TableStats {
            table_id,
            name: Default::default(),
            active_count,
            lookup_count: 0,
            matched_count: 0,
        };
        let v = [
            t(0, 4),
            t(1, 2),
            t(2, 1),
            t(3, 1),
            t(4, 0),
            t(5, 0),
            t(6, 0),
        ];
        assert_eq!(
            table_stats(&v, 2),
            "OFPST_TABLE reply (OF1.3) (xid=0x2):\n  table 0:\n    active=4, lookup=0, matched=0\n\n  \
             table 1:\n    active=2, lookup=0, matched=0\n\n  table 2:\n    active=1, lookup=0, matched=0\n\n  \
             table 3: ditto\n\n  table 4:\n    active=0, lookup=0, matched=0\n\n  tables 5...6: ditto\n"
        );
        let a = AggregateStats {
            packet_count: 0,
            byte_count: 0,
            flow_count: 6,
        };
        assert_eq!(
            aggregate(&a, 2),
            "OFPST_AGGREGATE reply (OF1.3) (xid=0x2): packet_count=0 byte_count=0 flow_count=6\n"
        );
        let m = MeterFeatures {
            max_meter: 65536,
            band_types: 6,
            capabilities: 15,
            max_bands: 8,
            max_color: 0,
        };
        assert_eq!(
            meter_features(&m, 2),
            "OFPST_METER_FEATURES reply (OF1.3) (xid=0x2):\nmax_meter:65536 max_bands:8 max_color:0\n\
             band_types: drop dscp_remark\ncapabilities: kbps pktps burst stats\n"
        );
    }

    /// The three packet-in formats print the same packet-in alike, but
    /// for their name and NXT_PACKET_IN2's userdata line.
    #[test]
    fn packet_ins_of_every_format() {
        use ofp::msg::nxt::{NxPacketIn, PacketIn2};
        let p = PacketIn {
            buffer_id: ofp::port::NO_BUFFER,
            total_len: 4,
            reason: ofp::msg::flow::PacketInReason::Action,
            table_id: 3,
            cookie: 0x77,
            match_: ofp::Match::new()
                .with(ofp::Oxm::exact(ofp::OxmField::InPort, 1))
                .with(ofp::Oxm::exact(ofp::OxmField::Reg(0), 5)),
            data: bytes::Bytes::from_static(&[1, 2, 3, 4]),
        };
        let std = packet_in(&p);
        assert!(
            std.starts_with("OFPT_PACKET_IN (OF1.3): table_id=3 cookie=0x77 total_len=4 "),
            "{std}"
        );
        assert!(
            std.contains("reg0=0x5")
                && std.contains("(via action) data_len=4\n00000000  01 02 03 04\n"),
            "{std}"
        );
        let nx = nx_packet_in(&NxPacketIn::from_packet_in(&p));
        assert_eq!(nx, std.replacen("OFPT_PACKET_IN", "NXT_PACKET_IN", 1));
        let nx2 = packet_in2(&PacketIn2::from_packet_in(
            &p,
            bytes::Bytes::from_static(&[1, 0xab]),
        ));
        let (head, rest) = std.split_once('\n').unwrap();
        assert_eq!(
            nx2,
            format!(
                "{}\n userdata=01.ab\n{rest}",
                head.replacen("OFPT_PACKET_IN", "NXT_PACKET_IN2", 1)
            )
        );
    }
}
