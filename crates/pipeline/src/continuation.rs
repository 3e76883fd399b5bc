//! Continuations: what `controller(pause)` freezes of a packet's walk, so
//! that NXT_RESUME can go on from the action after it (Open vSwitch's
//! "continuations", ovs-actions(7)). OVN's native DHCP, DNS and IPv6 RA
//! replies go through them: the controller reads the paused packet,
//! writes a register, and resumes it.
//!
//! What is frozen, innermost level first ([`Frame`]): the actions left in
//! the list that paused, then, level by level out to the pipeline's walk,
//! the actions left after each resubmit and the instructions left in each
//! flow (a goto_table among them is followed on resume); with them the
//! action set, the packet's metadata words (registers, packet mark,
//! connection tracking), `metadata` and its tunnel. The packet itself and
//! the fields the controller may change (registers, `metadata`,
//! `pkt_mark`) travel beside it in the NXT_PACKET_IN2 and come back in the
//! NXT_RESUME: those the controller sends win over the frozen ones.
//!
//! The bytes are sluice's own and opaque to the controller (as Open
//! vSwitch's are): nested properties after four bytes of padding (the
//! form `NXPINT_CONTINUATION` carries and controllers copy back),
//! beginning with this process's id, so a continuation from another
//! process (a restart) is refused as stale (`NXR_STALE`, as Open vSwitch
//! answers). Decoding refuses anything it did not write
//! (`OFPBRC_BAD_LEN`) and checks each action as a flow's is checked on
//! its own (a controller holds the bytes and may change them).
//!
//! Absent: a pause inside a `clone`, a group bucket or the action set
//! (the packet is dropped and counted over the limits, and a trace says
//! why), and the push/pop stack (not frozen: empty on resume).

use bytes::{BufMut, Bytes};
use ofp::action::{decode_actions, encode_actions, Action};
use ofp::error::{BadRequestCode, ErrorCode};
use ofp::instruction::{decode_instructions, encode_instructions, Instruction};
use ofp::wire::Reader;
use packet::tunnel::TunnelMeta;

/// Open vSwitch's `NXR_STALE` (`OFPET_EXPERIMENTER`, Nicira, 35): the
/// continuation is from another process.
pub const NXR_STALE: ErrorCode = ErrorCode::Experimenter {
    exp_type: 35,
    experimenter: ofp::action::NX_VENDOR_ID,
};

/// One level of a frozen walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Actions left in a list, run in `table` with `cookie`.
    Actions {
        table: u8,
        cookie: u64,
        actions: Vec<Action>,
    },
    /// Instructions left in a flow of `table`.
    Instructions {
        table: u8,
        cookie: u64,
        instructions: Vec<Instruction>,
    },
}

/// A paused packet's walk (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Continuation {
    /// Innermost first.
    pub frames: Vec<Frame>,
    pub action_set: Vec<Action>,
    /// The key's metadata words (`packet::key::PACKET_WORDS` on).
    pub meta_words: Vec<u64>,
    pub metadata: u64,
    pub tun: TunnelMeta,
    /// How deep resubmits nested as Open vSwitch counts them, and how
    /// many had run.
    pub resubmit_depth: u32,
    pub resubmits: u32,
}

const ID: u16 = 0xa000;
const ACTIONS: u16 = 0xa001;
const INSTRUCTIONS: u16 = 0xa002;
const ACTION_SET: u16 = 0xa003;
const META: u16 = 0xa004;

/// This process's id (random, fixed for its life).
pub fn process_id() -> u128 {
    use std::hash::{BuildHasher, Hasher};
    static ID: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    *ID.get_or_init(|| {
        let s = std::collections::hash_map::RandomState::new();
        let mut a = s.build_hasher();
        a.write_u32(std::process::id());
        let mut b = s.build_hasher();
        b.write_u64(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        );
        ((a.finish() as u128) << 64) | b.finish() as u128
    })
}

fn put_prop(out: &mut Vec<u8>, ty: u16, value: &[u8]) {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16((4 + value.len()) as u16);
    out.extend_from_slice(value);
    out.resize(start + (out.len() - start).div_ceil(8) * 8, 0);
}

fn bad(why: &'static str) -> ofp::OfpError {
    ofp::OfpError::new(ErrorCode::BadRequest(BadRequestCode::BadLen), why)
}

impl Continuation {
    /// The bytes of `NXPINT_CONTINUATION`'s value.
    pub fn encode(&self) -> Bytes {
        let mut out = vec![0u8; 4];
        put_prop(&mut out, ID, &process_id().to_be_bytes());
        let mut m = Vec::new();
        m.put_u64(self.metadata);
        m.put_u64(self.tun.id);
        m.put_u32(self.tun.ipv4_src);
        m.put_u32(self.tun.ipv4_dst);
        m.put_u128(self.tun.ipv6_src);
        m.put_u128(self.tun.ipv6_dst);
        m.put_u32(self.resubmit_depth);
        m.put_u32(self.resubmits);
        for w in &self.meta_words {
            m.put_u64(*w);
        }
        put_prop(&mut out, META, &m);
        for f in &self.frames {
            let mut v = Vec::new();
            let (ty, table, cookie) = match f {
                Frame::Actions { table, cookie, .. } => (ACTIONS, table, cookie),
                Frame::Instructions { table, cookie, .. } => (INSTRUCTIONS, table, cookie),
            };
            v.put_u8(*table);
            v.extend_from_slice(&[0; 3]);
            v.put_u64(*cookie);
            match f {
                Frame::Actions { actions, .. } => encode_actions(actions, &mut v),
                Frame::Instructions { instructions, .. } => {
                    encode_instructions(instructions, &mut v)
                }
            }
            put_prop(&mut out, ty, &v);
        }
        let mut v = Vec::new();
        encode_actions(&self.action_set, &mut v);
        put_prop(&mut out, ACTION_SET, &v);
        out.into()
    }

