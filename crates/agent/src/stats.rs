//! Multipart replies: statistics and descriptions, split into messages
//! that each fit 65 535 bytes; FLOW_STATS produced a message at a time as
//! the connection's outbox drains.

use super::*;

impl<D: Datapath> Agent<D> {
    /// Sends the next message of connection `id`'s FLOW_STATS reply: as
    /// many entries as fit one message, REPLY_MORE unless they are the
    /// last. The rules were taken when the request came; their counters
    /// are read now.
    pub(crate) fn continue_job(&mut self, id: ConnId, now_ns: u64) -> Progress {
        let Some(c) = self.conns.get_mut(&id) else {
            return Progress::Done;
        };
        let job = match c.job.as_mut() {
            Some(Job::FlowStats(j)) => j,
            Some(Job::FlowMod(_)) => return self.flow_mod_round(id, now_ns),
            None => return Progress::Done,
        };
        if job.nx {
            // NXST_FLOW: nx_flow_stats entries, as many as fit a 1.0
            // vendor stats reply (24 bytes of headers).
            let mut body = Vec::new();
            while let Some(r) = job.rules.get(job.at) {
                let at = body.len();
                let e = pipeline::control::flow_stats_entry(r, now_ns);
                ofp::msg::nx_flow::put_flow_stats(&e, &mut body);
                if at > 0 && body.len() > ofp::header::MAX_MSG_LEN - 24 {
                    body.truncate(at);
                    break;
                }
                job.at += 1;
            }
            let done = job.at >= job.rules.len();
            let xid = job.xid;
            c.send(&ofp::msg::nx_flow::flow_stats_reply(body, !done), xid);
            if done {
                c.job = None;
                return Progress::Done;
            }
            return Progress::More;
        }
        let mut entries = Vec::new();
        let mut len = 0;
        let mut scratch = Vec::new();
        while let Some(r) = job.rules.get(job.at) {
            scratch.clear();
            ofp::instruction::encode_instructions(&r.instructions, &mut scratch);
            let l = 48 + r.match_.wire_len() + scratch.len();
            if !entries.is_empty() && len + l > MAX_BODY {
                break;
            }
            entries.push(pipeline::control::flow_stats_entry(r, now_ns));
            len += l;
            job.at += 1;
        }
        let done = job.at >= job.rules.len();
        let xid = job.xid;
        let msg = Message::MultipartReply(MultipartReply {
            flags: if done { 0 } else { 1 },
            body: R::Flow(entries),
        });
        c.send(&msg, xid);
        if done {
            c.job = None;
            return Progress::Done;
        }
        Progress::More
    }

    /// Answers a multipart request: one or more reply bodies (several when
    /// a reply would not fit one message).
    pub(crate) fn multipart(&mut self, body: Q, now_ns: u64) -> Result<Vec<R>, ErrorCode> {
        let p = &self.pipeline;
        Ok(match body {
            Q::Desc => vec![R::Desc(Box::new(self.desc))],
            // `dispatch` answers FLOW_STATS a message at a time (see
            // `Agent::pump`); this is the whole reply at once.
            Q::Flow(req) => {
                let all = p.flow_stats(&req, now_ns).map_err(|e| e.code)?;
                split(all, R::Flow)
            }
            Q::Aggregate(req) => vec![R::Aggregate(p.aggregate(&req).map_err(|e| e.code)?)],
            Q::Table => self.table_stats()?,
            Q::PortStats { port_no: want } => self.port_stats(want, now_ns)?,
            Q::PortDesc => split(
                self.ports.values().map(PortInfo::desc).collect(),
                R::PortDesc,
            ),
            Q::GroupDesc => self.group_desc()?,
            Q::Group { group_id } => self.group_stats(group_id, now_ns)?,
            Q::MeterConfig { meter_id } => self.meter_config(meter_id)?,
            Q::Meter { meter_id } => self.meter_stats(meter_id, now_ns)?,
            Q::GroupFeatures => vec![R::GroupFeatures(ofp::msg::multipart::GroupFeatures {
                // all, select, indirect, fast failover
                types: 0b1111,
                // select weight, select liveness, chaining
                capabilities: 0b0111,
                max_groups: [p.config.max_groups as u32; 4],
                actions: [ACTIONS_SUPPORTED; 4],
            })],
            Q::MeterFeatures => vec![R::MeterFeatures(ofp::msg::multipart::MeterFeatures {
                max_meter: p.config.max_meters as u32,
                // drop, dscp_remark
                band_types: (1 << 1) | (1 << 2),
                // kbps, pktps, burst, stats
                capabilities: 0b1111,
                max_bands: p.config.max_bands as u8,
                max_color: 0,
            })],
            Q::Queue {
                port_no: port,
                queue_id,
            } => self.queue_stats(port, queue_id, now_ns)?,
            // A request that sets features is judged first
            // (`Agent::table_features_request`); the reply is the same.
            Q::TableFeatures(_) => split(
                table_features(p.config.n_tables, p.config.max_entries, &self.table_names),
                R::TableFeatures,
            ),
            Q::Experimenter(_) => return Err(brc(BadRequestCode::BadExperimenter)),
        })
    }

