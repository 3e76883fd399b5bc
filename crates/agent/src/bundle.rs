//! OpenFlow bundles, as Open vSwitch offers them to OpenFlow 1.3 peers
//! (the ONF extension, [`ofp::msg::bundle`]): a controller opens a bundle,
//! adds FLOW_MOD, GROUP_MOD and METER_MOD messages to it, and commits it;
//! the switch applies every message, in order, or none, and the datapath
//! goes from the state before to the state after in one publication.
//!
//! Contracts:
//! * Bundles belong to a connection, by id ([`Bundles`] in [`crate::Conn`]);
//!   they go when it goes. Bundle messages from a slave are
//!   `OFPBRC_IS_SLAVE`; any other connection, the management socket's
//!   included, may use them.
//! * OPEN: flags other than ATOMIC and ORDERED are `OFPBFC_BAD_FLAGS`; an
//!   id in use is `OFPBFC_BAD_ID` and the bundle that had it is discarded
//!   (OpenFlow 1.4 and Open vSwitch); more than [`BundleLimits::max_open`] is
//!   `OFPBFC_OUT_OF_BUNDLES`. CLOSE: unknown `OFPBFC_BAD_ID`; closed
//!   already, or other flags, `OFPBFC_BUNDLE_CLOSED` / `OFPBFC_BAD_FLAGS`
//!   and the bundle is discarded (as Open vSwitch). DISCARD: unknown
//!   `OFPBFC_BAD_ID`. Replies carry the request's xid, id and flags.
//! * ADD: an unknown id opens the bundle with the add's flags (as Open
//!   vSwitch does); a closed bundle, or other flags than the bundle's, is
//!   `OFPBFC_BUNDLE_CLOSED` / `OFPBFC_BAD_FLAGS` and the bundle is
//!   discarded. The inner message must be whole (`OFPBFC_MSG_BAD_LEN`),
//!   carry the outer xid (`OFPBFC_MSG_BAD_XID`) and be a FLOW_MOD,
//!   GROUP_MOD or METER_MOD (`OFPBFC_MSG_UNSUP`); it is decoded and
//!   validated as if sent alone, and a refusal is that message's error
//!   (e.g. `OFPBMC_BAD_PREREQ`). A refused message is not added and the
//!   bundle stays open (the controller decides: `ovs-ofctl --bundle`
//!   discards). A FLOW_MOD naming a buffered packet is `OFPBFC_MSG_UNSUP`:
//!   buffers are few and recycled (256, see [`crate::Buffers`]), so the
//!   packet could be gone or replaced by commit time, and sending it at
//!   commit would be a PACKET_OUT the controller did not order at that
//!   point; Open vSwitch's bundles do not release buffers either.
//!   Checks that need the switch's state (tables, groups, meters, ports,
//!   capacity) are made at commit, against the state then.
//! * COMMIT: unknown `OFPBFC_BAD_ID`; other flags `OFPBFC_BAD_FLAGS`; else
//!   every message is applied, in the order added, to a clone of the
//!   pipeline (cheap: the pipeline is copy-on-write). At the first
//!   refusal that message's own error goes out (its xid, its first 64
//!   bytes), then `OFPBFC_MSG_FAILED` for the commit, and the clone is
//!   dropped: the pipeline, the datapath and the controllers saw nothing.
//!   On success the clone replaces the pipeline, FLOW_REMOVED goes out for
//!   the flows the bundle removed (as for the same mods sent alone), the
//!   pipeline is published at once and COMMIT_REPLY follows. The bundle is
//!   gone either way. Commit works on open and closed bundles alike.
//! * ATOMIC and ORDERED are always honoured, asked for or not: every
//!   commit is all-or-nothing and in order, the only way this switch
//!   knows how to apply a bundle.
//! * BARRIER does not commit and does not wait for bundles; the other
//!   messages of the connection are handled as before, bundles open or
//!   not. A PACKET_OUT between ADDs runs at once against the pipeline as
//!   it is, not as the bundle would make it.
//! * Memory is bounded: at most [`BundleLimits::max_open`] bundles a
//!   connection (64), and all of a connection's bundles together hold at
//!   most as many messages as the bridge holds flows (`max_flows`, 2 000
//!   000 by default) and [`BundleLimits::max_bytes`] bytes of messages
//!   (256 MiB): a bundle of a million flow-mods fits. The bundles of all
//!   connections together hold no more than `max_flows` messages and
//!   [`BundleLimits::max_total_bytes`] (512 MiB), so a peer with many
//!   connections pins no more than that. Past any of these, the add is
//!   `OFPBFC_MSG_TOO_MANY`. Messages are kept as their wire bytes, back
//!   to back in chunks of at most 1 MiB (a 64 KiB message at most wasted
//!   per chunk), and decoded again at commit.
//! * A bundle not touched (OPEN, ADD, CLOSE) for
//!   [`BundleLimits::idle_timeout_ns`] (10 s, Open vSwitch's default) is
//!   discarded by [`crate::Agent::handle_timeout`] with `OFPBFC_TIMEOUT`, carrying
//!   the xid and first bytes of the message that opened it (as Open
//!   vSwitch).
//! * Properties of bundle messages are accepted and ignored (as Open
//!   vSwitch); no time-scheduled commits.
//!
//! Time: a commit runs in one step of the control thread, decoding and
//! applying every message as the same messages sent one by one would (not
//! measured yet for large bundles), plus the clone: a copy of the flow
//! tables' indexes, a pointer per rule, not the rules.

