//! What the fast path does with one frame, worked out in Rust from the
//! same decisions the generated program makes ([`parse::goes_up`], the
//! table's best rule, its [`plan`]): for `sluice-ctl trace`, and the
//! differential test holds the program to it.

use packet::FlowKey;
use pipeline::Snapshot;

use crate::compile::SnapPorts;
use crate::parse;
use crate::plan::{checks, passes, plan, specialise, Final, Up};

/// What the program of ingress port `in_port` does with `frame`, given
/// the ports XDP serves (`xdp_ports`, the ingress port among them).
pub fn verdict(snap: &Snapshot, in_port: u32, xdp_ports: &[u32], frame: &[u8]) -> Final {
    if snap.ports.no_recv(in_port) {
        return Final::Up(Up::NoRecv);
    }
    if let Some(why) = parse::goes_up(frame) {
        return Final::Up(Up::Headers(why));
    }
    let mut key = FlowKey::default();
    packet::extract(frame, in_port, &mut key);
    let Some(t) = snap.tables.first() else {
        return Final::Drop;
    };
    let found = t.lookup_data(&key);
    // A conjunctive flow that matches at the best rule's priority or above
    // is one of the program's rules whose packets go up.
    let mut conj = None;
    let above = found.and_then(|r| r.priority.checked_sub(1));
    t.conj.for_each_match_above(&key, above, |_, r| {
        conj = Some(r.clone());
        false
    });
    if let Some(c) = conj {
        if let crate::plan::Plan::Up(u) = plan(&c) {
            return Final::Up(u);
        }
    }
    let Some(rule) = found else {
        return Final::Drop;
    };
    let ports = SnapPorts {
        snap,
        egress: xdp_ports,
    };
    let f = specialise(&plan(rule), in_port, &ports);
    // The program checks each edit's header before it writes anything.
    if let Final::Redirect { edits, .. } | Final::Back { edits } | Final::Flood { edits, .. } = &f {
        if let Err(h) = passes(&checks(edits), &key, frame.len()) {
            return Final::Up(Up::NoField(h));
        }
    }
    f
}

/// [`verdict`] as one line of text.
pub fn describe(f: &Final) -> String {
    match f {
        Final::Drop => "stays in the kernel: dropped".into(),
        Final::Redirect { port, .. } => format!("stays in the kernel: out of port {port}"),
        Final::Back { .. } => "stays in the kernel: back out of the ingress port".into(),
        Final::Flood { to, .. } => {
            let to: Vec<String> = to.iter().map(u32::to_string).collect();
            format!("stays in the kernel: out of ports {}", to.join(","))
        }
        Final::Up(u) => format!("goes up to the user-space pipeline: {u}"),
    }
}
