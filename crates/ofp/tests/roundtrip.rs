//! Property tests: every message type and every OXM field survives
//! encode -> decode -> encode unchanged, and no byte string makes the
//! decoder panic.

mod common;

use bytes::Bytes;
use proptest::prelude::*;

use ofp::msg::Message;
use ofp::oxm::{Match, MatchEntry};
use ofp::wire::Reader;
use ofp::{ErrorCode, Framer, MsgType};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2048,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_encoded_message_is_as_long_as_its_length_field_or_refused(m in common::message(), xid in any::<u32>(), pad in 0usize..70_000) {
        // Some messages made longer than 65 535 bytes on purpose.
        let m = match m {
            Message::EchoRequest(_) => Message::EchoRequest(Bytes::from(vec![7u8; pad])),
            other => other,
        };
        match m.try_to_bytes(xid) {
            Ok(wire) => {
                prop_assert!(wire.len() <= 65_535);
                prop_assert_eq!(u16::from_be_bytes([wire[2], wire[3]]) as usize, wire.len());
            }
            Err(e) => {
                prop_assert!(e.len > 65_535);
                prop_assert_eq!(e.len, m.to_bytes(xid).len());
                let mut out = vec![1, 2, 3];
                prop_assert!(m.try_encode(xid, &mut out).is_err());
                prop_assert_eq!(out, vec![1, 2, 3], "nothing left behind");
            }
        }
    }

    #[test]
    fn every_message_round_trips(m in common::message(), xid in any::<u32>()) {
        let wire = m.to_bytes(xid);
        let frame = Bytes::from(wire.clone());
        let (h, back) = Message::decode(&frame).map_err(|e| TestCaseError::fail(format!("{e} for {m:?}")))?;
        prop_assert_eq!(h.xid, xid);
        prop_assert_eq!(h.length as usize, wire.len());
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.to_bytes(xid), wire);
    }

    #[test]
    fn every_oxm_field_round_trips(o in common::oxm()) {
        let m = Match { entries: vec![MatchEntry::Basic(o)] };
        let mut out = Vec::new();
        m.encode(&mut out);
        prop_assert_eq!(out.len() % 8, 0);
        prop_assert_eq!(out.len(), m.wire_len());
        let b = Bytes::from(out);
        let mut r = Reader::new(&b, ErrorCode::BAD_LEN);
        prop_assert_eq!(Match::decode(&mut r).unwrap(), m);
        prop_assert!(r.is_empty());
        // A single field on its own is valid unless it has prerequisites.
        if o.field.prerequisites().is_empty() && o.field != ofp::OxmField::VlanPcp {
            prop_assert!(o.validate().is_ok());
        }
    }

    #[test]
    fn decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut f = Framer::new();
        f.push(&bytes);
        while let Some(r) = f.next_message() {
            if let Err(rej) = r {
                prop_assert!(rej.data.len() <= 64);
                if rej.fatal { break; }
            }
        }
    }

    #[test]
    fn mutated_messages_decode_or_reject(m in common::message(), pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut wire = m.to_bytes(1);
        let i = pos.index(wire.len());
        if i != 2 && i != 3 {
            wire[i] = byte;
            let frame = Bytes::from(wire);
            // Either result is fine; reaching here without a panic is the property.
            if let Ok((_, back)) = Message::decode(&frame) {
                let again = back.to_bytes(1);
                prop_assert!(Message::decode(&Bytes::from(again)).is_ok());
            }
        }
    }
}

#[test]
fn every_message_type_is_generated() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut seen = std::collections::BTreeSet::new();
    let mut runner = TestRunner::deterministic();
    let s = common::message();
    for _ in 0..5000 {
        seen.insert(
            s.new_tree(&mut runner)
                .unwrap()
                .current()
                .msg_type()
                .value(),
        );
    }
    let all: std::collections::BTreeSet<u8> = MsgType::KNOWN.iter().map(|t| t.value()).collect();
    assert_eq!(seen, all);
}
