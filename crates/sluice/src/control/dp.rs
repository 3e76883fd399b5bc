//! How a bridge's agent reaches its datapath: publishing snapshots,
//! handing over PACKET_OUTs, reading port and queue counters, and the
//! management commands that change the datapath itself (`add-port`,
//! `del-port`, `fdb-show`, `fdb-flush`, `vlog`).

use std::sync::Arc;
use std::time::Duration;

use agent::{Datapath, PortInfo};
use bytes::Bytes;
use datapath::channel::PacketOutJob;
use datapath::{Backend, PcapSpec, PortSpec};
use ofp::msg::multipart::PortStats;
use pipeline::Snapshot;

use crate::portnums::PortNumbers;

/// Changes the daemon's log filter (`vlog`): the new filter's text, or why
/// the given one was refused.
pub type SetLog = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// What the agent reaches the datapath through.
pub struct DpHandle {
    pub bridge: datapath::Bridge,
    /// The back end of a port added without `backend=`.
    pub default_backend: Backend,
    /// Stable port numbers.
    pub numbers: PortNumbers,
    /// `vlog`; None where the log level is fixed.
    pub set_log: Option<SetLog>,
}

/// How long a port change may take to reach every worker (a worker takes
/// it within one round: at most a 10 ms idle poll plus one batch).
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(1);

impl DpHandle {
    /// Reads `add-port`'s words: `IFACE [ofport=N] [backend=NAME]
    /// [pcap_in=FILE] [pcap_out=FILE]`, or for a tunnel port `NAME
    /// type=vxlan|geneve [ofport=N] OPTION=VALUE...` with the tunnel
    /// options (`remote_ip`, `key`, `local_ip`, `dst_port`, `ttl`, `tos`;
    /// also written `options:remote_ip=...` as ovs-vsctl does).
    fn port_spec(&self, words: &[String], taken: &[u32]) -> Result<PortSpec, String> {
        let name = words.first().ok_or("which interface?")?;
        crate::config::check_ifname(name)?;
        let mut no = None;
        let mut backend = self.default_backend;
        let mut pcap = PcapSpec::default();
        let mut tunnel: Option<datapath::TunnelProto> = None;
        let mut options: Vec<(&str, &str)> = Vec::new();
        let mut named_backend = false;
        for w in &words[1..] {
            let (k, v) = w.split_once('=').ok_or_else(|| {
                format!("{w:?}: expected KEY=VALUE (ofport, backend, pcap_in, pcap_out, type, or a tunnel option)")
            })?;
            let k = k.strip_prefix("options:").unwrap_or(k);
            match k {
                "type" => {
                    tunnel = Some(datapath::tunnel_proto(v).ok_or_else(|| {
                        format!("type={v}: not a port type ({})", datapath::TUNNEL_TYPES)
                    })?)
                }
                "remote_ip" | "local_ip" | "key" | "in_key" | "out_key" | "dst_port" | "ttl"
                | "tos" => options.push((k, v)),
                "ofport" => {
                    let n: u32 = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=ofp::port::port_no::MAX).contains(n))
                        .ok_or_else(|| {
                            format!(
                                "ofport={v}: not a usable OpenFlow port number (1-{})",
                                ofp::port::port_no::MAX
                            )
                        })?;
                    if taken.contains(&n) {
                        return Err(format!("ofport={n}: the number is taken"));
                    }
                    no = Some(n);
                }
                "backend" => {
                    named_backend = true;
                    backend = Backend::parse(v).ok_or_else(|| {
                        format!("backend={v}: not a back end ({})", datapath::BACKENDS)
                    })?
                }
                "pcap_in" => pcap.input = Some(v.into()),
                "pcap_out" => pcap.output = Some(v.into()),
                _ => {
                    return Err(format!(
                        "{k}: no such option (ofport, backend, pcap_in, pcap_out, type, {})",
                        datapath::TUNNEL_OPTIONS
                    ))
                }
            }
        }
        match tunnel {
            Some(proto) => {
                if named_backend || pcap.input.is_some() || pcap.output.is_some() {
                    return Err(format!(
                        "a {} port takes no backend, pcap_in or pcap_out",
                        proto.name()
                    ));
                }
                backend = Backend::Tunnel(
                    datapath::tunnel_spec(proto, options).map_err(|(k, p)| format!("{k}: {p}"))?,
                );
            }
            None if !options.is_empty() => {
                return Err(format!(
                    "{}: a tunnel option; give type={}",
                    options[0].0,
                    datapath::TUNNEL_TYPES
                ))
            }
            None => {}
        }
        let has_pcap = pcap.input.is_some() || pcap.output.is_some();
        if has_pcap != (backend == Backend::Pcap) {
            return Err("pcap_in/pcap_out go with backend=pcap, which needs one of them".into());
        }
        let port_no = match no {
            Some(n) => n,
            None => self
                .numbers
                .choose(name, taken)
                .ok_or("no OpenFlow port number is free")?,
        };
        Ok(PortSpec {
            port_no,
            name: name.clone(),
            backend,
            pcap: has_pcap.then_some(pcap),
            queues: Vec::new(),
        })
    }

    fn fdb_show(&self) -> String {
        let now = datapath::clock::now_ns();
        let mut out = String::from(" port  VLAN  MAC                Age\n");
        for (vlan, mac, port, age) in self.bridge.macs.entries(now) {
            let port = match port {
                ofp::port::port_no::LOCAL => "LOCAL".to_string(),
                p => p.to_string(),
            };
            out.push_str(&format!(
                "{port:>5}  {vlan:>4}  {}  {age:>3}\n",
                ofp::text::format_mac(mac)
            ));
        }
        out
    }
}