use std::collections::BTreeMap;

use bytes::Bytes;
use ofp::error::{BadRequestCode, BundleFailedCode as B, ErrorCode};
use ofp::msg::bundle::{bundle_flags, BundleAdd, BundleCtrl, BundleCtrlType, BundleMsg};
use ofp::msg::simple::{ErrorMsg, ExperimenterMsg};
use ofp::port::NO_BUFFER;
use ofp::{FlowModCommand, Message, MsgType};
use pipeline::{Pipeline, Removed};

use crate::{Agent, ConnId, Datapath};

/// Bounds on a connection's bundles.
#[derive(Debug, Clone, Copy)]
pub struct BundleLimits {
    /// Bundles open at once on one connection.
    pub max_open: usize,
    /// Bytes of messages in all of a connection's bundles together.
    pub max_bytes: usize,
    /// Bytes of messages in the bundles of every connection together (a
    /// peer with many connections pins no more than this).
    pub max_total_bytes: usize,
    /// A bundle left this long without OPEN, ADD or CLOSE is discarded.
    pub idle_timeout_ns: u64,
}

impl Default for BundleLimits {
    fn default() -> Self {
        BundleLimits {
            max_open: 64,
            max_bytes: 256 << 20,
            max_total_bytes: 512 << 20,
            idle_timeout_ns: 10_000_000_000,
        }
    }
}

/// Largest chunk of a bundle's storage (a message longer than this, which
/// OpenFlow's 64 KiB messages never are, would get a chunk of its own).
const MAX_CHUNK: usize = 1 << 20;
/// First chunk of a bundle.
const FIRST_CHUNK: usize = 4 << 10;

/// One bundle: its flags, whether closed, and its messages.
#[derive(Debug)]
pub struct Bundle {
    flags: u16,
    closed: bool,
    /// The messages, whole, one after another (each one's header gives its
    /// length), in chunks that grow to [`MAX_CHUNK`].
    chunks: Vec<Vec<u8>>,
    count: usize,
    bytes: usize,
    used_ns: u64,
    /// The message that opened the bundle (its xid and first 64 bytes):
    /// what a timeout's error refers to.
    origin_xid: u32,
    origin: Bytes,
}