    /// Reads what [`Continuation::encode`] wrote, in this process.
    pub fn decode(b: &[u8]) -> Result<Continuation, ofp::OfpError> {
        let mut b = b
            .get(4..)
            .ok_or_else(|| bad("continuation shorter than its padding"))?;
        let mut c = Continuation::default();
        let mut id_seen = false;
        while !b.is_empty() {
            if b.len() < 4 {
                return Err(bad("continuation property header cut"));
            }
            let ty = u16::from_be_bytes([b[0], b[1]]);
            let len = u16::from_be_bytes([b[2], b[3]]) as usize;
            let padded = len.div_ceil(8) * 8;
            if len < 4 || padded > b.len() {
                return Err(bad("continuation property length"));
            }
            let v = Bytes::copy_from_slice(&b[4..len]);
            b = &b[padded..];
            if !id_seen && ty != ID {
                return Err(bad("continuation without its process id first"));
            }
            match ty {
                ID => {
                    let id: [u8; 16] = v[..].try_into().map_err(|_| bad("continuation id"))?;
                    if u128::from_be_bytes(id) != process_id() {
                        return Err(ofp::OfpError::new(
                            NXR_STALE,
                            "continuation from another sluice process",
                        ));
                    }
                    id_seen = true;
                }
                META => {
                    let mut r = Reader::new(&v, ErrorCode::BadRequest(BadRequestCode::BadLen));
                    c.metadata = r.u64()?;
                    c.tun.id = r.u64()?;
                    c.tun.ipv4_src = r.u32()?;
                    c.tun.ipv4_dst = r.u32()?;
                    c.tun.ipv6_src = u128::from(r.u64()?) << 64 | u128::from(r.u64()?);
                    c.tun.ipv6_dst = u128::from(r.u64()?) << 64 | u128::from(r.u64()?);
                    c.resubmit_depth = r.u32()?;
                    c.resubmits = r.u32()?;
                    while !r.is_empty() {
                        c.meta_words.push(r.u64()?);
                    }
                }
                ACTIONS | INSTRUCTIONS => {
                    let mut r = Reader::new(&v, ErrorCode::BadRequest(BadRequestCode::BadLen));
                    let table = r.u8()?;
                    r.skip(3)?;
                    let cookie = r.u64()?;
                    c.frames.push(if ty == ACTIONS {
                        Frame::Actions {
                            table,
                            cookie,
                            actions: decode_actions(&mut r)?,
                        }
                    } else {
                        Frame::Instructions {
                            table,
                            cookie,
                            instructions: decode_instructions(&mut r)?,
                        }
                    });
                }
                ACTION_SET => {
                    let mut r = Reader::new(&v, ErrorCode::BadRequest(BadRequestCode::BadLen));
                    c.action_set = decode_actions(&mut r)?;
                }
                _ => return Err(bad("continuation property sluice does not write")),
            }
        }
        if !id_seen {
            return Err(bad("empty continuation"));
        }
        // What a controller could have changed is checked as a flow's
        // actions are, one by one: the walk runs it as it would a flow's.
        let lists = c.frames.iter().flat_map(|f| match f {
            Frame::Actions { actions, .. } => vec![actions],
            Frame::Instructions { instructions, .. } => instructions
                .iter()
                .filter_map(|i| match i {
                    Instruction::ApplyActions(a) | Instruction::WriteActions(a) => Some(a),
                    _ => None,
                })
                .collect(),
        });
        for a in lists.chain([&c.action_set]).flatten() {
            a.validate()?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continuation_round_trips_and_another_process_is_stale() {
        let c = Continuation {
            frames: vec![
                Frame::Actions {
                    table: 28,
                    cookie: 7,
                    actions: vec![Action::Resubmit(ofp::action::Resubmit::new(
                        ofp::port::port_no::IN_PORT,
                        29,
                    ))],
                },
                Frame::Instructions {
                    table: 8,
                    cookie: 1,
                    instructions: vec![Instruction::GotoTable(9)],
                },
            ],
            action_set: vec![Action::Output {
                port: 2,
                max_len: 0,
            }],
            meta_words: vec![1, 2, 3],
            metadata: 5,
            tun: TunnelMeta {
                id: 9,
                ipv4_src: 1,
                ipv4_dst: 2,
                ipv6_src: 3,
                ipv6_dst: 4,
            },
            resubmit_depth: 1,
            resubmits: 20,
        };
        let b = c.encode();
        assert_eq!(&b[..4], &[0; 4]);
        assert_eq!(Continuation::decode(&b).unwrap(), c);
        let mut other = b.to_vec();
        other[12] ^= 1; // the process id
        assert_eq!(Continuation::decode(&other).unwrap_err().code, NXR_STALE);
        assert!(Continuation::decode(&b[..b.len() - 8]).is_err());
        assert!(Continuation::decode(&[0, 0, 0, 0]).is_err());
        // Every byte changed, every cut: an answer, never a panic; what
        // decodes re-encodes to itself.
        for i in 0..b.len() {
            for x in [0u8, 1, 0x7f, 0xff] {
                let mut m = b.to_vec();
                m[i] = x;
                if let Ok(k) = Continuation::decode(&m) {
                    assert_eq!(Continuation::decode(&k.encode()).unwrap(), k);
                }
            }
            let _ = Continuation::decode(&b[..i]);
        }
    }
}
