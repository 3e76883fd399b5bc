//! The compiled classifier against a linear scan of the same rules, over
//! matches decoded from any OXM bytes the wire could carry (masks, every
//! field, prerequisites) and any sequence of inserts, removals and lookups.
//! Both must pick the same rule every time: highest priority, ties to the
//! lowest id. Packets are the rules' own values (so lookups hit), the same
//! with bits flipped, and keys extracted from arbitrary frames.
//!
//! Input: a list of operations, each an opcode byte and its arguments.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use packet::FlowKey;
use pipeline::{compile, Classifier, MaskedKey, RuleId};

fn linear(rules: &[(RuleId, MaskedKey, u16)], k: &FlowKey) -> Option<RuleId> {
    rules
        .iter()
        .filter(|(_, m, _)| m.matches(k))
        .max_by(|a, b| a.2.cmp(&b.2).then(b.0.cmp(&a.0)))
        .map(|r| r.0)
}

fuzz_target!(|data: &[u8]| {
    let mut c: Classifier = Classifier::new();
    let mut rules: Vec<(RuleId, MaskedKey, u16)> = Vec::new();
    let mut next: RuleId = 0;
    let mut d = data;
    let mut probes: Vec<FlowKey> = Vec::new();
    while let Some((&op, rest)) = d.split_first() {
        d = rest;
        match op % 4 {
            0 => {
                // A match in OXM TLVs: 1 length byte, then that many bytes.
                let Some((&n, rest)) = d.split_first() else { break };
                let n = (n as usize).min(rest.len());
                let (tlvs, rest) = rest.split_at(n);
                d = rest;
                let mut wire = vec![0, 1, 0, 0];
                let len = (4 + tlvs.len()) as u16;
                wire[2..4].copy_from_slice(&len.to_be_bytes());
                wire.extend_from_slice(tlvs);
                wire.resize(wire.len().div_ceil(8) * 8, 0);
                let b = Bytes::from(wire);
                let mut r = ofp::wire::Reader::new(&b, ofp::ErrorCode::BadMatch(ofp::error::BadMatchCode::BadLen));
                let Ok(m) = ofp::Match::decode(&mut r) else { continue };
                let Ok(key) = compile(&m) else { continue };
                let prio = (op >> 2) as u16 % 4;
                c.insert(next, &key, prio);
                probes.push(key.value);
                rules.push((next, key, prio));
                next += 1;
            }
            1 if !rules.is_empty() => {
                let (id, key, prio) = rules.remove((op >> 2) as usize % rules.len());
                assert!(c.remove(id, &key, prio));
                assert!(!c.remove(id, &key, prio), "removed twice");
            }
            2 => {
                // A frame's key.
                let Some((&n, rest)) = d.split_first() else { break };
                let n = (n as usize).min(rest.len());
                let (frame, rest) = rest.split_at(n);
                d = rest;
                let mut k = FlowKey::default();
                packet::extract(frame, 1 + (op >> 2) as u32 % 3, &mut k);
                probes.push(k);
            }
            _ => {
                // A probe with one bit flipped.
                if let (Some(p), Some((&bit, rest))) = (probes.last().copied(), d.split_first()) {
                    d = rest;
                    let mut p = p;
                    let w = bit as usize % p.w.len();
                    p.w[w] ^= 1u64 << (op >> 2);
                    probes.push(p);
                }
            }
        }
        assert_eq!(c.len(), rules.len());
        for k in probes.iter().rev().take(8) {
            assert_eq!(c.lookup(k), linear(&rules, k));
        }
    }
});