impl Bundle {
    fn new(flags: u16, now_ns: u64, origin_xid: u32, origin: &[u8]) -> Bundle {
        let n = origin.len().min(ofp::framer::ERROR_DATA_LEN);
        Bundle {
            flags,
            closed: false,
            chunks: Vec::new(),
            count: 0,
            bytes: 0,
            used_ns: now_ns,
            origin_xid,
            origin: Bytes::copy_from_slice(&origin[..n]),
        }
    }

    fn push(&mut self, msg: &[u8]) {
        match self.chunks.last_mut() {
            Some(c) if c.capacity() - c.len() >= msg.len() => c.extend_from_slice(msg),
            last => {
                let size = last
                    .map_or(FIRST_CHUNK, |c| (c.capacity() * 2).min(MAX_CHUNK))
                    .max(msg.len());
                let mut c = Vec::with_capacity(size);
                c.extend_from_slice(msg);
                self.chunks.push(c);
            }
        }
        self.count += 1;
        self.bytes += msg.len();
    }

    /// The flags it was opened with.
    pub fn flags(&self) -> u16 {
        self.flags
    }

    /// Messages added.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no message was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The messages in the order they were added, each whole.
    pub fn into_messages(self) -> impl Iterator<Item = Bytes> {
        self.chunks.into_iter().flat_map(|c| {
            let b = Bytes::from(c);
            let mut at = 0;
            std::iter::from_fn(move || {
                let len = b
                    .get(at + 2..at + 4)
                    .map(|l| u16::from_be_bytes([l[0], l[1]]))?;
                let len = len as usize;
                // Every message was checked whole when it was added.
                if len < ofp::header::HEADER_LEN || at + len > b.len() {
                    return None;
                }
                let m = b.slice(at..at + len);
                at += len;
                Some(m)
            })
        })
    }
}

/// How many messages and bytes a connection's bundles may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub max_open: usize,
    pub max_messages: usize,
    pub max_bytes: usize,
}

/// A connection's bundles, by id, and what they hold in all.
#[derive(Debug, Default)]
pub struct Bundles {
    open: BTreeMap<u32, Bundle>,
    messages: usize,
    bytes: usize,
}

impl Bundles {
    /// Bundles open (closed ones not yet committed or discarded included).
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Messages held in all bundles.
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// Bytes of messages held in all bundles.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The bundle `id`, if open.
    pub fn get(&self, id: u32) -> Option<&Bundle> {
        self.open.get(&id)
    }

    /// Takes bundle `id` out (for commit or discard).
    pub(crate) fn take(&mut self, id: u32) -> Option<Bundle> {
        let b = self.open.remove(&id)?;
        self.messages -= b.count;
        self.bytes -= b.bytes;
        Some(b)
    }

    /// Discards bundle `id` and answers `code` (a misuse of the bundle).
    fn discard_with(&mut self, id: u32, code: B) -> Result<(), B> {
        self.take(id);
        Err(code)
    }

    pub(crate) fn open(
        &mut self,
        id: u32,
        flags: u16,
        now_ns: u64,
        xid: u32,
        frame: &[u8],
        bounds: &Bounds,
    ) -> Result<(), B> {
        if flags & !bundle_flags::ALL != 0 {
            return Err(B::BadFlags);
        }
        if self.open.contains_key(&id) {
            // OpenFlow 1.4 (and Open vSwitch): refuse with BAD_ID and
            // discard the bundle that had the id.
            return self.discard_with(id, B::BadId);
        }
        if self.open.len() >= bounds.max_open {
            return Err(B::OutOfBundles);
        }
        self.open.insert(id, Bundle::new(flags, now_ns, xid, frame));
        Ok(())
    }

    pub(crate) fn close(&mut self, id: u32, flags: u16, now_ns: u64) -> Result<(), B> {
        let Some(b) = self.open.get_mut(&id) else {
            return Err(B::BadId);
        };
        if b.closed {
            return self.discard_with(id, B::BundleClosed);
        }
        if b.flags != flags {
            return self.discard_with(id, B::BadFlags);
        }
        b.closed = true;
        b.used_ns = now_ns;
        Ok(())
    }

