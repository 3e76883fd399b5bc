//! Framer + decoder: any byte stream must frame and decode without panicking,
//! rejections carry at most 64 bytes, and whatever decodes re-encodes to
//! bytes that decode to the same message. An ONF bundle message or a
//! Nicira one (experimenter messages) is also read by its own decoder
//! (`msg::bundle`, `msg::nxt`): no panic, and what it reads encodes to a
//! message it reads the same. The input is also read as a continuation
//! (what NXT_RESUME brings back) after this process's id, which a
//! controller copies and the fuzzer could not guess: no panic, and what
//! decodes re-encodes to the same continuation.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ofp::msg::bundle::BundleMsg;
use ofp::msg::nxt::NxtMsg;
use ofp::{Framer, Message};

fuzz_target!(|data: &[u8]| {
    let mut c = vec![0u8; 4];
    c.extend_from_slice(&[0xa0, 0x00, 0x00, 20]);
    c.extend_from_slice(&pipeline::continuation::process_id().to_be_bytes());
    c.extend_from_slice(&[0; 4]);
    c.extend_from_slice(data);
    if let Ok(k) = pipeline::continuation::Continuation::decode(&c) {
        let again = pipeline::continuation::Continuation::decode(&k.encode()).expect("re-encoded continuation decodes");
        assert_eq!(again, k);
    }
    let mut f = Framer::new();
    // Feed in two pieces to exercise partial frames.
    let cut = data.first().map_or(0, |&b| b as usize % (data.len() + 1));
    f.push(&data[..cut]);
    let mut seen = Vec::new();
    while let Some(r) = f.next_message() {
        seen.push(r);
    }
    f.push(&data[cut..]);
    while let Some(r) = f.next_message() {
        seen.push(r);
    }
    for r in seen {
        match r {
            Ok((h, m)) => {
                let wire = m.to_bytes(h.xid);
                let (h2, m2) = Message::decode(&Bytes::from(wire.clone())).expect("re-encoded message decodes");
                assert_eq!(h2.xid, h.xid);
                assert_eq!(m2.to_bytes(h.xid), wire, "encoding is stable");
                let _ = m.validate();
                if let Message::Experimenter(e) = &m {
                    if let Some(Ok(b)) = BundleMsg::decode(e) {
                        let Message::Experimenter(e2) = b.message() else { unreachable!() };
                        assert_eq!(BundleMsg::decode(&e2).expect("a bundle message").expect("decodes"), b);
                    }
                    if let Some(Ok(n)) = NxtMsg::decode(e) {
                        let Message::Experimenter(e2) = n.message() else { unreachable!() };
                        assert_eq!(NxtMsg::decode(&e2).expect("a Nicira message").expect("decodes"), n);
                    }
                }
            }
            Err(rej) => assert!(rej.data.len() <= 64),
        }
    }
});
