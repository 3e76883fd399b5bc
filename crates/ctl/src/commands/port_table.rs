//! The port, queue and table commands: dump-ports, dump-ports-desc,
//! mod-port, queue-stats, queue-get-config, dump-tables,
//! dump-table-features and mod-table, and the port descriptions other
//! commands look ports up in ([`port_descs`]).
//!
//! Contract: a port, queue or table given on the command line (a number or
//! a reserved name; `all` where the command takes it) is checked before
//! connecting. mod-port is the exception: its port may be a name, found
//! among the switch's ports, so it connects first. mod-port and mod-table
//! send one change, alone, followed by a barrier; `mod-table TABLE
//! name:NAME` sends the switch's table features back with the name
//! changed (a TABLE_FEATURES request that sets them), as ovs-ofctl does.

use ofp::msg::multipart::{MultipartReplyBody as R, MultipartRequestBody as Q};
use ofp::msg::simple::{PortMod, TableMod};
use ofp::port::{port_no, PortDesc, TABLE_ALL};
use ofp::text::parse_port;
use ofp::Message;

use super::changes::modify;
use super::{usage, CmdError, Connect, Result};
use crate::client::{Client, ClientError};
use crate::{flows, print, Opts};

/// Every port the switch describes.
pub(crate) fn port_descs(c: &mut Client) -> Result<Vec<PortDesc>> {
    let mut v = Vec::new();
    for part in c.multipart(Q::PortDesc)? {
        if let R::PortDesc(p) = part.body {
            v.extend(p);
        }
    }
    Ok(v)
}

/// dump-ports: the counters of every port, or of `port`.
pub(super) fn dump_ports(
    connect: &Connect<'_>,
    switch: &str,
    port: Option<&str>,
    opts: &Opts,
) -> Result<String> {
    let port_no = match port {
        Some(p) => parse_port(p).or_else(|e| usage("port", e))?,
        None => port_no::ANY,
    };
    let mut c = connect(switch)?;
    let mut v = Vec::new();
    for part in c.multipart(Q::PortStats { port_no })? {
        if let R::PortStats(p) = part.body {
            v.extend(p);
        }
    }
    let xid = c.last_xid();
    let names = if opts.names {
        flows::port_names(&mut c)?
    } else {
        ofp::text::Names::new()
    };
    Ok(print::port_stats(&v, xid, &names))
}

/// dump-ports-desc: the port descriptions.
pub(super) fn dump_ports_desc(c: &mut Client) -> Result<String> {
    let ports = port_descs(c)?;
    let mut s = print::header("OFPST_PORT_DESC reply", c.last_xid());
    s.push('\n');
    for p in ports {
        s.push_str(&print::port_desc(&p));
    }
    Ok(s)
}

/// mod-port: sets or clears one config bit of the port named (by name or
/// number) `port`.
pub(super) fn mod_port(c: &mut Client, port: &str, action: &str) -> Result<String> {
    let (bit, set) = port_config_bit(action)?;
    let ports = port_descs(c)?;
    let p = ports
        .iter()
        .find(|p| p.name.as_str() == port || ofp::text::format_port(p.port_no) == port)
        .ok_or_else(|| CmdError::Usage(format!("mod-port: `{port}`: no such port")))?;
    let pm = PortMod {
        port_no: p.port_no,
        hw_addr: p.hw_addr,
        config: if set { bit } else { 0 },
        mask: bit,
        advertise: 0,
    };
    modify(c, &Message::PortMod(pm))
}

/// mod-port's ACTION: the port config bit it changes, and whether it sets
/// (true) or clears it.
fn port_config_bit(action: &str) -> Result<(u32, bool)> {
    use ofp::port::port_config as pc;
    const NO_FLOOD: u32 = 1 << 4;
    Ok(match action {
        "up" => (pc::PORT_DOWN, false),
        "down" => (pc::PORT_DOWN, true),
        "flood" => (NO_FLOOD, false),
        "no-flood" => (NO_FLOOD, true),
        "forward" => (pc::NO_FWD, false),
        "no-forward" => (pc::NO_FWD, true),
        "packet-in" => (pc::NO_PACKET_IN, false),
        "no-packet-in" => (pc::NO_PACKET_IN, true),
        "receive" => (pc::NO_RECV, false),
        "no-receive" => (pc::NO_RECV, true),
        _ => {
            return usage(
                "mod-port",
                format!("`{action}`: expected up, down, flood, no-flood, forward, no-forward, packet-in, no-packet-in, receive or no-receive"),
            )
        }
    })
}

/// queue-stats: the counters of the queues of every port or `port` (`ALL`
/// or `any` in either case is every port), every queue or `queue`.
pub(super) fn queue_stats(
    connect: &Connect<'_>,
    switch: &str,
    port: Option<&str>,
    queue: Option<u32>,
) -> Result<String> {
    let port_no = match port {
        Some("ALL" | "all" | "any" | "ANY") | None => port_no::ANY,
        Some(p) => parse_port(p).or_else(|e| usage("port", e))?,
    };
    let queue_id = queue.unwrap_or(ofp::port::QUEUE_ALL);
    let mut c = connect(switch)?;
    let mut v = Vec::new();
    for part in c.multipart(Q::Queue { port_no, queue_id })? {
        if let R::Queue(q) = part.body {
            v.extend(q);
        }
    }
    Ok(print::queue_stats(&v, c.last_xid()))
}