    pub(crate) fn discard(&mut self, id: u32) -> Result<(), B> {
        self.take(id).map(drop).ok_or(B::BadId)
    }

    /// Adds `msg` (a whole message, already checked) to bundle `id`,
    /// opening it if unknown. `frame` is the add message (the origin of a
    /// bundle it opens).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        id: u32,
        flags: u16,
        msg: &[u8],
        now_ns: u64,
        xid: u32,
        frame: &[u8],
        bounds: &Bounds,
    ) -> Result<(), B> {
        match self.open.get(&id) {
            Some(b) if b.closed => return self.discard_with(id, B::BundleClosed),
            Some(b) if b.flags != flags => return self.discard_with(id, B::BadFlags),
            Some(_) => {}
            None if flags & !bundle_flags::ALL != 0 => return Err(B::BadFlags),
            None if self.open.len() >= bounds.max_open => return Err(B::OutOfBundles),
            None => {}
        }
        if self.messages >= bounds.max_messages || self.bytes + msg.len() > bounds.max_bytes {
            return Err(B::MsgTooMany);
        }
        let b = self
            .open
            .entry(id)
            .or_insert_with(|| Bundle::new(flags, now_ns, xid, frame));
        b.push(msg);
        b.used_ns = now_ns;
        self.messages += 1;
        self.bytes += msg.len();
        Ok(())
    }

    /// When the first of these bundles will have been idle `idle_ns`.
    pub(crate) fn next_idle_deadline(&self, idle_ns: u64) -> Option<u64> {
        self.open
            .values()
            .map(|b| b.used_ns.saturating_add(idle_ns))
            .min()
    }

    /// Takes out the bundles idle for `idle_ns` or more at `now_ns`: the
    /// xid and data of each one's timeout error.
    pub(crate) fn expire(&mut self, now_ns: u64, idle_ns: u64) -> Vec<(u32, Bytes)> {
        let old: Vec<u32> = self
            .open
            .iter()
            .filter(|(_, b)| now_ns.saturating_sub(b.used_ns) >= idle_ns)
            .map(|(id, _)| *id)
            .collect();
        old.into_iter()
            .filter_map(|id| self.take(id))
            .map(|b| (b.origin_xid, b.origin))
            .collect()
    }
}

/// Applies one bundled message of a connection of `version` to `p`: the
/// rules it removed, or its error.
fn apply(
    p: &mut Pipeline,
    msg: &Bytes,
    version: ofp::Version,
    now_ns: u64,
) -> Result<Vec<Removed>, ErrorCode> {
    let (_, m) = ofp::msg::bundle::decode_held(msg, version).map_err(|e| e.code)?;
    // Validated when added (Message::validate); decoding the same bytes
    // gives the same message.
    match m {
        Message::FlowMod(fm) => p.flow_mod_with_match(&fm, ofp::FlowMod::match_bytes(msg), now_ns),
        Message::GroupMod(gm) => p.group_mod(&gm, now_ns),
        Message::MeterMod(mm) => p.meter_mod(&mm, now_ns),
        _ => return Err(ErrorCode::bundle(B::MsgUnsup)),
    }
    .map_err(|e| e.code)
}

impl<D: Datapath> Agent<D> {
    /// An experimenter message of the ONF: a bundle message, or
    /// `OFPBRC_BAD_EXP_TYPE`.
    pub(crate) fn onf_message(
        &mut self,
        id: ConnId,
        xid: u32,
        e: &ExperimenterMsg,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        let Some(decoded) = BundleMsg::decode(e) else {
            return Err(ErrorCode::BadRequest(BadRequestCode::BadExpType));
        };
        if self.is_slave(id) {
            return Err(ErrorCode::BadRequest(BadRequestCode::IsSlave));
        }
        match decoded.map_err(|e| e.code)? {
            BundleMsg::Control(c) => self.bundle_control(id, xid, c, frame, now_ns),
            BundleMsg::Add(a) => self.bundle_add(id, xid, a, frame, now_ns),
        }
    }

