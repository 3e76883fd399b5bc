//! The other OpenFlow versions' translators (`ofp::of10`, `ofp::of1x`):
//! any frame, read as OpenFlow 1.0, 1.2, 1.4 or 1.5 (the first byte
//! picks which; the header's own version byte is set to match so that
//! most inputs get past the version check), must decode without
//! panicking; what decodes must encode as that version without panicking
//! into whole messages that decode again, and to the same message once
//! more (a translation may normalise, once).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ofp::{Message, Version};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let v = [Version::V1_0, Version::V1_2, Version::V1_4, Version::V1_5][pick as usize % 4];
    let mut frame = rest.to_vec();
    if frame.len() >= 8 {
        frame[0] = v.wire();
        let len = (frame.len().min(0xffff) as u16).to_be_bytes();
        frame[2..4].copy_from_slice(&len);
        frame.truncate(0xffff);
    }
    let Ok((h, m)) = Message::decode_as(&Bytes::from(frame), v) else {
        return;
    };
    let _ = m.validate();
    let mut wire = Vec::new();
    if m.encode_as(v, h.xid, &mut wire).is_err() {
        return;
    }
    // One or more whole messages: each decodes.
    let mut again = Vec::new();
    let mut at = 0;
    while at < wire.len() {
        let len = u16::from_be_bytes([wire[at + 2], wire[at + 3]]) as usize;
        assert!(len >= 8 && at + len <= wire.len(), "whole messages");
        let part = Bytes::copy_from_slice(&wire[at..at + len]);
        let (_, m2) = Message::decode_as(&part, v).expect("what we encode decodes");
        again.push(m2);
        at += len;
    }
    // Stable after one translation.
    if let [m2] = &again[..] {
        let mut wire2 = Vec::new();
        m2.encode_as(v, h.xid, &mut wire2).expect("encodes again");
        let (_, m3) = Message::decode_as(&Bytes::from(wire2), v).expect("decodes again");
        assert_eq!(&m3, m2, "stable");
    }
});