    /// TABLE stats: each table's rules, lookups and matches.
    fn table_stats(&self) -> Result<Vec<R>, ErrorCode> {
        let p = &self.pipeline;
        Ok({
            let counters = p.table_counters();
            let stats = p
                .tables()
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let c = counters.get(i).map(|c| c.totals()).unwrap_or_default();
                    TableStats {
                        table_id: i as u8,
                        // OpenFlow 1.0 and 1.2 carry the name here: the
                        // one TABLE_FEATURES reports, empty for none.
                        name: ofp::wire::FixedStr::new(&String::from_utf8_lossy(
                            self.table_names.get(i as u8).unwrap_or_default(),
                        )),
                        active_count: t.len() as u32,
                        lookup_count: c.packets,
                        matched_count: c.bytes,
                    }
                })
                .collect();
            split(stats, R::Table)
        })
    }

    /// PORT_STATS: one port or all, with the datapath's counters.
    fn port_stats(&self, want: u32, now_ns: u64) -> Result<Vec<R>, ErrorCode> {
        Ok({
            if want != port_no::ANY && !self.ports.contains_key(&want) {
                return Err(brc(BadRequestCode::BadPort));
            }
            let stats = self
                .ports
                .values()
                .filter(|p| want == port_no::ANY || p.port_no == want)
                .filter_map(|p| {
                    let mut s = self.datapath.port_stats(p.port_no)?;
                    let d = now_ns.saturating_sub(p.since_ns);
                    s.port_no = p.port_no;
                    s.duration_sec = (d / 1_000_000_000) as u32;
                    s.duration_nsec = (d % 1_000_000_000) as u32;
                    Some(s)
                })
                .collect();
            split(stats, R::PortStats)
        })
    }

    /// GROUP_DESC: every group, by id.
    fn group_desc(&self) -> Result<Vec<R>, ErrorCode> {
        let p = &self.pipeline;
        Ok({
            let mut v: Vec<_> = p
                .groups()
                .values()
                .map(|g| ofp::msg::multipart::GroupDesc {
                    group_type: g.rt.group_type,
                    group_id: g.group_id,
                    buckets: g.rt.buckets.clone(),
                    selection: g.rt.selection.clone(),
                })
                .collect();
            v.sort_by_key(|g| g.group_id);
            split(v, R::GroupDesc)
        })
    }

    /// GROUP stats: one group or all, with their buckets' counters.
    fn group_stats(&self, group_id: u32, now_ns: u64) -> Result<Vec<R>, ErrorCode> {
        let p = &self.pipeline;
        Ok({
            let refs = p.group_ref_counts();
            let mut v: Vec<_> = p
                .groups()
                .values()
                .filter(|g| group_id == ofp::port::group_no::ALL || g.group_id == group_id)
                .map(|g| {
                    let t = g.rt.counters.totals();
                    let d = now_ns.saturating_sub(g.created_ns);
                    ofp::msg::multipart::GroupStats {
                        group_id: g.group_id,
                        ref_count: refs.get(&g.group_id).copied().unwrap_or(0),
                        packet_count: t.packets,
                        byte_count: t.bytes,
                        duration_sec: (d / 1_000_000_000) as u32,
                        duration_nsec: (d % 1_000_000_000) as u32,
                        bucket_stats: g
                            .rt
                            .bucket_counters
                            .iter()
                            .map(|c| {
                                let t = c.totals();
                                ofp::msg::multipart::BucketCounter {
                                    packet_count: t.packets,
                                    byte_count: t.bytes,
                                }
                            })
                            .collect(),
                    }
                })
                .collect();
            v.sort_by_key(|g| g.group_id);
            split(v, R::Group)
        })
    }

    /// METER_CONFIG: one meter or all, by id.
    fn meter_config(&self, meter_id: u32) -> Result<Vec<R>, ErrorCode> {
        let p = &self.pipeline;
        Ok({
            let mut v: Vec<_> = p
                .meters()
                .values()
                .filter(|m| meter_id == ofp::port::meter_no::ALL || m.meter_id == meter_id)
                .map(|m| ofp::msg::multipart::MeterConfig {
                    flags: m.state.flags,
                    meter_id: m.meter_id,
                    bands: m.state.bands.iter().map(|b| b.band.clone()).collect(),
                })
                .collect();
            v.sort_by_key(|m| m.meter_id);
            split(v, R::MeterConfig)
        })
    }

    /// METER stats: one meter or all, with their bands' counters.
    fn meter_stats(&self, meter_id: u32, now_ns: u64) -> Result<Vec<R>, ErrorCode> {
        let p = &self.pipeline;
        Ok({
            use std::sync::atomic::Ordering::Relaxed;
            let flows = p.meter_flow_counts();
            let mut v: Vec<_> = p
                .meters()
                .values()
                .filter(|m| meter_id == ofp::port::meter_no::ALL || m.meter_id == meter_id)
                .map(|m| {
                    let d = now_ns.saturating_sub(m.created_ns);
                    ofp::msg::multipart::MeterStats {
                        meter_id: m.meter_id,
                        flow_count: flows.get(&m.meter_id).copied().unwrap_or(0),
                        packet_in_count: m.state.packets.load(Relaxed),
                        byte_in_count: m.state.bytes.load(Relaxed),
                        duration_sec: (d / 1_000_000_000) as u32,
                        duration_nsec: (d % 1_000_000_000) as u32,
                        band_stats: m
                            .state
                            .bands
                            .iter()
                            .map(|b| ofp::msg::multipart::MeterBandStats {
                                packet_band_count: b.packets.load(Relaxed),
                                byte_band_count: b.bytes.load(Relaxed),
                            })
                            .collect(),
                    }
                })
                .collect();
            v.sort_by_key(|m| m.meter_id);
            split(v, R::Meter)
        })
    }

    /// QUEUE stats: the configured queues of one port or all, ports in order.
    fn queue_stats(&self, port: u32, queue_id: u32, now_ns: u64) -> Result<Vec<R>, ErrorCode> {
        Ok({
            if port != port_no::ANY && !self.ports.contains_key(&port) {
                return Err(ErrorCode::QueueOpFailed(QueueOpFailedCode::BadPort));
            }
            let mut stats = Vec::new();
            let mut ports: Vec<&PortInfo> = self
                .ports
                .values()
                .filter(|p| port == port_no::ANY || p.port_no == port)
                .collect();
            ports.sort_by_key(|p| p.port_no);
            for p in ports {
                for &(q, _, _) in &p.queues {
                    if queue_id != ofp::port::QUEUE_ALL && q != queue_id {
                        continue;
                    }
                    let Some((tx_bytes, tx_packets, tx_errors)) =
                        self.datapath.queue_stats(p.port_no, q)
                    else {
                        continue;
                    };
                    let d = now_ns.saturating_sub(p.since_ns);
                    stats.push(QueueStats {
                        port_no: p.port_no,
                        queue_id: q,
                        tx_bytes,
                        tx_packets,
                        tx_errors,
                        duration_sec: (d / 1_000_000_000) as u32,
                        duration_nsec: (d % 1_000_000_000) as u32,
                    });
                }
            }
            if stats.is_empty() && queue_id != ofp::port::QUEUE_ALL {
                return Err(ErrorCode::QueueOpFailed(QueueOpFailedCode::BadQueue));
            }
            split(stats, R::Queue)
        })
    }
}