    /// The connection's bounds, less what the other connections' bundles
    /// hold of the switch-wide ones (messages: `max_flows` in all; bytes:
    /// `max_total_bytes`). O(connections) per ADD: at most a few hundred.
    fn bundle_bounds(&self, id: ConnId) -> Bounds {
        let limits = self.conns[&id].config.bundles;
        let (mut msgs, mut bytes) = (0usize, 0usize);
        for (k, c) in &self.conns {
            if *k != id {
                msgs += c.bundles.messages();
                bytes += c.bundles.bytes();
            }
        }
        Bounds {
            max_open: limits.max_open,
            max_messages: self.pipeline.config.max_flows.saturating_sub(msgs),
            max_bytes: limits
                .max_bytes
                .min(limits.max_total_bytes.saturating_sub(bytes)),
        }
    }

    fn bundle_control(
        &mut self,
        id: ConnId,
        xid: u32,
        c: BundleCtrl,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        let Some(reply) = c.ctrl_type.reply() else {
            return Err(ErrorCode::bundle(B::BadType));
        };
        let bounds = self.bundle_bounds(id);
        let result = match c.ctrl_type {
            BundleCtrlType::CommitRequest => self.commit(id, c.bundle_id, c.flags, now_ns),
            t => {
                let Some(conn) = self.conns.get_mut(&id) else {
                    return Ok(());
                };
                let b = &mut conn.bundles;
                match t {
                    BundleCtrlType::OpenRequest => {
                        b.open(c.bundle_id, c.flags, now_ns, xid, frame, &bounds)
                    }
                    BundleCtrlType::CloseRequest => b.close(c.bundle_id, c.flags, now_ns),
                    _ => b.discard(c.bundle_id),
                }
            }
        };
        result.map_err(ErrorCode::bundle)?;
        let msg = BundleCtrl {
            ctrl_type: reply,
            properties: Bytes::new(),
            ..c
        }
        .message();
        self.send(id, &msg, xid);
        Ok(())
    }

    fn bundle_add(
        &mut self,
        id: ConnId,
        xid: u32,
        a: BundleAdd,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        let Some(h) = a.inner_header() else {
            return Err(ErrorCode::bundle(B::MsgBadLen));
        };
        if h.xid != xid {
            return Err(ErrorCode::bundle(B::MsgBadXid));
        }
        if !matches!(
            h.msg_type,
            MsgType::FlowMod | MsgType::GroupMod | MsgType::MeterMod
        ) {
            return Err(ErrorCode::bundle(B::MsgUnsup));
        }
        // Bundles are OpenFlow 1.3's (the ONF extension) and 1.4's and
        // 1.5's (native: their codec hands the added message over in its
        // 1.3 form, or as it came when that form cannot say it: 1.5's
        // bucket commands, ids and selection methods), so the message is
        // 1.3 bytes or the connection's, which `apply` reads at commit.
        // (OpenFlow 1.0 and 1.2 have none: `dispatch` refuses.)
        let version = self
            .conns
            .get(&id)
            .map_or(ofp::Version::V1_3, |c| c.version);
        let (_, inner) = ofp::msg::bundle::decode_held(&a.message, version).map_err(|e| e.code)?;
        inner.validate().map_err(|e| e.code)?;
        let message = a.message.clone();
        if let Message::FlowMod(fm) = &inner {
            let uses_buffer = matches!(
                fm.command,
                FlowModCommand::Add | FlowModCommand::Modify | FlowModCommand::ModifyStrict
            );
            if uses_buffer && fm.buffer_id != NO_BUFFER {
                return Err(ErrorCode::bundle(B::MsgUnsup));
            }
        }
        let bounds = self.bundle_bounds(id);
        let Some(conn) = self.conns.get_mut(&id) else {
            return Ok(());
        };
        conn.bundles
            .add(a.bundle_id, a.flags, &message, now_ns, xid, frame, &bounds)
            .map_err(ErrorCode::bundle)
    }

