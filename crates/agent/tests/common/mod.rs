//! What the agent's protocol tests share: reading back what it sent.

use agent::{Agent, ConnId, Datapath};
use bytes::Bytes;
use ofp::Message;

/// Every message in `out`, with its xid; each must be whole and decode.
pub fn decode_all(out: &[u8]) -> Vec<(u32, Message)> {
    let mut at = 0;
    let mut v = Vec::new();
    while at < out.len() {
        let len = u16::from_be_bytes([out[at + 2], out[at + 3]]) as usize;
        assert!(len >= 8 && at + len <= out.len(), "length {len} at {at}");
        let (h, m) = Message::decode(&Bytes::copy_from_slice(&out[at..at + len]))
            .expect("the agent sends valid messages");
        v.push((h.xid, m));
        at += len;
    }
    v
}

/// Everything the agent sent on `id` since the last call, decoded.
pub fn replies<D: Datapath>(a: &mut Agent<D>, id: ConnId) -> Vec<(u32, Message)> {
    decode_all(&std::mem::take(&mut a.conns.get_mut(&id).unwrap().outbox))
}
