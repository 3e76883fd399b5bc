//! Text parsers: any string must parse or fail with an error, never panic;
//! whatever parses prints to text that parses back to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ofp::text::*;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(fm) = parse_flow_mod(s) {
        let t = format_flow_mod(&fm);
        let back = parse_flow_mod(&t).expect("printed flow parses");
        assert_eq!(format_flow_mod(&back), t, "printing is stable");
        let wire = ofp::Message::FlowMod(fm).to_bytes(1);
        ofp::Message::decode(&bytes::Bytes::from(wire)).expect("parsed flow encodes to a valid message");
    }
    if let Ok(g) = parse_group_mod(s) {
        let t = format_group_mod(&g);
        assert_eq!(format_group_mod(&parse_group_mod(&t).expect("printed group parses")), t);
    }
    if let Ok(m) = parse_meter_mod(s) {
        let t = format_meter_mod(&m);
        assert_eq!(format_meter_mod(&parse_meter_mod(&t).expect("printed meter parses")), t);
    }
    let _ = parse_match(s);
});
