//! `trace`: what the datapath does with a frame, as text, from the
//! published pipeline; NORMAL followed to the port the MAC table picks,
//! and the XDP fast path's verdict where it runs.

use super::*;

impl<D: Datapath> Agent<D> {
    /// What the datapath does with `frame` arriving on `in_port`, as text
    /// (see [`pipeline::trace`]). Traces the pipeline as last published.
    pub fn trace(&mut self, in_port: u32, frame: &[u8]) -> String {
        self.publish();
        let Some(snap) = self.published.clone() else {
            return String::new();
        };
        let port = match self.ports.get(&in_port) {
            Some(p) => format!("{} ({})", in_port, p.name),
            None => format!("{in_port} (no such port)"),
        };
        let t = pipeline::trace::trace(&snap, in_port, frame);
        // NORMAL followed to the port the MAC table picks, as the
        // datapath would (the trace learns nothing).
        let normal = |o: &pipeline::Output| -> Option<pipeline::trace::NormalHop> {
            let data = o.data.as_deref().unwrap_or(&t.final_frame);
            let (vlan, _, dst) = packet::l2_addresses(data)?;
            let flood = || -> Vec<u32> {
                snap.ports
                    .iter()
                    .filter(|p| p.port_no != in_port && p.live && !p.no_flood && !p.no_fwd)
                    .map(|p| p.port_no)
                    .collect()
            };
            let dst_s = ofp::text::format_mac(dst);
            let vl = if vlan == 0 {
                String::new()
            } else {
                format!(" in VLAN {vlan}")
            };
            let (why, ports) = if dst & (1 << 40) != 0 {
                (
                    format!("dst {dst_s} is broadcast/multicast: flooded"),
                    flood(),
                )
            } else {
                match self.datapath.mac_lookup(vlan, dst) {
                    Some(p) if p == in_port => (
                        format!("dst {dst_s} learned on the ingress port{vl}: dropped"),
                        Vec::new(),
                    ),
                    Some(p) => (format!("dst {dst_s} learned on port {p}{vl}"), vec![p]),
                    None => (format!("dst {dst_s} not learned{vl}: flooded"), flood()),
                }
            };
            Some(pipeline::trace::NormalHop { why, ports })
        };
        let mut text = format!(
            "Bridge: dpid {:016x}, in_port {port}
{}",
            self.datapath_id,
            t.text_with(in_port, &normal)
        );
        if let Some(xdp) = self.datapath.fast_path_ports() {
            let what = if xdp.contains(&in_port) {
                fastpath::model::describe(&fastpath::model::verdict(&snap, in_port, &xdp, frame))
            } else {
                "the ingress port is not an xdp port: user space".into()
            };
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("XDP fast path: {what}\n"));
        }
        text
    }
}