/// Actions the datapath runs (`ofp_action_type` bits 0-27, every 1.3 one
/// but the experimenter's).
pub(crate) const ACTIONS_SUPPORTED: u32 = (1 << 0)
    | (1 << 11)
    | (1 << 12)
    | (1 << 15)
    | (1 << 16)
    | (1 << 17)
    | (1 << 18)
    | (1 << 19)
    | (1 << 20)
    | (1 << 21)
    | (1 << 22)
    | (1 << 23)
    | (1 << 24)
    | (1 << 25)
    | (1 << 26)
    | (1 << 27);

/// What every table supports: all instructions (goto only forward), every
/// action, every basic OXM field to match, wildcard and set; each table's
/// name (none: empty, as Open vSwitch reports an unnamed table).
pub(crate) fn table_features(
    n_tables: u8,
    max_entries: usize,
    names: &crate::tables::TableNames,
) -> Vec<ofp::msg::table_features::TableFeatures> {
    use ofp::msg::table_features::{
        prop_type as t, OxmId, TableFeatureProp as P, TableFeatures, TypeId,
    };
    let ids = |tys: Vec<u16>| {
        tys.into_iter()
            .map(|ty| TypeId {
                ty,
                data: Bytes::new(),
            })
            .collect::<Vec<_>>()
    };
    // The six of OpenFlow 1.3 (no experimenter's: sluice runs none, and an
    // experimenter instruction's id would have to name its experimenter).
    let instructions = ids(ofp::instruction::InstructionType::KNOWN
        .iter()
        .map(|i| i.value())
        .filter(|&v| v != 0xffff)
        .collect());
    let actions = ids(ofp::action::ActionType::KNOWN
        .iter()
        .map(|a| a.value())
        .filter(|&v| v != 0xffff)
        .collect());
    let oxm = |pred: fn(&ofp::oxm::FieldInfo) -> bool| {
        // The 40 basic fields, then the NXM_1 tunnel fields (their
        // headers are Open vSwitch's, class 0x0001).
        OxmField::KNOWN
            .iter()
            .chain(OxmField::NICIRA)
            .filter_map(|f| Some((f, f.info()?)))
            .filter(|(_, i)| pred(i))
            .map(|(f, _)| {
                let header = f.header(false);
                OxmId {
                    header,
                    // An experimenter field's id names its experimenter
                    // (tcp_flags: ONF's).
                    experimenter: (header >> 16 == u32::from(ofp::oxm::OXM_CLASS_EXPERIMENTER))
                        .then_some(ofp::oxm::ONF_EXPERIMENTER),
                }
            })
            .collect::<Vec<_>>()
    };
    let all = oxm(|_| true);
    let wild = oxm(|i| i.maskable);
    let set = oxm(|i| i.settable);
    (0..n_tables)
        .map(|id| {
            let next: Vec<u8> = (id.saturating_add(1)..n_tables).collect();
            let mut props = Vec::new();
            for ty in [t::INSTRUCTIONS, t::INSTRUCTIONS_MISS] {
                props.push(P::Instructions {
                    ty,
                    ids: instructions.clone(),
                });
            }
            props.push(P::NextTables {
                ty: t::NEXT_TABLES,
                tables: next.clone(),
            });
            props.push(P::NextTables {
                ty: t::NEXT_TABLES_MISS,
                tables: next,
            });
            for ty in [
                t::WRITE_ACTIONS,
                t::WRITE_ACTIONS_MISS,
                t::APPLY_ACTIONS,
                t::APPLY_ACTIONS_MISS,
            ] {
                props.push(P::Actions {
                    ty,
                    ids: actions.clone(),
                });
            }
            props.push(P::Oxms {
                ty: t::MATCH,
                ids: all.clone(),
            });
            props.push(P::Oxms {
                ty: t::WILDCARDS,
                ids: wild.clone(),
            });
            for ty in [
                t::WRITE_SETFIELD,
                t::WRITE_SETFIELD_MISS,
                t::APPLY_SETFIELD,
                t::APPLY_SETFIELD_MISS,
            ] {
                props.push(P::Oxms {
                    ty,
                    ids: set.clone(),
                });
            }
            TableFeatures {
                table_id: id,
                name: {
                    let mut n = FixedStr::default();
                    let b = names.get(id).unwrap_or_default();
                    n.0[..b.len()].copy_from_slice(b);
                    n
                },
                metadata_match: u64::MAX,
                metadata_write: u64::MAX,
                config: 0,
                max_entries: max_entries.min(u32::MAX as usize) as u32,
                properties: props,
            }
        })
        .collect()
}

