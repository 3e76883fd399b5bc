//! Where a packet goes: outputs collected in the worker's reusable list
//! (bounded per packet), reserved ports resolved against the port table,
//! and which output carries its own copy of the bytes.

use super::*;

impl Exec {
    /// The outputs from `first_out` on that carry no bytes of their own
    /// get `copy` (a group bucket's or a clone's packet): the last one
    /// takes the buffer itself, the others a copy of it.
    pub(super) fn outputs_carry(&mut self, first_out: usize, copy: Vec<u8>) {
        let mut copy = Some(copy);
        let n = self.outputs.len();
        for (j, o) in self.outputs[first_out..].iter_mut().enumerate() {
            if o.data.is_none() {
                o.data = if first_out + j + 1 == n {
                    copy.take()
                } else {
                    copy.clone()
                };
            }
        }
    }

    #[inline(always)] // a copy of every output: out of line, its 96 bytes went through the stack
    pub(super) fn push(&mut self, port: u32, cx: &mut Ctx<'_>, controller: Option<ToController>) {
        if self.outputs.len() >= MAX_OUTPUTS_PER_PACKET {
            self.over_limit += 1;
            return;
        }
        // The controller hears the packet's metadata as it is.
        let tunnel = if controller.is_some() {
            self.tun.dst()
        } else {
            self.out_tunnel()
        };
        self.outputs.push(Output {
            port,
            queue: cx.queue,
            data: None,
            controller,
            tunnel,
            tun_opts: cx.snap.geneve.write(&self.key),
        });
    }

    /// What a packet-in of the packet as it is now carries beyond its
    /// port and tunnel destination ([`PacketInExtra`]): `userdata` and
    /// the pipeline fields; None when all of it is empty or zero (the
    /// usual case, which allocates nothing).
    pub(super) fn packet_in_extra(&self, userdata: bytes::Bytes) -> Option<Arc<PacketInExtra>> {
        let e = PacketInExtra {
            userdata,
            regs: std::array::from_fn(|i| self.key.get(s::REGS[i]) as u32),
            pkt_mark: self.key.get(s::PKT_MARK) as u32,
            metadata: self.metadata,
            tun_ipv4_src: self.tun.ipv4_src,
            tun_ipv6_src: self.tun.ipv6_src,
            continuation: bytes::Bytes::new(),
        };
        (!e.is_empty()).then(|| Arc::new(e))
    }

    pub(super) fn output<const T: bool>(&mut self, port: u32, max_len: u16, cx: &mut Ctx<'_>) {
        let before = self.outputs.len();
        if T && before >= MAX_OUTPUTS_PER_PACKET {
            self.note(format!(
                "output:{} -> dropped: more than {MAX_OUTPUTS_PER_PACKET} outputs for one packet",
                ofp::text::format_port(port)
            ));
        }
        self.output_to(port, max_len, cx);
        if T {
            let to: Vec<String> = self.outputs[before..]
                .iter()
                .map(|o| ofp::text::format_port(o.port))
                .collect();
            let what = if to.is_empty() {
                " -> nothing: the port is the ingress port, down or no_fwd".to_string()
            } else if port == port_no::ALL || port == port_no::FLOOD {
                format!(" -> {}", to.join(","))
            } else {
                String::new()
            };
            let a = Action::Output { port, max_len };
            self.note(format!("{}{what}", ofp::text::format_action(&a)));
        }
    }

    /// `output(port=N,max_len=M)`: the outputs to `port` carry the frame
    /// cut to `max_len` bytes when it is longer. Out of line and cold: an
    /// inlined second copy of [`Exec::output`] in the action loop cost
    /// every packet (measured: +18 instructions on a cache hit, +117 on
    /// the resubmit-heavy pipeline, `scripts/bench/icount.sh`).
    #[cold]
    #[inline(never)]
    pub(super) fn output_trunc<const T: bool>(
        &mut self,
        port: u32,
        max_len: u32,
        frame: &[u8],
        cx: &mut Ctx<'_>,
    ) {
        let before = self.outputs.len();
        self.output::<T>(port, 0, cx);
        let n = max_len as usize;
        if frame.len() > n {
            for o in &mut self.outputs[before..] {
                o.data.get_or_insert_with(|| frame[..n].to_vec());
            }
        }
    }

    pub(super) fn output_to(&mut self, port: u32, max_len: u16, cx: &mut Ctx<'_>) {
        match port {
            port_no::IN_PORT => self.push(cx.in_port, cx, None),
            port_no::ALL => {
                for p in cx.snap.ports.all_from(cx.in_port) {
                    self.push(p, cx, None);
                }
            }
            port_no::FLOOD => {
                for p in cx.snap.ports.flood_from(cx.in_port) {
                    self.push(p, cx, None);
                }
            }
            port_no::CONTROLLER => {
                let reason = if cx.table_miss {
                    PacketInReason::NoMatch
                } else {
                    PacketInReason::Action
                };
                let meta = ToController {
                    extra: self.packet_in_extra(bytes::Bytes::new()),
                    ..ToController::new(reason, cx.table_id, cx.cookie, max_len)
                };
                self.push(port_no::CONTROLLER, cx, Some(meta));
            }
            port_no::LOCAL | port_no::NORMAL => self.push(port, cx, None),
            // A packet never goes back out of its ingress port unless IN_PORT says so.
            p if p == cx.in_port => {}
            p => {
                // Unknown ports are accepted by flow-mods (ports may come later);
                // down or no_fwd ports drop here.
                if cx.snap.ports.usable(p) != Some(false) {
                    self.push(p, cx, None);
                }
            }
        }
    }
}