/// queue-get-config: the queues configured on `port` (default: all ports).
pub(super) fn queue_get_config(
    connect: &Connect<'_>,
    switch: &str,
    port: Option<&str>,
) -> Result<String> {
    let port = match port {
        None => port_no::ANY,
        Some(p) => parse_port(p).or_else(|e| usage("port", e))?,
    };
    let mut c = connect(switch)?;
    match c.request(&Message::QueueGetConfigRequest { port })? {
        Message::QueueGetConfigReply(q) => Ok(print::queue_config(&q, c.last_xid())),
        m => Err(ClientError::Unexpected(format!("{:?}", m.msg_type())).into()),
    }
}

/// dump-tables: the tables' counters.
pub(super) fn dump_tables(c: &mut Client) -> Result<String> {
    let mut v = Vec::new();
    for part in c.multipart(Q::Table)? {
        if let R::Table(t) = part.body {
            v.extend(t);
        }
    }
    Ok(print::table_stats(&v, c.last_xid()))
}

/// dump-table-features: the features of every table, or of `table`.
pub(super) fn dump_table_features(
    connect: &Connect<'_>,
    switch: &str,
    table: Option<&str>,
) -> Result<String> {
    let only = match table {
        None | Some("all") => None,
        Some(t) => Some(t.parse::<u8>().or_else(|_| {
            usage(
                "table",
                format!("`{t}`: expected a table number (0-254) or all"),
            )
        })?),
    };
    let mut c = connect(switch)?;
    let parts = c.multipart(Q::TableFeatures(Vec::new()))?;
    let xid = c.last_xid();
    let mut v = Vec::new();
    for part in parts {
        if let R::TableFeatures(t) = part.body {
            v.extend(
                t.into_iter()
                    .filter(|t| only.is_none_or(|n| t.table_id == n)),
            );
        }
    }
    Ok(crate::features::table_features(&v, xid))
}

/// mod-table: sets a table's config, or with `name:NAME` its name.
pub(super) fn mod_table(
    connect: &Connect<'_>,
    switch: &str,
    table: &str,
    setting: &str,
) -> Result<String> {
    if let Some(name) = setting.strip_prefix("name:") {
        return rename_table(&mut connect(switch)?, table, name);
    }
    let tm = table_mod(table, setting)?;
    modify(&mut connect(switch)?, &Message::TableMod(tm))
}

/// `mod-table SWITCH TABLE name:NAME`, as ovs-ofctl does it under
/// OpenFlow 1.3: the switch's table features, read, sent back whole with
/// table TABLE (a number, or a name the switch reports) renamed NAME (cut
/// to 31 bytes; empty: no name), in as many messages as they take. The
/// switch refuses what it cannot change (`OFPTFFC_EPERM` for a name its
/// configuration gives).
fn rename_table(c: &mut Client, table: &str, name: &str) -> Result<String> {
    let mut tables = Vec::new();
    for part in c.multipart(Q::TableFeatures(Vec::new()))? {
        if let R::TableFeatures(t) = part.body {
            tables.extend(t);
        }
    }
    let id = match table.parse::<u8>() {
        Ok(n) => n,
        Err(_) => {
            let named: Vec<u8> = tables
                .iter()
                .filter(|t| t.name.as_str() == table)
                .map(|t| t.table_id)
                .collect();
            match named[..] {
                [id] => id,
                _ => {
                    return usage(
                        "table",
                        format!("`{table}`: expected a table number (0-254) or a table's name"),
                    )
                }
            }
        }
    };
    let Some(t) = tables.iter_mut().find(|t| t.table_id == id) else {
        return Err(CmdError::Usage(format!("switch does not have table {id}")));
    };
    t.name = ofp::wire::FixedStr::new(name);
    // As many tables a message as fit in 64 KiB.
    let mut bodies: Vec<Vec<ofp::msg::table_features::TableFeatures>> = vec![Vec::new()];
    let mut len = 0;
    for t in tables {
        let l = Message::MultipartRequest(ofp::msg::multipart::MultipartRequest::new(
            Q::TableFeatures(vec![t.clone()]),
        ))
        .to_bytes(0)
        .len()
            - 16;
        let cur = bodies.last_mut().expect("one");
        if !cur.is_empty() && len + l > ofp::header::MAX_MSG_LEN - 16 {
            bodies.push(Vec::new());
            len = 0;
        }
        len += l;
        bodies.last_mut().expect("one").push(t);
    }
    c.multipart_parts(bodies.into_iter().map(Q::TableFeatures).collect())?;
    Ok(String::new())
}

/// mod-table's TABLE and SETTING: the OpenFlow 1.1/1.2 names of the
/// table-miss bits (controller 0, continue 1, drop 2), which OpenFlow 1.3
/// keeps only as deprecated bits, or the config as a number.
fn table_mod(table: &str, setting: &str) -> Result<TableMod> {
    let table_id = match table {
        "all" => TABLE_ALL,
        t => match t.parse::<u8>() {
            Ok(n) if n != TABLE_ALL => n,
            _ => {
                return usage(
                    "table",
                    format!("`{t}`: expected a table number (0-254) or all"),
                )
            }
        },
    };
    let config = match setting {
        "controller" => 0,
        "continue" => 1,
        "drop" => 2,
        n => ofp::text::parse_num::<u32>(n, "controller, continue, drop or a number")
            .or_else(|e| usage("setting", e))?,
    };
    Ok(TableMod { table_id, config })
}