    /// Commits bundle `bundle_id` of connection `id` (see the module docs).
    fn commit(&mut self, id: ConnId, bundle_id: u32, flags: u16, now_ns: u64) -> Result<(), B> {
        let bundle = self
            .conns
            .get_mut(&id)
            .and_then(|c| c.bundles.take(bundle_id))
            .ok_or(B::BadId)?;
        if bundle.flags != flags {
            return Err(B::BadFlags);
        }
        if bundle.is_empty() {
            return Ok(());
        }
        let mut next = self.pipeline.clone();
        let mut removed = Vec::new();
        let version = self
            .conns
            .get(&id)
            .map_or(ofp::Version::V1_3, |c| c.version);
        for msg in bundle.into_messages() {
            match apply(&mut next, &msg, version, now_ns) {
                Ok(r) => removed.extend(r),
                Err(code) => {
                    let xid = ofp::Header::parse(&msg).map_or(0, |h| h.xid);
                    self.error(id, xid, code, &msg);
                    return Err(B::MsgFailed);
                }
            }
        }
        self.pipeline = next;
        self.dirty = true;
        self.flow_removed(&removed, now_ns);
        // A COMMIT_REPLY, like a BARRIER_REPLY, means the datapath runs it.
        self.publish();
        Ok(())
    }

