//! The worker: the public face of the interpreter. A [`Worker`] owns one
//! datapath thread's reusable execution state and caches (the exact-match
//! cache, the cache of whole walks, the look ahead) and runs packets, a
//! PACKET_OUT, or a trace through a published snapshot.

use super::*;

/// A datapath worker: run packets with [`Worker::process`].
pub struct Worker {
    /// This worker's counter slot.
    pub id: usize,
    pub(super) exec: Exec,
    emc: Option<Emc>,
    paths: Option<crate::lookup::paths::Paths>,
    ahead: crate::lookup::lookahead::Ahead,
    /// Flows this worker taught that its packets see until they are
    /// published ([`super::unpublished`]).
    unpublished: Unpublished,
}

/// Default exact-match cache size (entries).
pub const EMC_ENTRIES: usize = 8192;

impl Worker {
    /// A worker with an exact-match cache of [`EMC_ENTRIES`] entries.
    pub fn new(id: usize) -> Worker {
        Worker::with_cache(id, EMC_ENTRIES)
    }

    /// A worker with a cache of `entries` entries (0: no cache).
    pub fn with_cache(id: usize, entries: usize) -> Worker {
        Worker {
            id,
            exec: Exec::new(),
            emc: (entries > 0).then(|| Emc::new(entries)),
            paths: (entries > 0).then(|| crate::lookup::paths::Paths::new(entries / 2)),
            ahead: crate::lookup::lookahead::Ahead::new(),
            unpublished: Unpublished::default(),
        }
    }

    /// The flow key of the last packet processed (as last extracted).
    pub fn key(&self) -> &FlowKey {
        &self.exec.key
    }

    /// Edits (set_field, TTL, push/pop) skipped so far because the packet
    /// had no such header: a group bucket's action list meets packets that
    /// validation could not know.
    pub fn skipped_edits(&self) -> u64 {
        self.exec.skipped_edits
    }

    /// Outputs and group buckets dropped so far because one packet asked
    /// for more than [`MAX_OUTPUTS_PER_PACKET`] copies or
    /// [`MAX_BUCKETS_PER_PACKET`] bucket runs.
    pub fn over_limit(&self) -> u64 {
        self.exec.over_limit
    }

    /// The flows packets taught since the last call (`learn`), for the
    /// control plane to add ([`crate::Pipeline::learn`]). At most
    /// [`LEARN_PENDING_MAX`] wait between two calls.
    pub fn take_learned(&mut self) -> Vec<Learned> {
        std::mem::take(&mut self.exec.teach.pending)
    }

    /// Learned flows this worker did not hand over: (taught again within
    /// [`RELEARN_NS`], dropped because [`LEARN_PENDING_MAX`] were waiting).
    pub fn learn_skipped(&self) -> (u64, u64) {
        (self.exec.teach.repeated, self.exec.teach.dropped)
    }

    /// Flows this worker taught that its packets see until they are
    /// published: (held now, held so far) ([`crate::exec`]'s `unpublished`).
    pub fn unpublished(&self) -> (usize, u64) {
        (self.unpublished.len(), self.unpublished.held)
    }

    /// Heap bytes of this worker's learning bookkeeping (the flows it
    /// taught lately, the list waiting for [`Worker::take_learned`]).
    pub fn learn_bytes(&self) -> usize {
        self.exec.teach.heap_bytes()
    }

    /// Cache hits and misses so far.
    pub fn cache_stats(&self) -> (u64, u64) {
        self.emc.as_ref().map_or((0, 0), |e| (e.hits, e.misses))
    }

    /// Misses the exact-match cache did not admit while thrashing
    /// ([`crate::lookup::emc`]).
    pub fn cache_refused(&self) -> u64 {
        self.emc.as_ref().map_or(0, |e| e.refused)
    }

    /// Lookups that skipped the exact-match cache while it was bypassed
    /// ([`crate::lookup::emc`]).
    pub fn cache_bypassed(&self) -> u64 {
        self.emc.as_ref().map_or(0, |e| e.bypassed)
    }

    /// Hits and misses of the cache of whole walks ([`crate::lookup::paths`]).
    pub fn path_stats(&self) -> (u64, u64) {
        self.paths.as_ref().map_or((0, 0), |p| (p.hits, p.misses))
    }

    /// Cache hits so far on entries of an earlier version that no rule
    /// change since touched (counted in the hits too).
    pub fn cache_kept(&self) -> u64 {
        self.emc.as_ref().map_or(0, |e| e.kept)
    }