/// Largest body of one multipart reply message (the header and multipart
/// header take 16 bytes of the 65 535).
pub(crate) const MAX_BODY: usize = 65_535 - 16;

/// Splits a list into reply bodies that each fit one message, by encoding
/// and measuring.
pub(crate) fn split<T: Clone>(items: Vec<T>, make: fn(Vec<T>) -> R) -> Vec<R> {
    let size = |v: Vec<T>| -> usize {
        Message::MultipartReply(MultipartReply {
            flags: 0,
            body: make(v),
        })
        .to_bytes(0)
        .len()
            - 16
    };
    let mut out = Vec::new();
    let mut cur: Vec<T> = Vec::new();
    let mut cur_len = 0;
    for it in items {
        let l = size(vec![it.clone()]);
        if !cur.is_empty() && cur_len + l > MAX_BODY {
            out.push(make(std::mem::take(&mut cur)));
            cur_len = 0;
        }
        cur_len += l;
        cur.push(it);
    }
    out.push(make(cur));
    out
}

/// What a connection is in the middle of: its later messages wait
/// behind it ([`Agent::pump`]).
#[derive(Debug)]
pub enum Job {
    /// A FLOW_STATS reply, a message at a time as the outbox drains.
    FlowStats(FlowStatsJob),
    /// A FLOW_MOD naming more rules than one round changes, a round at a
    /// time ([`pipeline::control::FlowModJob`]).
    FlowMod(FlowModRounds),
}

/// How far a job came in one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Finished: the connection's next messages may be handled.
    Done,
    /// A message of a reply sent: more to come as the outbox drains.
    More,
    /// A round of a FLOW_MOD done: the control thread turns to other
    /// work before the next.
    Yield,
}

/// A FLOW_MOD in rounds on one connection.
#[derive(Debug)]
pub struct FlowModRounds {
    pub(crate) job: Box<pipeline::control::FlowModJob>,
    /// The FLOW_MOD's xid (flow monitors abbreviate with it).
    pub(crate) xid: u32,
    /// The buffered packet (in_port, frame) the FLOW_MOD named, run
    /// through the tables once the last round is done.
    pub(crate) buffered: Option<(u32, Bytes)>,
}

/// A FLOW_STATS reply in progress on one connection.
#[derive(Debug)]
pub struct FlowStatsJob {
    pub(crate) xid: u32,
    /// The rules selected when the request came, in reply order.
    pub(crate) rules: Vec<Arc<pipeline::Rule>>,
    /// How many have been sent.
    pub(crate) at: usize,
    /// Whether the reply is Nicira's NXST_FLOW (the request was), not
    /// FLOW_STATS.
    pub(crate) nx: bool,
}
