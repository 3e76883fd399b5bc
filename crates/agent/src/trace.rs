//! `trace`: what the datapath does with a frame, as text, from the
//! published pipeline; NORMAL followed to the port the MAC table picks,
//! and the XDP fast path's verdict where it runs; with `-generate`, what
//! the packet's `learn` actions taught, added.

use super::*;

impl<D: Datapath> Agent<D> {
    /// What the datapath does with `frame` arriving on `in_port`, as text
    /// (see [`pipeline::trace`]). Traces the pipeline as last published.
    pub fn trace(&mut self, in_port: u32, frame: &[u8]) -> String {
        self.trace_with(in_port, frame, &pipeline::trace::Options::default())
    }

    /// [`Agent::trace`] with `opts`: with `generate`, the flows the
    /// packet's `learn` actions taught are added as a packet's are
    /// ([`Agent::handle_learned`]: the same limits, seen from the next
    /// publication on), as Open vSwitch's `ofproto/trace -generate` does.
    pub fn trace_with(
        &mut self,
        in_port: u32,
        frame: &[u8],
        opts: &pipeline::trace::Options,
    ) -> String {
        self.publish();
        let Some(snap) = self.published.clone() else {
            return String::new();
        };
        let port = match self.ports.get(&in_port) {
            Some(p) => format!("{} ({})", in_port, p.name),
            None => format!("{in_port} (no such port)"),
        };
        let mut t = pipeline::trace::trace_with(&snap, in_port, frame, opts);
        t.set_ports(self.ports.keys().copied().collect());
        if opts.generate && !t.learned.is_empty() {
            self.handle_learned(&t.learned, self.now_ns);
        }
        // NORMAL followed to the port the datapath's MAC table picks (the
        // trace learns nothing).
        let normal = |o: &pipeline::Output| -> Option<pipeline::trace::NormalHop> {
            let data = o.data.as_deref().unwrap_or(&t.final_frame);
            self.datapath.normal_hop(&snap, in_port, data, self.now_ns)
        };
        let mut text = format!(
            "Bridge: dpid {:016x}, in_port {port}\n{}",
            self.datapath_id,
            t.text_with(in_port, &normal)
        );
        if let Some(what) = self.datapath.fast_path_verdict(&snap, in_port, frame) {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("XDP fast path: {what}\n"));
        }
        text
    }
}