    /// Looks ahead over the packets (ingress port, frame) about to run
    /// through `snap`, up to [`crate::lookup::lookahead::LOOKAHEAD`] of them: while
    /// the exact-match cache misses, loads into the CPU's caches what their
    /// first lookups will read ([`crate::lookup::lookahead`]). Changes no result;
    /// call it for a batch, then [`Worker::process`] each packet.
    pub fn look_ahead<'a>(
        &mut self,
        snap: &Snapshot,
        frames: impl IntoIterator<Item = (u32, &'a [u8])>,
    ) {
        // A bypassed cache is not looked ahead into (most lookups skip it).
        let emc = self.emc.as_ref().filter(|e| !e.bypassed_now());
        let sink = self.ahead.run(emc, snap.tables.first(), self.id, frames);
        std::hint::black_box(sink);
    }

    /// Turns the look ahead on (the default) or off, for comparisons.
    pub fn set_lookahead(&mut self, on: bool) {
        self.ahead.enabled = on;
    }

    /// Batches looked ahead over so far.
    pub fn lookahead_batches(&self) -> u64 {
        self.ahead.batches
    }

    /// Runs one packet received on `in_port` through `snap`. The frame may
    /// be edited in place (a `Vec`, or any [`FrameBuf`]: a frame left in
    /// its receive memory); outputs without their own `data` carry the
    /// frame as it is when this returns.
    pub fn process<B: FrameBuf + ?Sized>(
        &mut self,
        snap: &Snapshot,
        in_port: u32,
        frame: &mut B,
        now_ns: u64,
    ) -> &[Output] {
        self.process_tunneled(snap, in_port, &TunnelMeta::default(), &[], frame, now_ns)
    }

    /// [`Worker::process`] for a packet that came out of a tunnel port
    /// with metadata `tun` (its VNI and outer addresses, which flows match
    /// as `tun_id`, `tun_src`, `tun_dst`) and Geneve options `tun_opts`
    /// (the header's option bytes; empty: none), which become its
    /// `tun_metadataN` fields ([`crate::tlv::GeneveMap::read`]).
    #[allow(clippy::too_many_arguments)] // the packet and where it came from
    pub fn process_tunneled<B: FrameBuf + ?Sized>(
        &mut self,
        snap: &Snapshot,
        in_port: u32,
        tun: &TunnelMeta,
        tun_opts: &[u8],
        frame: &mut B,
        now_ns: u64,
    ) -> &[Output] {
        self.exec.process::<false, _>(
            self.id,
            self.emc.as_mut(),
            self.paths.as_mut(),
            &mut self.unpublished,
            snap,
            in_port,
            tun,
            tun_opts,
            frame,
            now_ns,
        )
    }

    /// Frames dropped for their Geneve options so far: a critical option
    /// the option table does not map, a mapped one of another length, or
    /// options that run past their end ([`crate::tlv`]).
    pub fn tun_options_refused(&self) -> u64 {
        self.exec.tun_opts_refused
    }
}

impl Worker {
    /// Runs a PACKET_OUT's `actions` on `frame` as if it had arrived on
    /// `in_port` (CONTROLLER when it came from nowhere). An output to
    /// TABLE submits the packet to the pipeline from table 0 and its
    /// outputs join the list. Every output carries its own bytes. This is
    /// the control path (allocation is fine here).
    pub fn packet_out(
        &mut self,
        snap: &Snapshot,
        in_port: u32,
        actions: &[Action],
        frame: &mut Vec<u8>,
        now_ns: u64,
    ) -> Vec<Output> {
        let e = &mut self.exec;
        e.outputs.clear();
        e.set.clear();
        e.metadata = 0;
        e.tun = TunnelMeta::default();
        e.tun_arrived = (0, 0);
        e.key.clear_metadata();
        e.stack.clear();
        e.reextract(frame, in_port);
        let mut cx = Ctx::new(snap, self.id, in_port, now_ns);
        e.run_actions::<false, _>(actions, frame, &mut cx, 0);
        let mut buckets = cx.buckets_run;
        let outs: Vec<Output> = e
            .outputs
            .drain(..)
            .map(|mut o| {
                o.data.get_or_insert_with(|| frame.clone());
                o
            })
            .collect();
        // The per-packet limits hold for the PACKET_OUT as a whole: its
        // submissions to the tables share one budget of outputs and
        // bucket runs with its own actions.
        let mut result = Vec::with_capacity(outs.len());
        for o in outs {
            if o.port != port_no::TABLE {
                result.push(o);
                continue;
            }
            if result.len() >= MAX_OUTPUTS_PER_PACKET || buckets >= MAX_BUCKETS_PER_PACKET {
                self.exec.over_limit += 1;
                continue;
            }
            let mut f = o.data.unwrap_or_default();
            let id = self.id;
            self.exec.buckets_carried = buckets;
            let room = MAX_OUTPUTS_PER_PACKET - result.len();
            let r = self.exec.process::<false, _>(
                id,
                None,
                None,
                &mut Unpublished::default(),
                snap,
                in_port,
                &o.tunnel.meta(),
                o.tun_opts.as_deref().unwrap_or(&[]),
                &mut f,
                now_ns,
            );
            let over = r.len().saturating_sub(room) as u64;
            result.extend(r.iter().take(room).cloned().map(|mut x| {
                x.data.get_or_insert_with(|| f.clone());
                x
            }));
            self.exec.over_limit += over;
            buckets = self.exec.buckets_used;
        }
        result
    }
}

