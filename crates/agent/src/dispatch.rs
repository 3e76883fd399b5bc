//! What each controller message does: one arm per message type, the
//! changes through the pipeline (the one judge of a message's match,
//! instructions and actions), PACKET_OUT and roles.
//!
//! Contract: a refusal is the `(type, code)` the spec names and changes
//! nothing; a slave is refused every modification.

use ofp::msg::multipart::{MultipartType, MPF_MORE};

use super::*;
use ofp::msg::{nx_flow, nxt};

impl<D: Datapath> Agent<D> {
    pub(crate) fn is_slave(&self, id: ConnId) -> bool {
        self.conns[&id].role == ControllerRole::Slave
    }

    pub(crate) fn dispatch(
        &mut self,
        id: ConnId,
        xid: u32,
        msg: Message,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        use Message as M;
        let modifies = matches!(
            msg,
            M::FlowMod(_)
                | M::GroupMod(_)
                | M::MeterMod(_)
                | M::PortMod(_)
                | M::TableMod(_)
                | M::PacketOut(_)
        );
        if modifies && self.is_slave(id) {
            return Err(brc(BadRequestCode::IsSlave));
        }
        match msg {
            M::Hello(_) => {}
            M::EchoRequest(data) => self.send(id, &M::EchoReply(data), xid),
            M::EchoReply(_) => {}
            M::FeaturesRequest => self.features(id, xid)?,
            M::GetConfigRequest => {
                let c = self.switch_config;
                self.send(id, &M::GetConfigReply(c), xid);
            }
            M::SetConfig(c) => self.set_config(c)?,
            M::FlowMod(fm) => self.flow_mod(id, fm, frame, now_ns)?,
            M::GroupMod(gm) => {
                let removed = self.pipeline.group_mod(&gm, now_ns).map_err(|e| e.code)?;
                self.dirty = true;
                self.flow_removed(&removed, now_ns);
            }
            M::MeterMod(mm) => {
                let removed = self.pipeline.meter_mod(&mm, now_ns).map_err(|e| e.code)?;
                self.dirty = true;
                self.flow_removed(&removed, now_ns);
            }
            M::PortMod(pm) => self.port_mod(pm)?,
            M::TableMod(tm) => self.table_mod(tm)?,
            M::PacketOut(po) => self.packet_out(po)?,
            M::MultipartRequest(req) if self.is_nx_stats(id, &req) => {
                let Q::Experimenter(e) = req.body else {
                    unreachable!("is_nx_stats")
                };
                self.nx_stats(id, xid, &e)?
            }
            M::MultipartRequest(req) => {
                let (mp_type, more) = (req.mp_type(), req.flags & MPF_MORE != 0);
                self.multipart_request(id, xid, mp_type, more, Some(req), frame, now_ns)?
            }
            M::BarrierRequest => {
                self.publish();
                self.send(id, &M::BarrierReply, xid);
            }
            M::QueueGetConfigRequest { port } => self.queue_get_config(id, xid, port)?,
            M::RoleRequest(r) => {
                let role = self.role(id, r)?;
                self.send(id, &M::RoleReply(role), xid);
            }
            M::GetAsyncRequest => {
                let a = self.conns[&id].async_config;
                self.send(id, &M::GetAsyncReply(a), xid);
            }
            M::SetAsync(a) => {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.async_config = a;
                }
            }
            // Bundles (the ONF extension; 1.4's and 1.5's native ones
            // arrive as it): OpenFlow 1.0 and 1.2 have none, as Open
            // vSwitch offers none to them.
            M::Experimenter(e) if e.experimenter == ofp::msg::bundle::ONF_EXPERIMENTER => {
                if self
                    .conns
                    .get(&id)
                    .is_some_and(|c| c.version < Version::V1_3)
                {
                    return Err(brc(BadRequestCode::BadExperimenter));
                }
                return self.onf_message(id, xid, &e, frame, now_ns);
            }
            M::Experimenter(e) if e.experimenter == nxt::NX_VENDOR_ID => {
                self.nicira_message(id, xid, &e, frame, now_ns)?
            }
            M::Experimenter(e) => self.sluice_message(id, xid, e)?,
            // Messages only a switch sends.
            M::Error(_) => {}
            M::FeaturesReply(_)
            | M::GetConfigReply(_)
            | M::PacketIn(_)
            | M::FlowRemoved(_)
            | M::PortStatus(_)
            | M::MultipartReply(_)
            | M::BarrierReply
            | M::QueueGetConfigReply(_)
            | M::RoleReply(_)
            | M::GetAsyncReply(_) => return Err(brc(BadRequestCode::BadType)),
        }
        let _ = frame;
        Ok(())
    }

    /// FEATURES_REQUEST: the reply, and the connection counts as a
    /// controller for the fail mode from now on.
    pub(crate) fn features(&mut self, id: ConnId, xid: u32) -> Result<(), ErrorCode> {
        use ofp::msg::simple::capabilities as cap;
        use Message as M;
        if let Some(c) = self.conns.get_mut(&id) {
            c.features_seen = true;
        }
        let reply = FeaturesReply {
            datapath_id: self.datapath_id,
            n_buffers: buffers::N_BUFFERS,
            n_tables: self.pipeline.config.n_tables,
            auxiliary_id: 0,
            capabilities: cap::FLOW_STATS
                | cap::TABLE_STATS
                | cap::PORT_STATS
                | cap::GROUP_STATS
                | cap::QUEUE_STATS,
            reserved: 0,
            ports: self.ports.values().map(PortInfo::desc).collect(),
        };
        self.send(id, &M::FeaturesReply(reply), xid);
        Ok(())
    }

    /// SET_CONFIG: fragments are switched as they are (OFPC_FRAG_NORMAL);
    /// the TTL bit goes to the pipeline.
    pub(crate) fn set_config(&mut self, c: SwitchConfig) -> Result<(), ErrorCode> {
        // Fragments are switched as they are (OFPC_FRAG_NORMAL); we
        // neither drop nor reassemble them.
        if c.flags & 0x3 != 0 {
            return Err(ErrorCode::SwitchConfigFailed(
                SwitchConfigFailedCode::BadFlags,
            ));
        }
        self.switch_config = c;
        let ttl = c.flags & 0x4 != 0;
        if self.pipeline.invalid_ttl_to_controller != ttl {
            self.pipeline.invalid_ttl_to_controller = ttl;
            self.dirty = true;
        }
        Ok(())
    }

    /// FLOW_MOD, validated by the caller: applied, FLOW_REMOVED for what it
    /// removed, and the buffered packet it names run through the tables.
    /// One that names more rules than a round changes becomes the
    /// connection's job ([`Agent::flow_mod_round`]): its later messages
    /// wait until the last round.
    pub(crate) fn flow_mod(
        &mut self,
        id: ConnId,
        fm: ofp::FlowMod,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        // A buffered packet named by the flow-mod is looked up first
        // (an unusable id refuses the whole flow-mod) and taken only
        // once the flow-mod has succeeded.
        let buffered = if fm.buffer_id != NO_BUFFER
            && matches!(
                fm.command,
                ofp::FlowModCommand::Add
                    | ofp::FlowModCommand::Modify
                    | ofp::FlowModCommand::ModifyStrict
            ) {
            Some(self.buffer(fm.buffer_id)?)
        } else {
            None
        };
        // Validated above (Message::validate), and `frame` is its wire
        // form: from 1.2 on the match (OXM) lies where 1.3 puts it;
        // OpenFlow 1.0's fixed match is encoded anew.
        let wire_match = match self.conns.get(&id).map(|c| c.version) {
            Some(Version::V1_0) => None,
            _ => ofp::FlowMod::match_bytes(frame),
        };
        // A 1.0 peer's strip_vlan and IP edits need nothing in the match, as in Open
        // vSwitch (`pipeline::validate::Context::of10_edits`).
        self.pipeline.of10_edits = self.conns.get(&id).map(|c| c.version) == Some(Version::V1_0);
        let applied = self.pipeline.flow_mod_rounds(&fm, wire_match, now_ns);
        self.pipeline.of10_edits = false;
        let applied = applied.map_err(|e| e.code)?;
        if buffered.is_some() {
            let _ = self.buffers.take(fm.buffer_id);
        }
        self.dirty = true;
        match applied {
            pipeline::control::Applied::Done(removed) => {
                self.flow_removed(&removed, now_ns);
                self.dispose(removed);
                self.run_buffered(buffered);
            }
            pipeline::control::Applied::Rounds(job) => {
                if let Some(c) = self.conns.get_mut(&id) {
                    let xid = ofp::Header::parse(frame).map_or(0, |h| h.xid);
                    c.job = Some(Job::FlowMod(FlowModRounds { job, xid, buffered }));
                }
            }
        }
        Ok(())
    }

    /// The next round of connection `id`'s FLOW_MOD in rounds: its
    /// FLOW_REMOVED messages, and once it is done the buffered packet it
    /// named.
    pub(crate) fn flow_mod_round(&mut self, id: ConnId, now_ns: u64) -> Progress {
        let Some(c) = self.conns.get_mut(&id) else {
            return Progress::Done;
        };
        let Some(Job::FlowMod(mut rounds)) = c.job.take() else {
            return Progress::Done;
        };
        let (removed, done) = self.pipeline.flow_mod_round(&mut rounds.job);
        self.dirty = true;
        self.flow_removed(&removed, now_ns);
        self.report_flow_changes(Some((id, rounds.xid)));
        self.dispose(removed);
        if done {
            self.run_buffered(rounds.buffered.take());
            return Progress::Done;
        }
        if let Some(c) = self.conns.get_mut(&id) {
            c.job = Some(Job::FlowMod(rounds));
        }
        Progress::Yield
    }

    /// The rest of a FLOW_MOD in rounds whose connection is gone, at once.
    pub(crate) fn finish_rounds(&mut self, mut rounds: FlowModRounds, now_ns: u64) {
        loop {
            let (removed, done) = self.pipeline.flow_mod_round(&mut rounds.job);
            self.dirty = true;
            self.flow_removed(&removed, now_ns);
            self.report_flow_changes(None);
            self.dispose(removed);
            if done {
                break;
            }
        }
        self.run_buffered(rounds.buffered.take());
    }

    /// Lets rules removed go: many to the pipeline's disposer (off the
    /// control thread, in the daemon), a few dropped here (handing each
    /// FLOW_MOD's empty list to another thread cost more than it saved:
    /// the million-flow push ran 30% slower).
    fn dispose(&self, removed: Vec<Removed>) {
        if removed.len() >= DISPOSE_AT {
            self.pipeline.disposer().dispose(removed);
        }
    }

    /// Runs the buffered packet a FLOW_MOD named through the tables (as
    /// they are now: published first).
    fn run_buffered(&mut self, buffered: Option<(u32, Bytes)>) {
        if let Some((in_port, data)) = buffered {
            self.publish();
            let _ = self.datapath.packet_out(
                in_port,
                vec![Action::Output {
                    port: port_no::TABLE,
                    max_len: 0,
                }],
                data,
            );
        }
    }

    /// PORT_MOD: the OFPPC_* bits a port takes; PORT_STATUS if they changed.
    pub(crate) fn port_mod(&mut self, pm: ofp::msg::simple::PortMod) -> Result<(), ErrorCode> {
        let Some(p) = self.ports.get_mut(&pm.port_no) else {
            return Err(ErrorCode::PortModFailed(PortModFailedCode::BadPort));
        };
        if p.hw_addr != pm.hw_addr {
            return Err(ErrorCode::PortModFailed(PortModFailedCode::BadHwAddr));
        }
        let known = port_config::PORT_DOWN
            | port_config::NO_RECV
            | port_config::NO_FWD
            | port_config::NO_PACKET_IN
            | NO_FLOOD;
        if pm.mask & !known != 0 {
            return Err(ErrorCode::PortModFailed(PortModFailedCode::BadConfig));
        }
        let config = (p.config & !pm.mask) | (pm.config & pm.mask);
        if config != p.config {
            p.config = config;
            let (state, desc) = (p.state(), p.desc());
            self.pipeline.set_port(state);
            self.dirty = true;
            self.port_status(PortReason::Modify, desc);
        }
        Ok(())
    }

    /// TABLE_MOD: no table config bits exist in OpenFlow 1.3 (3 is
    /// deprecated).
    pub(crate) fn table_mod(&mut self, tm: ofp::msg::simple::TableMod) -> Result<(), ErrorCode> {
        if tm.table_id != ofp::port::TABLE_ALL && tm.table_id >= self.pipeline.config.n_tables {
            return Err(ErrorCode::TableModFailed(TableModFailedCode::BadTable));
        }
        // OpenFlow 1.3 defines no table config bits (3 is deprecated).
        if tm.config & !3 != 0 {
            return Err(ErrorCode::TableModFailed(TableModFailedCode::BadConfig));
        }
        Ok(())
    }

    /// A multipart request, or one part of it: the parts of a request in
    /// several (OFPMPF_REQ_MORE, one xid) are gathered as Open vSwitch
    /// gathers them (`ofpmp_assembler_execute`): the same type in every
    /// part (else `OFPBRC_BAD_MULTIPART`), 4 MiB at most
    /// (`OFPBRC_MULTIPART_BUFFER_OVERFLOW`; all of a connection's
    /// unfinished requests together, where Open vSwitch counts each
    /// alone), each part within
    /// [`MULTIPART_PART_NS`] of the one before (else
    /// `OFPBRC_MULTIPART_REQUEST_TIMEOUT`, at [`Agent::handle_timeout`]),
    /// parts with empty bodies left out. Only TABLE_FEATURES takes several
    /// parts with bodies (any other is `OFPBRC_BAD_MULTIPART`). Then:
    /// FLOW_STATS as a job sent a message at a time ([`Agent::pump`]),
    /// TABLE_FEATURES through [`Agent::table_features_request`], the rest
    /// answered at once (split to fit).
    ///
    /// `req` is None for a part with an empty body and more to come, which
    /// is not decoded (a FLOW_STATS request may come as an empty part and
    /// one with the body, as Open vSwitch takes it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn multipart_request(
        &mut self,
        id: ConnId,
        xid: u32,
        mp_type: MultipartType,
        more: bool,
        req: Option<ofp::msg::multipart::MultipartRequest>,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        let Some(c) = self.conns.get_mut(&id) else {
            return Ok(());
        };
        let mut parts = if !more && !c.partial.contains_key(&xid) {
            // One part: the common case.
            vec![(frame.clone(), req)]
        } else {
            let p = c.partial.entry(xid).or_insert_with(|| conn::Partial {
                mp_type,
                parts: Vec::new(),
                size: 0,
                deadline_ns: 0,
            });
            p.deadline_ns = now_ns.saturating_add(MULTIPART_PART_NS);
            if p.mp_type != mp_type {
                c.partial.remove(&xid);
                return Err(brc(BadRequestCode::BadMultipart));
            }
            p.size += frame.len();
            p.parts.push((frame.clone(), req));
            // 4 MiB for all the connection's requests in parts together,
            // so that many xids cannot hold more.
            let held: usize = c.partial.values().map(|p| p.size).sum();
            if held > MULTIPART_MAX_BYTES {
                c.partial.remove(&xid);
                return Err(brc(BadRequestCode::MultipartBufferOverflow));
            }
            if more {
                return Ok(());
            }
            c.partial.remove(&xid).map(|p| p.parts).unwrap_or_default()
        };
        // Parts with empty bodies are left out, but one stays.
        let header = ofp::header::HEADER_LEN + 8;
        let mut i = 0;
        while i < parts.len() {
            if parts.len() > 1 && parts[i].0.len() <= header {
                parts.remove(i);
            } else {
                i += 1;
            }
        }
        // What stays has a body, or is the last part: all decoded.
        let mut parts: Vec<(Bytes, ofp::msg::multipart::MultipartRequest)> = parts
            .into_iter()
            .filter_map(|(f, r)| Some((f, r?)))
            .collect();
        if mp_type == MultipartType::TableFeatures {
            self.table_features_request(id, xid, &parts);
            return Ok(());
        }
        if parts.len() > 1 {
            self.error(id, xid, brc(BadRequestCode::BadMultipart), &parts[0].0);
            return Ok(());
        }
        let Some((_, req)) = parts.pop() else {
            return Ok(());
        };
        if let Q::Flow(freq) = &req.body {
            let rules = self.pipeline.flow_stats_rules(freq).map_err(|e| e.code)?;
            if let Some(c) = self.conns.get_mut(&id) {
                c.job = Some(Job::FlowStats(FlowStatsJob {
                    xid,
                    rules,
                    at: 0,
                    nx: false,
                }));
            }
            return Ok(());
        }
        let bodies = self.multipart(req.body, now_ns)?;
        self.send_parts(id, xid, bodies);
        Ok(())
    }

    /// Sends reply `bodies` as one multipart reply (REPLY_MORE on all but
    /// the last).
    pub(crate) fn send_parts(&mut self, id: ConnId, xid: u32, bodies: Vec<R>) {
        use Message as M;
        let n = bodies.len();
        for (i, body) in bodies.into_iter().enumerate() {
            let flags = if i + 1 < n { 1 } else { 0 };
            self.send(id, &M::MultipartReply(MultipartReply { flags, body }), xid);
        }
    }

    /// TABLE_FEATURES, its parts gathered: a request with a body sets the
    /// tables' features ([`Agent::set_table_features`]; a slave is refused
    /// `OFPBRC_IS_SLAVE`), then every table's features are the reply. A
    /// refusal carries the part it concerns.
    pub(crate) fn table_features_request(
        &mut self,
        id: ConnId,
        xid: u32,
        parts: &[(Bytes, ofp::msg::multipart::MultipartRequest)],
    ) {
        let tables: Vec<&[ofp::msg::table_features::TableFeatures]> = parts
            .iter()
            .map(|(_, r)| match &r.body {
                Q::TableFeatures(t) => t.as_slice(),
                _ => &[],
            })
            .collect();
        if parts.len() > 1 || !tables[0].is_empty() {
            let last = &parts[parts.len() - 1].0;
            if self.is_slave(id) {
                self.error(id, xid, brc(BadRequestCode::IsSlave), last);
                return;
            }
            if let Err((code, i)) = self.set_table_features(&tables) {
                self.error(id, xid, code, &parts[i].0);
                return;
            }
        }
        match self.multipart(Q::TableFeatures(Vec::new()), self.now_ns) {
            Ok(bodies) => self.send_parts(id, xid, bodies),
            Err(code) => self.error(id, xid, code, &parts[0].0),
        }
    }

    /// QUEUE_GET_CONFIG_REQUEST: the queues of one port, or all.
    pub(crate) fn queue_get_config(
        &mut self,
        id: ConnId,
        xid: u32,
        port: u32,
    ) -> Result<(), ErrorCode> {
        use Message as M;
        let queues: Vec<PacketQueue> = if port == port_no::ANY {
            self.ports.values().flat_map(queue_desc).collect()
        } else {
            match self.ports.get(&port) {
                Some(p) => queue_desc(p),
                None => return Err(ErrorCode::QueueOpFailed(QueueOpFailedCode::BadPort)),
            }
        };
        self.send(
            id,
            &M::QueueGetConfigReply(QueueGetConfigReply { port, queues }),
            xid,
        );
        Ok(())
    }

    /// Open vSwitch's Nicira messages ([`ofp::msg::nxt`]): the packet-in
    /// format and the controller id of the connection (for a slave too,
    /// as in Open vSwitch), NXT_CT_FLUSH_ZONE and NXT_CT_FLUSH (connections
    /// taken out of the pipeline's tracker, [`ctflush`]; a slave's too, no
    /// reply). A packet-in is `OFPBRC_BAD_TYPE` (only a
    /// switch sends one), another subtype `OFPBRC_BAD_EXP_TYPE` (Open
    /// vSwitch's `OFPBRC_BAD_SUBTYPE`). NXT_RESUME goes on with a paused
    /// walk ([`Self::resume`]). NXT_TLV_TABLE_MOD changes the
    /// pipeline's Geneve option table (a slave's is `OFPBRC_IS_SLAVE`),
    /// NXT_TLV_TABLE_REQUEST is answered with it ([`pipeline::tlv`]).
    pub(crate) fn nicira_message(
        &mut self,
        id: ConnId,
        xid: u32,
        e: &ofp::msg::simple::ExperimenterMsg,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        match e.exp_type {
            nx_flow::NXT_SET_FLOW_FORMAT
            | nx_flow::NXT_FLOW_MOD_TABLE_ID
            | nx_flow::NXT_FLOW_MOD => return self.nx_flow_message(id, e, frame, now_ns),
            nxt::NXT_RESUME => return self.resume(&e.data),
            nx_flow::monitor::NXT_FLOW_MONITOR_CANCEL
                if self.conns.get(&id).map(|c| c.version) == Some(Version::V1_0) =>
            {
                return self.flow_monitor_cancel(id, &e.data)
            }
            nxt::NXT_PACKET_IN | nxt::NXT_PACKET_IN2 => return Err(brc(BadRequestCode::BadType)),
            _ => {}
        }
        let Some(decoded) = nxt::NxtMsg::decode(e) else {
            return Err(brc(BadRequestCode::BadExperimenter));
        };
        let c = self.conns.get_mut(&id).expect("live");
        match decoded.map_err(|e| e.code)? {
            nxt::NxtMsg::SetPacketInFormat(f) => c.packet_in_format = f,
            nxt::NxtMsg::SetControllerId(n) => c.controller_id = n,
            nxt::NxtMsg::CtFlushZone(zone) => {
                let n = ctflush::flush_zone(self.pipeline.conntrack(), zone);
                tracing::debug!(conn = id, zone, flushed = n, "NXT_CT_FLUSH_ZONE");
            }
            nxt::NxtMsg::CtFlush(f) => {
                let n = ctflush::flush(self.pipeline.conntrack(), &f);
                tracing::debug!(conn = id, ?f, flushed = n, "NXT_CT_FLUSH");
            }
            nxt::NxtMsg::TlvTableMod(m) => {
                if self.is_slave(id) {
                    return Err(brc(BadRequestCode::IsSlave));
                }
                self.pipeline.tlv_table_mod(&m)?;
                tracing::debug!(conn = id, ?m, "NXT_TLV_TABLE_MOD");
            }
            nxt::NxtMsg::TlvTableRequest => {
                let reply = nxt::NxtMsg::TlvTableReply(self.pipeline.tlv.reply()).message();
                self.send(id, &reply, xid);
            }
            _ => return Err(brc(BadRequestCode::BadType)),
        }
        Ok(())
    }

    /// Nicira's flow formats ([`ofp::msg::nx_flow`]), where Open vSwitch
    /// takes them: NXT_SET_FLOW_FORMAT from an OpenFlow 1.0 connection
    /// (another version's is `OFPBRC_BAD_EXP_TYPE`, Open vSwitch's
    /// `OFPBRC_BAD_SUBTYPE`), NXT_FLOW_MOD_TABLE_ID from any (it counts
    /// for 1.0 flow mods only), and NXT_FLOW_MOD from a 1.0 connection:
    /// refused to a slave, checked as any FLOW_MOD
    /// ([`Message::validate`]), then applied as one ([`Self::flow_mod`]).
    /// NXT_FLOW_MOD from a 1.2-1.5 connection, whose actions would be
    /// that version's instructions, is `OFPBRC_BAD_EXP_TYPE`: Open vSwitch
    /// takes it, but ovs-ofctl never sends it there (docs/OVS-DIALECT.md).
    fn nx_flow_message(
        &mut self,
        id: ConnId,
        e: &ofp::msg::simple::ExperimenterMsg,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        let c = self.conns.get_mut(&id).expect("live");
        let v10 = c.version == Version::V1_0;
        match e.exp_type {
            nx_flow::NXT_SET_FLOW_FORMAT if v10 => {
                c.flow_format = nx_flow::decode_set_flow_format(&e.data).map_err(|e| e.code)?;
            }
            nx_flow::NXT_FLOW_MOD_TABLE_ID => {
                c.flow_mod_table_id =
                    nx_flow::decode_flow_mod_table_id(&e.data).map_err(|e| e.code)?;
            }
            nx_flow::NXT_FLOW_MOD if v10 => {
                if c.role == ControllerRole::Slave {
                    return Err(brc(BadRequestCode::IsSlave));
                }
                let fm =
                    nx_flow::decode_flow_mod(&e.data, c.flow_mod_table_id).map_err(|e| e.code)?;
                let msg = Message::FlowMod(fm);
                msg.validate().map_err(|e| e.code)?;
                let Message::FlowMod(fm) = msg else {
                    unreachable!("a flow mod")
                };
                self.flow_mod(id, fm, frame, now_ns)?;
            }
            _ => return Err(brc(BadRequestCode::BadExpType)),
        }
        Ok(())
    }

    /// Whether `req` is a Nicira statistics request the agent answers
    /// itself ([`Self::nx_stats`]): a vendor stats request of Nicira's on
    /// an OpenFlow 1.0 connection.
    fn is_nx_stats(&self, id: ConnId, req: &ofp::msg::multipart::MultipartRequest) -> bool {
        matches!(&req.body, Q::Experimenter(e) if e.experimenter == nxt::NX_VENDOR_ID)
            && self
                .conns
                .get(&id)
                .is_some_and(|c| c.version == Version::V1_0)
    }

    /// NXST_FLOW (a job, as FLOW_STATS: [`Agent::pump`]) and
    /// NXST_AGGREGATE, their match checked as a flow mod's;
    /// NXST_FLOW_MONITOR ([`crate::monitor`]); another
    /// Nicira stats subtype is `OFPBRC_BAD_EXP_TYPE` (Open vSwitch's
    /// `OFPBRC_BAD_SUBTYPE`).
    fn nx_stats(
        &mut self,
        id: ConnId,
        xid: u32,
        e: &ofp::msg::simple::ExperimenterMsg,
    ) -> Result<(), ErrorCode> {
        if e.exp_type == nx_flow::monitor::NXST_FLOW_MONITOR {
            return self.flow_monitor_request(id, xid, &e.data);
        }
        if !matches!(e.exp_type, nx_flow::NXST_FLOW | nx_flow::NXST_AGGREGATE) {
            return Err(brc(BadRequestCode::BadExpType));
        }
        let req = nx_flow::decode_stats_request(&e.data).map_err(|e| e.code)?;
        req.match_.validate().map_err(|e| e.code)?;
        if e.exp_type == nx_flow::NXST_AGGREGATE {
            let a = self.pipeline.aggregate(&req).map_err(|e| e.code)?;
            self.send(id, &nx_flow::aggregate_reply(&a), xid);
            return Ok(());
        }
        let rules = self.pipeline.flow_stats_rules(&req).map_err(|e| e.code)?;
        if let Some(c) = self.conns.get_mut(&id) {
            c.job = Some(Job::FlowStats(FlowStatsJob {
                xid,
                rules,
                at: 0,
                nx: true,
            }));
        }
        Ok(())
    }

    /// NXT_RESUME: the body is NXT_PACKET_IN2's properties as the
    /// controller sends them back (the packet, its metadata with the
    /// ingress port, the continuation); the paused walk goes on in the
    /// datapath ([`pipeline::continuation`]). A continuation sluice did
    /// not write, or wrote in another process (`NXR_STALE`), is refused.
    /// A slave may resume, as in Open vSwitch (`handle_nxt_resume` takes
    /// it from any connection).
    fn resume(&mut self, body: &Bytes) -> Result<(), ErrorCode> {
        let p = nxt::PacketIn2::decode(body).map_err(|e| e.code)?;
        if p.continuation.is_empty() {
            return Err(brc(BadRequestCode::BadLen));
        }
        let c =
            pipeline::continuation::Continuation::decode(&p.continuation).map_err(|e| e.code)?;
        let mut in_port = port_no::CONTROLLER;
        let mut fields = Vec::new();
        for e in &p.metadata.entries {
            if let ofp::MatchEntry::Basic(o) = e {
                match o.field {
                    ofp::oxm::OxmField::InPort => in_port = o.value as u32,
                    ofp::oxm::OxmField::NxmInPort => {
                        in_port = ofp::action::Resubmit::port_from_u16(o.value as u16)
                    }
                    _ => fields.push(*o),
                }
            }
        }
        self.publish();
        // A full datapath queue drops the packet, as for a PACKET_OUT.
        let _ = self.datapath.resume(in_port, c, fields, p.data);
        Ok(())
    }

    /// sluice's own experimenter messages: COMMAND (the management
    /// socket only) and TRACE.
    pub(crate) fn sluice_message(
        &mut self,
        id: ConnId,
        xid: u32,
        e: ofp::msg::simple::ExperimenterMsg,
    ) -> Result<(), ErrorCode> {
        use ofp::msg::sluice;
        if e.experimenter == sluice::SLUICE_EXPERIMENTER && e.exp_type == sluice::COMMAND_REQUEST {
            // Commands change the switch itself: the management
            // socket's connections only.
            if !self.conns.get(&id).is_some_and(|c| c.service) {
                return Err(brc(BadRequestCode::Eperm));
            }
            let req = sluice::CommandRequest::decode(&e.data).map_err(|e| e.code)?;
            let (ok, text) = match self.handle_command(&req.words) {
                Ok(t) => (true, t),
                Err(t) => (false, t),
            };
            let reply = sluice::CommandReply {
                ok,
                text: fit_text(&text, 20).into_owned(),
            };
            self.send(id, &reply.message(), xid);
            return Ok(());
        }
        if e.experimenter != sluice::SLUICE_EXPERIMENTER || e.exp_type != sluice::TRACE_REQUEST {
            return Err(sluice::unknown(&e));
        }
        let req = sluice::TraceRequest::decode(&e.data).map_err(|e| e.code)?;
        let text = self.trace(req.in_port, &req.frame);
        self.send(id, &sluice::trace_reply(&fit_text(&text, 16)), xid);
        Ok(())
    }

    /// The buffered packet `id` names (left in the pool), or the error the
    /// spec gives for an unusable id.
    pub(crate) fn buffer(&self, id: u32) -> Result<(u32, Bytes), ErrorCode> {
        self.buffers.get(id).map_err(|m| match m {
            buffers::Missing::Unknown => brc(BadRequestCode::BufferUnknown),
            buffers::Missing::Empty => brc(BadRequestCode::BufferEmpty),
        })
    }

    pub(crate) fn packet_out(&mut self, po: PacketOut) -> Result<(), ErrorCode> {
        // The pipeline judges where the packet may come from and go; the
        // packet itself is checked once it is known (buffered or sent).
        self.pipeline
            .check_packet_out_ports(po.in_port, &po.actions)
            .map_err(|e| e.code)?;
        let (in_port, data) = if po.buffer_id != NO_BUFFER {
            let (p, d) = self.buffer(po.buffer_id)?;
            (
                if po.in_port == port_no::ANY {
                    p
                } else {
                    po.in_port
                },
                d,
            )
        } else {
            if po.data.is_empty() {
                return Err(brc(BadRequestCode::BadPacket));
            }
            (po.in_port, po.data)
        };
        let in_port = if in_port == port_no::ANY {
            port_no::CONTROLLER
        } else {
            in_port
        };
        // The actions must suit this packet, as a flow's suit its match.
        self.pipeline
            .check_packet_out(&po.actions, &data, in_port)
            .map_err(|e| e.code)?;
        if po.buffer_id != NO_BUFFER {
            let _ = self.buffers.take(po.buffer_id);
        }
        self.publish();
        // A full datapath queue drops the packet, as a full port would.
        let _ = self.datapath.packet_out(in_port, po.actions, data);
        Ok(())
    }

    pub(crate) fn role(&mut self, id: ConnId, r: Role) -> Result<Role, ErrorCode> {
        match r.role {
            ControllerRole::NoChange => {}
            ControllerRole::Equal => self.conns.get_mut(&id).expect("live").role = r.role,
            ControllerRole::Master | ControllerRole::Slave => {
                if let Some(g) = self.generation {
                    if (r.generation_id.wrapping_sub(g) as i64) < 0 {
                        return Err(ErrorCode::RoleRequestFailed(RoleRequestFailedCode::Stale));
                    }
                }
                self.generation = Some(r.generation_id);
                if r.role == ControllerRole::Master {
                    for (cid, c) in self.conns.iter_mut() {
                        if *cid != id && c.role == ControllerRole::Master {
                            c.role = ControllerRole::Slave;
                        }
                    }
                }
                self.conns.get_mut(&id).expect("live").role = r.role;
            }
            _ => return Err(ErrorCode::RoleRequestFailed(RoleRequestFailedCode::BadRole)),
        }
        Ok(Role {
            role: self.conns[&id].role,
            generation_id: self.generation.unwrap_or(0),
        })
    }
}

