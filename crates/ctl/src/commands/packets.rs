//! Packets through the switch: packet-out sends one through actions,
//! monitor prints the asynchronous messages the switch sends
//! (packet-in, flow-removed, port-status), trace asks sluice what its
//! tables would do with one.
//!
//! Contract: a packet is hex or a flow description (`crate::frame`), read
//! before connecting, as are the port and actions. monitor prints each
//! message as it arrives (its returned text is empty) and stops after
//! `--count` messages or `--duration` seconds (a failed connection ends it
//! with the error).
//! trace is a sluice extension: a switch that does not know it is named as
//! the reason of the refusal.

use std::io::Write;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ofp::msg::nxt::{NxtMsg, PacketInFormat};
use ofp::msg::sluice::{TraceRequest, SLUICE_EXPERIMENTER, TRACE_REPLY};
use ofp::port::NO_BUFFER;
use ofp::text::{parse_actions, parse_port};
use ofp::{Message, PacketOut};

use super::changes::modify;
use super::{usage, CmdError, Connect, Result};
use crate::client::{Client, ClientError};
use crate::{frame, print};

/// packet-out: sends `packet` through `actions` as if it came in on
/// `in_port`.
pub(super) fn packet_out(
    connect: &Connect<'_>,
    switch: &str,
    in_port: &str,
    actions: &str,
    packet: &str,
) -> Result<String> {
    let in_port = parse_port(in_port).or_else(|e| usage("in_port", e))?;
    let actions = parse_actions(actions).or_else(|e| usage("actions", e))?;
    let frame = frame::parse(packet).map_err(CmdError::Usage)?.frame;
    let po = PacketOut {
        buffer_id: NO_BUFFER,
        in_port,
        actions,
        data: Bytes::from(frame),
    };
    modify(&mut connect(switch)?, &Message::PacketOut(po))
}

/// monitor: prints packet-ins, flow-removeds and port-statuses as they
/// come, until `count` of them or `duration` seconds. The packet-in
/// format is `format` (refused: an error), else NXT_PACKET_IN2 if the
/// switch takes it, as ovs-ofctl asks.
pub(super) fn monitor(
    c: &mut Client,
    format: Option<PacketInFormat>,
    count: Option<u64>,
    duration: Option<f64>,
) -> Result<String> {
    let ask = NxtMsg::SetPacketInFormat(format.unwrap_or(PacketInFormat::Nxt2)).message();
    match (modify(c, &ask), format) {
        (Err(CmdError::Refused(why)), Some(f)) => {
            return Err(CmdError::Refused(format!("packet-in format {f}: {why}")))
        }
        (Err(CmdError::Refused(_)), None) | (Ok(_), _) => {}
        (Err(e), _) => return Err(e),
    }
    let deadline = duration.map(|d| Instant::now() + Duration::from_secs_f64(d.max(0.0)));
    let mut seen = 0u64;
    let stdout = std::io::stdout();
    while count.is_none_or(|n| seen < n) {
        let wait = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if wait.is_some_and(|w| w.is_zero()) {
            break;
        }
        let Some((_, m)) = c.next_async(wait)? else {
            break;
        };
        let text = match &m {
            Message::PacketIn(p) => print::packet_in(p),
            Message::Experimenter(e) => match NxtMsg::decode(e) {
                Some(Ok(NxtMsg::PacketIn(p))) => print::nx_packet_in(&p),
                Some(Ok(NxtMsg::PacketIn2(p))) => print::packet_in2(&p),
                _ => continue,
            },
            Message::FlowRemoved(f) => print::flow_removed(f),
            Message::PortStatus(p) => print::port_status(p),
            _ => continue,
        };
        seen += 1;
        let mut out = stdout.lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    Ok(String::new())
}

/// trace: `args` is IN_PORT then PACKET, or PACKET alone with `in_port=`
/// in it.
pub(super) fn trace(connect: &Connect<'_>, switch: &str, args: &[String]) -> Result<String> {
    let (port, packet) = match args {
        [p, pkt] => (Some(p.as_str()), pkt.as_str()),
        [pkt] => (None, pkt.as_str()),
        _ => return usage("trace", "expected [IN_PORT] PACKET"),
    };
    let d = frame::parse(packet).map_err(CmdError::Usage)?;
    let in_port = match (port, d.in_port) {
        (Some(p), _) => parse_port(p).or_else(|e| usage("in_port", e))?,
        (None, Some(p)) => p,
        (None, None) => return usage("trace", "give IN_PORT, or in_port= in the packet"),
    };
    request_trace(&mut connect(switch)?, in_port, d.frame)
}

/// Sends sluice's TRACE_REQUEST for `frame` arriving on `in_port`; the
/// switch's account of it.
fn request_trace(c: &mut Client, in_port: u32, frame: Vec<u8>) -> Result<String> {
    let req = TraceRequest {
        in_port,
        frame: Bytes::from(frame),
    };
    match c.request(&req.message()) {
        Ok(Message::Experimenter(e))
            if e.experimenter == SLUICE_EXPERIMENTER && e.exp_type == TRACE_REPLY =>
        {
            Ok(String::from_utf8_lossy(&e.data).into_owned())
        }
        Ok(m) => Err(ClientError::Unexpected(format!("{:?}", m.msg_type())).into()),
        Err(ClientError::Refused(code)) => Err(CmdError::Refused(format!(
            "trace: the switch answered {code} (trace is a sluice extension)"
        ))),
        Err(e) => Err(e.into()),
    }
}