impl Datapath for DpHandle {
    fn publish(&self, snap: Arc<Snapshot>) {
        self.bridge.publish(snap);
    }

    fn packet_out(&self, in_port: u32, actions: Vec<ofp::Action>, frame: Bytes) -> bool {
        self.bridge.channels.to_datapath(PacketOutJob {
            in_port,
            actions,
            frame: frame.to_vec(),
        })
    }

    fn fast_path_ports(&self) -> Option<Vec<u32>> {
        self.bridge.fast_path_ports()
    }

    fn port_stats(&self, port_no: u32) -> Option<PortStats> {
        use std::sync::atomic::Ordering::Relaxed;
        let t = self.bridge.port_counters(port_no)?;
        Some(PortStats {
            port_no,
            rx_packets: t.rx_packets.load(Relaxed),
            tx_packets: t.tx_packets.load(Relaxed),
            rx_bytes: t.rx_bytes.load(Relaxed),
            tx_bytes: t.tx_bytes.load(Relaxed),
            tx_dropped: t.tx_dropped.load(Relaxed),
            rx_errors: t.rx_errors.load(Relaxed),
            ..PortStats::default()
        })
    }

    fn queue_stats(&self, port_no: u32, queue_id: u32) -> Option<(u64, u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        let c = self.bridge.queue_counters(port_no, queue_id)?;
        Some((
            c.tx_bytes.load(Relaxed),
            c.tx_packets.load(Relaxed),
            c.tx_errors.load(Relaxed),
        ))
    }

    fn add_port(&mut self, words: &[String], taken: &[u32]) -> Result<PortInfo, String> {
        let spec = self.port_spec(words, taken)?;
        let (no, name) = (spec.port_no, spec.name.clone());
        let a = self.bridge.add_port(spec).map_err(|e| e.to_string())?;
        self.numbers.remember(&name, no);
        tracing::info!(bridge = %self.bridge.name, port = no, name = %name, "port added");
        Ok(PortInfo {
            link_up: a.link_up,
            ..PortInfo::new(no, &name, a.hw_addr)
        })
    }

    fn del_port(&mut self, port_no: u32) -> Result<(), String> {
        let spec = self
            .bridge
            .remove_port(port_no)
            .ok_or_else(|| format!("no port {port_no} in the datapath"))?;
        if !self.bridge.wait_applied(APPLY_TIMEOUT) {
            tracing::warn!(bridge = %self.bridge.name, port = port_no, "a worker has not let go of the deleted port within 1 s");
        }
        tracing::info!(bridge = %self.bridge.name, port = port_no, name = %spec.name, "port deleted");
        Ok(())
    }

    fn mac_lookup(&self, vlan: u16, mac: u64) -> Option<u32> {
        self.bridge
            .macs
            .lookup(vlan, mac, datapath::clock::now_ns())
    }

    fn command(&mut self, words: &[String]) -> Option<Result<String, String>> {
        let args = &words[1..];
        Some(match (words[0].as_str(), args.len()) {
            ("fdb-show", 0) => Ok(self.fdb_show()),
            ("fdb-flush", 0) => {
                self.bridge.macs.flush();
                Ok("MAC table flushed\n".into())
            }
            ("vlog", 1) => match &self.set_log {
                Some(f) => f(&args[0]).map(|now| format!("log filter: {now}\n")),
                None => Err("vlog: this daemon's log level is fixed".into()),
            },
            ("fdb-show" | "fdb-flush", _) => Err(format!("{}: takes no argument", words[0])),
            ("vlog", _) => {
                Err("vlog: one LEVEL or FILTER (as RUST_LOG: info, debug, sluice=trace,...)".into())
            }
            _ => return None,
        })
    }
}