/// What a trace run found ([`trace_run`]).
pub(crate) struct TraceRun {
    pub steps: Vec<String>,
    /// The outputs, each with its bytes.
    pub outputs: Vec<Output>,
    /// The packet as it ends.
    pub final_frame: Vec<u8>,
    /// Its flow key as it ends (registers and metadata included).
    pub final_key: FlowKey,
    /// The flows its `learn` actions taught (not handed to anyone).
    pub learned: Vec<Learned>,
    /// Its recirculations and `ct`s (see [`crate::trace`]'s blocks).
    pub recircs: Vec<super::ct::RecircRun>,
    pub cts: Vec<super::ct::CtRun>,
}

/// Runs `frame` through `snap` as if it arrived on `in_port`, touching no
/// counter, meter or cache; returns what each step did, the outputs (each
/// with its bytes), the packet as it ends and what it taught. See
/// [`crate::trace`].
///
/// `--ct-next` states go to the recirculations in Open vSwitch's order,
/// the order its trace resumes them (those the first pass queued, then
/// those each of them queued, ...), where sluice runs each where its `ct`
/// is: the trace runs again with the states placed by the previous run's
/// order until the order holds (each run settles at least the next
/// recirculation: at most one run more per state given).
pub(crate) fn trace_run(
    snap: &Snapshot,
    in_port: u32,
    tun: &TunnelMeta,
    frame: &[u8],
    opts: &crate::trace::Options,
) -> TraceRun {
    let mut plan: Vec<(Vec<u32>, u32)> = Vec::new();
    let mut run = trace_once(snap, in_port, tun, frame, opts, &plan);
    for _ in 0..opts.ct_next.len() {
        let order = crate::trace::queue_order(&run.recircs);
        let next: Vec<(Vec<u32>, u32)> = order
            .iter()
            .zip(&opts.ct_next)
            .map(|(&i, &st)| (run.recircs[i].path.clone(), st))
            .collect();
        if next == plan {
            break;
        }
        plan = next;
        run = trace_once(snap, in_port, tun, frame, opts, &plan);
    }
    run
}

/// One run of [`trace_run`], the recirculations at the paths of `plan`
/// given its states.
fn trace_once(
    snap: &Snapshot,
    in_port: u32,
    tun: &TunnelMeta,
    frame: &[u8],
    opts: &crate::trace::Options,
    plan: &[(Vec<u32>, u32)],
) -> TraceRun {
    let mut e = Exec::new();
    e.ct_plan = plan.to_vec();
    e.tci = opts.tci;
    let mut f = frame.to_vec();
    let outputs = e
        .process::<true, _>(
            0,
            None,
            None,
            &mut Unpublished::default(),
            snap,
            in_port,
            tun,
            &[],
            &mut f,
            0,
        )
        .to_vec();
    let outputs = outputs
        .into_iter()
        .map(|mut o| {
            o.data.get_or_insert_with(|| f.clone());
            o
        })
        .collect();
    // The key as the packet ends: its headers re-read (edits may have left
    // them stale), its metadata words as the walk left them.
    e.key.set(s::METADATA, e.metadata);
    let mut final_key = e.key;
    packet::extract(&f, in_port, &mut final_key);
    final_key.set_tunnel(&e.tun);
    TraceRun {
        steps: std::mem::take(&mut e.log),
        outputs,
        final_frame: f,
        final_key,
        learned: std::mem::take(&mut e.teach.pending),
        recircs: std::mem::take(&mut e.recircs),
        cts: std::mem::take(&mut e.cts),
    }
}
