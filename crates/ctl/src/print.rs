//! Printing replies the way ovs-ofctl does, so that its users read them
//! at a glance. Groups and meters print in the syntax `add-group` and
//! `add-meter` read, so a dump can be fed back.

use ofp::msg::group::GroupMod;
use ofp::msg::meter::{MeterMod, MeterModCommand};
use ofp::msg::multipart::{
    FlowStats, GroupDesc, GroupStats, MeterConfig, MeterStats, PortStats, QueueStats, TableStats,
};
use ofp::msg::simple::{FeaturesReply, PortStatus, SwitchConfig};
use ofp::port::{port_config, port_state, PortDesc};
use ofp::text::{format_instructions, format_match, format_port};
use ofp::{FlowRemoved, PacketIn};

fn mac(a: &[u8; 6]) -> String {
    a.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn duration(sec: u32, nsec: u32) -> String {
    format!("{sec}.{:03}s", nsec / 1_000_000)
}

/// `show`: features, then every port.
pub fn features(f: &FeaturesReply, ports: &[PortDesc], config: &SwitchConfig) -> String {
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
        "OFPT_FEATURES_REPLY (OF1.3): dpid:{:016x}\nn_tables:{}, n_buffers:{}\ncapabilities: {}\n",
        f.datapath_id,
        f.n_tables,
        f.n_buffers,
        caps.join(" ")
    );
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
        "OFPT_GET_CONFIG_REPLY (OF1.3): frags={frags} miss_send_len={}\n",
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
    format!(
        " {}({}): addr:{}\n     config:     {config}\n     state:      {state}\n     speed: {} Mbps now, {} Mbps max\n",
        format_port(p.port_no).to_uppercase(),
        p.name.as_str(),
        mac(&p.hw_addr),
        p.curr_speed / 1000,
        p.max_speed / 1000
    )
}

/// One flow as `dump-flows` prints it.
pub fn flow(f: &FlowStats) -> String {
    let mut s = format!(
        " cookie={:#x}, duration={}, table={}, n_packets={}, n_bytes={}, ",
        f.cookie,
        duration(f.duration_sec, f.duration_nsec),
        f.table_id,
        f.packet_count,
        f.byte_count
    );
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
    s.push_str(&format!("priority={}", f.priority));
    let m = format_match(&f.match_);
    if !m.is_empty() {
        s.push(',');
        s.push_str(&m);
    }
    s.push_str(&format!(
        " actions={}",
        format_instructions(&f.instructions)
    ));
    s
}

/// `dump-ports`.
pub fn port_stats(v: &[PortStats]) -> String {
    let mut s = format!("OFPST_PORT reply (OF1.3): {} ports\n", v.len());
    for p in v {
        s.push_str(&format!(
            "  port {:>5}: rx pkts={}, bytes={}, drop={}, errs={}, frame={}, over={}, crc={}\n",
            format_port(p.port_no).to_uppercase(),
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
pub fn queue_stats(v: &[QueueStats]) -> String {
    let mut s = format!("OFPST_QUEUE reply (OF1.3): {} queues\n", v.len());
    for q in v {
        s.push_str(&format!(
            "  port {} queue {}: bytes={}, pkts={}, errors={}, duration={}\n",
            format_port(q.port_no).to_uppercase(),
            q.queue_id,
            q.tx_bytes,
            q.tx_packets,
            q.tx_errors,
            duration(q.duration_sec, q.duration_nsec)
        ));
    }
    s
}

/// `dump-tables`: tables in use one by one, runs of unused ones condensed.
pub fn table_stats(v: &[TableStats]) -> String {
    let mut s = String::from("OFPST_TABLE reply (OF1.3):\n");
    let mut idle_from: Option<u8> = None;
    let flush = |s: &mut String, from: Option<u8>, to: u8| {
        if let Some(a) = from {
            if a == to {
                s.push_str(&format!("  table {a}: unused\n"));
            } else {
                s.push_str(&format!("  tables {a}...{to}: unused\n"));
            }
        }
    };
    let mut last = 0;
    for t in v {
        last = t.table_id;
        let used = t.active_count != 0 || t.lookup_count != 0;
        if !used {
            idle_from.get_or_insert(t.table_id);
            continue;
        }
        flush(&mut s, idle_from.take(), t.table_id.saturating_sub(1));
        s.push_str(&format!(
            "  table {}:\n    active={}, lookup={}, matched={}\n",
            t.table_id, t.active_count, t.lookup_count, t.matched_count
        ));
    }
    flush(&mut s, idle_from, last);
    s
}

/// `dump-groups`: each group as `add-group` reads it.
pub fn group_desc(v: &[GroupDesc]) -> String {
    let mut s = String::from("OFPST_GROUP_DESC reply (OF1.3):\n");
    for g in v {
        let gm = GroupMod {
            command: ofp::msg::group::GroupModCommand::Add,
            group_type: g.group_type,
            group_id: g.group_id,
            buckets: g.buckets.clone(),
        };
        s.push_str(&format!(" {}\n", ofp::text::format_group_mod(&gm)));
    }
    s
}

/// `dump-group-stats`.
pub fn group_stats(v: &[GroupStats]) -> String {
    let mut s = String::from("OFPST_GROUP reply (OF1.3):\n");
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
pub fn meter_config(v: &[MeterConfig]) -> String {
    let mut s = String::from("OFPST_METER_CONFIG reply (OF1.3):\n");
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
pub fn meter_stats(v: &[MeterStats]) -> String {
    let mut s = String::from("OFPST_METER reply (OF1.3):\n");
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

/// An asynchronous message as `monitor` prints it.
pub fn packet_in(p: &PacketIn) -> String {
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
    format!(
        "OFPT_PACKET_IN (OF1.3): table_id={} cookie={:#x} total_len={} {m} (via {}){buffer} data_len={}\n{}\n",
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
        "OFPT_FLOW_REMOVED (OF1.3): priority={},{} reason={} table_id={} cookie={:#x} duration={} idle{} hard{} pkts{} bytes{}\n",
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
        "OFPT_PORT_STATUS (OF1.3): {}\n{}",
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
