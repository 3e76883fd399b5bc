//! The daemon's side of the commands: [`Switch`] over its running
//! bridges, reusing what `sluice-ctl` reaches over OpenFlow (the agent's
//! management commands and trace) and what the metrics read (counters,
//! the published pipeline, the MAC table, the tracker).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use datapath::{BridgeCounters, PortCounters};

use super::commands::{DatapathPort, DatapathView, Switch};
use super::vlog::Level;
use crate::running::Running;

/// Reads the running log filter.
pub type GetLog = Arc<dyn Fn() -> String + Send + Sync>;

/// The daemon's log filter: set and read.
#[derive(Clone)]
pub struct Logging {
    pub set: datapath::SetLog,
    pub get: GetLog,
}

/// `bridge/dump-flows` stops after this many bytes of text (a million
/// flows are ~150 MB of it).
const DUMP_BYTES: usize = 64 << 20;

/// The bridges, for one command.
pub struct Host<'a> {
    pub bridges: &'a mut [Running],
    pub log: Option<&'a Logging>,
}

impl Host<'_> {
    fn find(&mut self, name: &str) -> Option<&mut Running> {
        self.bridges.iter_mut().find(|r| r.name == name)
    }
}

impl Switch for Host<'_> {
    fn bridges(&self) -> Vec<String> {
        self.bridges.iter().map(|r| r.name.clone()).collect()
    }

    fn command(&mut self, bridge: &str, words: &[String]) -> Result<String, String> {
        let r = self.find(bridge).ok_or("no such bridge")?;
        r.control.handle_command(words)
    }

    fn port_number(&self, bridge: &str, name: &str) -> Option<u32> {
        let r = self.bridges.iter().find(|r| r.name == bridge)?;
        r.bridge()
            .ports()
            .find(|p| p.name == name)
            .map(|p| p.port_no)
    }

    fn trace(
        &mut self,
        bridge: &str,
        in_port: u32,
        frame: &[u8],
        opts: &pipeline::trace::Options,
    ) -> String {
        match self.find(bridge) {
            Some(r) => r.control.trace_with(in_port, frame, opts),
            None => String::new(),
        }
    }

    fn dump_flows(&mut self, bridge: &str) -> String {
        let Some(r) = self.find(bridge) else {
            return String::new();
        };
        let now = datapath::clock::now_ns();
        let flows = r
            .control
            .agent()
            .pipeline()
            .flow_stats(&Default::default(), now)
            .unwrap_or_default();
        let mut s = String::new();
        for (i, f) in flows.iter().enumerate() {
            if s.len() > DUMP_BYTES {
                s.push_str(&format!(
                    "... {} more flows not shown (the reply stops at {} MiB; sluice-ctl dump-flows shows all)\n",
                    flows.len() - i,
                    DUMP_BYTES >> 20
                ));
                break;
            }
            s.push_str(&flow_line(f));
        }
        s
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut port = [0u64; 7];
        let mut br = [0u64; 8];
        for r in self.bridges.iter() {
            let b = r.bridge();
            for v in b.view().load().iter() {
                let c = PortCounters::sum(&v.counters);
                for (slot, n) in port.iter_mut().zip([
                    &c.rx_packets,
                    &c.rx_bytes,
                    &c.tx_packets,
                    &c.tx_bytes,
                    &c.tx_dropped,
                    &c.rx_errors,
                    &c.rx_truncated,
                ]) {
                    *slot += n.load(Relaxed);
                }
            }
            let t = BridgeCounters::sum(&b.counters);
            for (slot, n) in br.iter_mut().zip([
                &t.dropped,
                &t.to_controller,
                &t.skipped_edits,
                &t.over_limit,
                &t.tun_opts_refused,
                &t.learn_repeated,
                &t.learn_dropped,
                &t.batches,
            ]) {
                *slot += n.load(Relaxed);
            }
        }
        [
            "rx_packets",
            "rx_bytes",
            "tx_packets",
            "tx_bytes",
            "tx_dropped",
            "rx_errors",
            "rx_truncated",
            "pipeline_dropped",
            "to_controller",
            "skipped_edits",
            "output_limit_drops",
            "geneve_options_refused",
            "learn_repeated",
            "learn_dropped",
            "worker_rounds",
        ]
        .iter()
        .zip(port.iter().chain(br.iter()))
        .map(|(n, v)| (n.to_string(), *v))
        .collect()
    }

    fn memory(&self) -> Vec<(String, u64)> {
        let now = datapath::clock::now_ns();
        let (mut ports, mut rules, mut workers, mut macs, mut conns) = (0, 0, 0, 0, 0);
        for r in self.bridges.iter() {
            let b = r.bridge();
            ports += b.ports().count() as u64;
            let snap = b.pipeline.load();
            rules += snap.tables.iter().map(|t| t.len() as u64).sum::<u64>();
            conns += snap.conntrack.len();
            workers += r.cpus.len() as u64;
            macs += b.macs.len(now) as u64;
        }
        // Sorted by name, as Open vSwitch prints them.
        vec![
            ("bridges".into(), self.bridges.len() as u64),
            ("conntrack".into(), conns),
            ("mac_entries".into(), macs),
            ("ports".into(), ports),
            ("rules".into(), rules),
            ("workers".into(), workers),
        ]
    }

    fn log_filter(&self) -> String {
        self.log.map_or_else(String::new, |l| (l.get)())
    }

    fn set_log_filter(&mut self, spec: &str) -> Result<String, String> {
        match self.log {
            Some(l) => (l.set)(spec),
            None => Err("vlog/set: this daemon's log level is fixed".into()),
        }
    }

    fn log_level(&self, module: &str) -> Level {
        level_of(module)
    }

    fn datapath_views(&self) -> Vec<DatapathView> {
        self.bridges
            .iter()
            .map(|r| {
                let b = r.bridge();
                let t = BridgeCounters::sum(&b.counters);
                let snap = b.pipeline.load();
                DatapathView {
                    bridge: r.name.clone(),
                    hits: t.cache_hits.load(Relaxed),
                    misses: t.cache_misses.load(Relaxed),
                    rules: snap.tables.iter().map(|t| t.len() as u64).sum(),
                    workers: r.cpus.len() as u64,
                    ports: b
                        .ports()
                        .map(|p| DatapathPort {
                            port_no: p.port_no,
                            name: p.name.clone(),
                            kind: ovs_type(&p.backend),
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// A port's type as Open vSwitch names it (`pcap` is sluice's own).
fn ovs_type(b: &datapath::Backend) -> &'static str {
    use datapath::Backend;
    match b {
        Backend::AfPacket { .. } | Backend::AfXdp { .. } | Backend::Xdp { .. } => "system",
        Backend::Local | Backend::Internal => "internal",
        Backend::Tunnel(t) => t.proto.name(),
        Backend::Patch => "patch",
        Backend::Pcap => "pcap",
    }
}

/// One flow as ovs-vswitchd's `bridge/dump-flows` prints it: cookie and
/// table when not 0, duration in whole seconds, counts, priority and
/// match, actions.
pub fn flow_line(f: &ofp::msg::multipart::FlowStats) -> String {
    let mut s = String::new();
    if f.cookie != 0 {
        s.push_str(&format!("cookie={:#x}, ", f.cookie));
    }
    if f.table_id != 0 {
        s.push_str(&format!("table_id={}, ", f.table_id));
    }
    s.push_str(&format!(
        "duration={}s, n_packets={}, n_bytes={}, priority={}",
        f.duration_sec, f.packet_count, f.byte_count, f.priority
    ));
    let m = ofp::text::format_match(&f.match_);
    if !m.is_empty() {
        s.push(',');
        s.push_str(&m);
    }
    let actions = ofp::text::format_instructions(&f.instructions);
    s.push_str(&format!(
        ",actions={}\n",
        if actions.is_empty() { "drop" } else { &actions }
    ));
    s
}

/// The most verbose level the log filter lets through for `module`,
/// asked of the live subscriber (so it is true whoever set the filter).
fn level_of(module: &str) -> Level {
    macro_rules! probe {
        ($($m:literal),*) => {
            match module {
                $($m => {
                    if tracing::enabled!(target: $m, tracing::Level::TRACE) {
                        Level::Trace
                    } else if tracing::enabled!(target: $m, tracing::Level::DEBUG) {
                        Level::Debug
                    } else if tracing::enabled!(target: $m, tracing::Level::INFO) {
                        Level::Info
                    } else if tracing::enabled!(target: $m, tracing::Level::WARN) {
                        Level::Warn
                    } else if tracing::enabled!(target: $m, tracing::Level::ERROR) {
                        Level::Error
                    } else {
                        Level::Off
                    }
                })*
                _ => Level::Off,
            }
        };
    }
    // The literals are vlog::MODULES (a test holds them equal).
    probe!(
        "agent",
        "conntrack",
        "datapath",
        "fastpath",
        "jsonrpc",
        "netdev",
        "ofp",
        "ovsdb",
        "pipeline",
        "sluice",
        "tls"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_is_probed() {
        // Without a subscriber every level is off; an unknown module would
        // be Off too, so check the list by its source.
        let src = include_str!("host.rs");
        let start = src.find("\n    probe!(\n").unwrap();
        let call = &src[start..start + src[start..].find(')').unwrap()];
        for m in super::super::vlog::MODULES {
            assert!(call.contains(&format!("\"{m}\"")), "{m} is not probed");
        }
        assert_eq!(
            call.matches('"').count(),
            2 * super::super::vlog::MODULES.len()
        );
    }

    #[test]
    fn a_flow_as_bridge_dump_flows_prints_it() {
        let fm = ofp::text::parse_flow_mod(
            "table=1,cookie=0x7,priority=10,tcp,tp_dst=80,actions=output:2",
        )
        .unwrap();
        let f = ofp::msg::multipart::FlowStats {
            idle_age: None,
            hard_age: None,
            table_id: 1,
            duration_sec: 3,
            priority: 10,
            cookie: 7,
            packet_count: 5,
            byte_count: 300,
            duration_nsec: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            match_: fm.match_.clone(),
            instructions: fm.instructions.clone(),
        };
        assert_eq!(
            flow_line(&f),
            "cookie=0x7, table_id=1, duration=3s, n_packets=5, n_bytes=300, priority=10,tcp,tp_dst=80,actions=output:2\n"
        );
    }
}