pub(crate) fn queue_desc(p: &PortInfo) -> Vec<PacketQueue> {
    p.queues
        .iter()
        .map(|&(id, min, max)| {
            // Rates in tenths of a percent of the port's 10 Gb/s.
            let pct = |kbps: u64| ((kbps * 1000) / 10_000_000).min(1000) as u16;
            let mut props = Vec::new();
            if min > 0 {
                props.push(QueueProp::MinRate(pct(min)));
            }
            if max > 0 {
                props.push(QueueProp::MaxRate(pct(max)));
            }
            PacketQueue {
                queue_id: id,
                port: p.port_no,
                properties: props,
            }
        })
        .collect()
}

/// Rules removed at once from which [`Agent::dispose`] hands them to the
/// disposer rather than dropping them.
const DISPOSE_AT: usize = 256;

/// How long the next part of a multipart request may take (Open
/// vSwitch's 1 s).
pub const MULTIPART_PART_NS: u64 = 1_000_000_000;

/// The most bytes the parts of one multipart request may hold (Open
/// vSwitch's 4 MiB: a TABLE_FEATURES request can pass 1 MB).
pub const MULTIPART_MAX_BYTES: usize = 4 << 20;

/// Text cut to fit one message whose headers take `overhead` bytes of the
/// 65 535 (a trace reply 16, a command reply 20), at a line end when there
/// is one, with a note that it was cut.
pub(crate) fn fit_text(text: &str, overhead: usize) -> std::borrow::Cow<'_, str> {
    const NOTE: &str = "\n... (truncated: longer than one OpenFlow message)\n";
    let max = ofp::header::MAX_MSG_LEN - overhead;
    if text.len() <= max {
        return text.into();
    }
    let mut cut = max - NOTE.len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind('\n').unwrap_or(cut);
    format!("{}{NOTE}", &text[..cut]).into()
}