    /// Discards every bundle idle past its connection's timeout, telling
    /// the connection (`OFPBFC_TIMEOUT`).
    pub(crate) fn expire_bundles(&mut self, now_ns: u64) {
        for c in self.conns.values_mut() {
            if c.bundles.is_empty() {
                continue;
            }
            for (xid, data) in c.bundles.expire(now_ns, c.config.bundles.idle_timeout_ns) {
                let code = ErrorCode::bundle(B::Timeout);
                c.send(&Message::Error(ErrorMsg { code, data }), xid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Bounds = Bounds {
        max_open: 2,
        max_messages: 3,
        max_bytes: 100,
    };

    fn msg(len: usize, xid: u32) -> Vec<u8> {
        let mut m = vec![0u8; len];
        m[0] = 4;
        m[1] = 14;
        m[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        m[4..8].copy_from_slice(&xid.to_be_bytes());
        m
    }

    #[test]
    fn bundles_account_for_what_they_hold_and_give_it_back() {
        let mut b = Bundles::default();
        b.open(1, 3, 0, 9, &[1, 2, 3], &BOUNDS).unwrap();
        b.add(1, 3, &msg(20, 10), 1, 10, &[], &BOUNDS).unwrap();
        b.add(2, 1, &msg(30, 11), 1, 11, &[], &BOUNDS).unwrap();
        assert_eq!((b.len(), b.messages(), b.bytes()), (2, 2, 50));
        // A third bundle: too many open.
        assert_eq!(b.open(3, 0, 0, 0, &[], &BOUNDS), Err(B::OutOfBundles));
        assert_eq!(
            b.add(3, 0, &msg(8, 1), 0, 1, &[], &BOUNDS),
            Err(B::OutOfBundles)
        );
        // Bytes past the bound, then messages past it.
        assert_eq!(
            b.add(1, 3, &msg(51, 12), 1, 12, &[], &BOUNDS),
            Err(B::MsgTooMany)
        );
        b.add(1, 3, &msg(50, 12), 1, 12, &[], &BOUNDS).unwrap();
        assert_eq!(
            b.add(2, 1, &msg(8, 13), 1, 13, &[], &BOUNDS),
            Err(B::MsgTooMany)
        );
        assert_eq!((b.messages(), b.bytes()), (3, 100));
        let one = b.take(1).unwrap();
        assert_eq!((b.messages(), b.bytes()), (1, 30));
        let xids: Vec<u32> = one
            .into_messages()
            .map(|m| u32::from_be_bytes([m[4], m[5], m[6], m[7]]))
            .collect();
        assert_eq!(xids, [10, 12]);
        b.discard(2).unwrap();
        assert_eq!((b.len(), b.messages(), b.bytes()), (0, 0, 0));
        assert_eq!(b.discard(2), Err(B::BadId));
    }

    #[test]
    fn misuse_of_an_id_or_its_flags_discards_the_bundle() {
        let mut b = Bundles::default();
        assert_eq!(b.open(1, 4, 0, 0, &[], &BOUNDS), Err(B::BadFlags));
        b.open(1, 1, 0, 0, &[], &BOUNDS).unwrap();
        b.add(1, 1, &msg(8, 1), 0, 1, &[], &BOUNDS).unwrap();
        assert_eq!(b.open(1, 1, 0, 0, &[], &BOUNDS), Err(B::BadId));
        assert!(b.get(1).is_none() && b.messages() == 0);
        b.open(1, 1, 0, 0, &[], &BOUNDS).unwrap();
        assert_eq!(
            b.add(1, 2, &msg(8, 1), 0, 1, &[], &BOUNDS),
            Err(B::BadFlags)
        );
        assert!(b.get(1).is_none());
        b.open(1, 1, 0, 0, &[], &BOUNDS).unwrap();
        assert_eq!(b.close(1, 0, 0), Err(B::BadFlags));
        assert!(b.get(1).is_none());
        assert_eq!(b.close(1, 1, 0), Err(B::BadId));
        b.open(1, 1, 0, 0, &[], &BOUNDS).unwrap();
        b.close(1, 1, 0).unwrap();
        assert_eq!(
            b.add(1, 1, &msg(8, 1), 0, 1, &[], &BOUNDS),
            Err(B::BundleClosed)
        );
        assert!(b.get(1).is_none());
        b.open(1, 1, 0, 0, &[], &BOUNDS).unwrap();
        b.close(1, 1, 0).unwrap();
        assert_eq!(b.close(1, 1, 0), Err(B::BundleClosed));
        assert!(b.is_empty());
        // An add with unknown flags opens nothing.
        assert_eq!(
            b.add(5, 8, &msg(8, 1), 0, 1, &[], &BOUNDS),
            Err(B::BadFlags)
        );
        assert!(b.is_empty());
    }

    #[test]
    fn large_bundles_are_kept_in_bounded_chunks_in_order() {
        let big = Bounds {
            max_open: 1,
            max_messages: 1_000_000,
            max_bytes: 1 << 30,
        };
        let mut b = Bundles::default();
        for i in 0..40_000u32 {
            b.add(7, 0, &msg(64 + (i as usize % 9) * 8, i), 0, i, &[], &big)
                .unwrap();
        }
        let bundle = b.take(7).unwrap();
        assert!(bundle.chunks.iter().all(|c| c.capacity() <= MAX_CHUNK));
        assert!(bundle.chunks.len() > 2);
        let xids: Vec<u32> = bundle
            .into_messages()
            .map(|m| u32::from_be_bytes([m[4], m[5], m[6], m[7]]))
            .collect();
        assert_eq!(xids, (0..40_000).collect::<Vec<_>>());
    }

    #[test]
    fn idle_bundles_expire_with_the_message_that_opened_them() {
        let mut b = Bundles::default();
        b.open(1, 0, 100, 42, &[7; 80], &BOUNDS).unwrap();
        b.add(2, 0, &msg(8, 43), 100, 43, &msg(24, 43), &BOUNDS)
            .unwrap();
        b.add(1, 0, &msg(8, 44), 500, 44, &[], &BOUNDS).unwrap();
        assert!(b.expire(599, 500).is_empty());
        let gone = b.expire(600, 500);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].0, 43);
        assert_eq!(&gone[0].1[..], &msg(24, 43)[..]);
        let gone = b.expire(1000, 500);
        assert_eq!(gone[0].0, 42);
        assert_eq!(gone[0].1.len(), 64, "the first 64 bytes");
        assert!(b.is_empty() && b.messages() == 0 && b.bytes() == 0);
    }
}
