//! The ARP-responder controller (see the crate docs).

use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ofp::msg::flow::PacketOut;
use ofp::msg::simple::Hello;
use ofp::port::{port_no, NO_BUFFER};
use ofp::{Action, Framer, Message, OxmField};

use crate::arp;

pub struct Options {
    pub listen: String,
    pub expect: Option<u64>,
    pub idle: Duration,
    pub wait: Duration,
}

/// What one run served.
#[derive(Debug, Default)]
pub struct Report {
    pub packet_ins: u64,
    pub packet_outs: u64,
    /// PACKET_INs that carried no ARP request.
    pub ignored: u64,
    /// OFPT_ERRORs the switch sent.
    pub errors: u64,
    /// First PACKET_IN to the write of the last PACKET_OUT.
    pub seconds: f64,
}

impl Report {
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.packet_outs as f64 / self.seconds
        } else {
            0.0
        }
    }

    pub fn text(&self) -> String {
        format!(
            "arp-responder: {} PACKET_IN, {} PACKET_OUT ({} ignored, {} errors) in {:.3} s: {:.0} round trips/s\n",
            self.packet_ins, self.packet_outs, self.ignored, self.errors, self.seconds, self.rate()
        )
    }

    /// The same figures as one JSON object.
    pub fn json(&self) -> String {
        let fields = [
            ("packet_ins", self.packet_ins.to_string()),
            ("packet_outs", self.packet_outs.to_string()),
            ("ignored", self.ignored.to_string()),
            ("errors", self.errors.to_string()),
            ("seconds", format!("{:.6}", self.seconds)),
            ("round_trips_per_s", format!("{:.0}", self.rate())),
        ];
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect();
        format!("{{{}}}\n", body.join(", "))
    }
}

/// Waits for the switch, sets it up, answers until done.
pub fn run(o: &Options) -> Result<Report, String> {
    let l = TcpListener::bind(&o.listen).map_err(|e| format!("{}: {e}", o.listen))?;
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let mut s = loop {
        match l.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && t0.elapsed() < o.wait => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(format!(
                    "no switch connected to {} within {:?}",
                    o.listen, o.wait
                ))
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    s.set_nonblocking(false).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(|e| e.to_string())?;

    // HELLO and FEATURES_REQUEST (a controller's handshake: the switch
    // leaves standalone mode on it), the table-miss flow to the controller
    // (whole frames, no buffering), and a barrier.
    let mut out = Vec::with_capacity(1 << 20);
    Message::Hello(Hello::ours()).encode(1, &mut out);
    Message::FeaturesRequest.encode(4, &mut out);
    let miss = ofp::text::parse_flow_mod("priority=0,actions=CONTROLLER:65535")
        .map_err(|e| e.to_string())?;
    Message::FlowMod(miss).encode(2, &mut out);
    Message::BarrierRequest.encode(3, &mut out);
    s.write_all(&out).map_err(|e| format!("write: {e}"))?;
    out.clear();

    let mut r = Report::default();
    let mut framer = Framer::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut first: Option<Instant> = None;
    let mut last_in = Instant::now();
    let mut last_out = Instant::now();
    let started = Instant::now();
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                0
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(format!("read: {e}")),
        };
        framer.push(&buf[..n]);
        while let Some(m) = framer.next_message() {
            let Ok((h, m)) = m else {
                r.errors += 1;
                continue;
            };
            match m {
                Message::EchoRequest(d) => Message::EchoReply(d).encode(h.xid, &mut out),
                Message::Error(e) => {
                    if r.errors == 0 {
                        eprintln!("sluice-bench: the switch answered {}", e.code);
                    }
                    r.errors += 1;
                }
                Message::PacketIn(pi) => {
                    let now = Instant::now();
                    first.get_or_insert(now);
                    last_in = now;
                    r.packet_ins += 1;
                    let in_port = pi.match_.get(OxmField::InPort).map(|o| o.value as u32);
                    match (arp::reply(&pi.data), in_port) {
                        (Some(reply), Some(port)) => {
                            Message::PacketOut(PacketOut {
                                buffer_id: NO_BUFFER,
                                in_port: port_no::CONTROLLER,
                                actions: vec![Action::Output { port, max_len: 0 }],
                                data: Bytes::from(reply),
                            })
                            .encode(h.xid, &mut out);
                            r.packet_outs += 1;
                        }
                        _ => r.ignored += 1,
                    }
                }
                _ => {}
            }
        }
        if !out.is_empty() {
            s.write_all(&out).map_err(|e| format!("write: {e}"))?;
            out.clear();
            last_out = Instant::now();
        }
        if o.expect.is_some_and(|e| r.packet_outs >= e) {
            break;
        }
        match first {
            Some(_) if last_in.elapsed() >= o.idle => break,
            None if started.elapsed() >= o.wait => break,
            _ => {}
        }
    }
    if let Some(f) = first {
        r.seconds = last_out.duration_since(f).as_secs_f64();
    }
    Ok(r)
}
