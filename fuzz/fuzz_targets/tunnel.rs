//! The VXLAN and Geneve header decoder (`packet::tunnel`) on any UDP
//! payload, and the Geneve options it counts read into the flow key
//! (`pipeline::tlv::GeneveMap::read`): neither panics, a decoded header
//! never claims more bytes than the payload has, what the decoder accepts
//! re-encodes to a header that decodes the same, and options the map
//! accepts, written out again from the key, read back to the same fields.
//!
//! Input: a protocol byte (even: VXLAN, odd: Geneve), then the payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ofp::msg::tlv_table::{TlvCommand, TlvMap, TlvTableMod};
use packet::tunnel::{decode, Proto, HEADER_LEN};
use packet::FlowKey;
use pipeline::tlv::{GeneveMap, TlvTable};

fn map() -> GeneveMap {
    let mut t = TlvTable::default();
    let m = |class, ty, len, index| TlvMap {
        class,
        ty,
        len,
        index,
    };
    t.apply(
        &TlvTableMod {
            command: TlvCommand::Add,
            // OVN's option, an 8-byte one, and one the key does not hold.
            maps: vec![m(0x0102, 0x80, 4, 0), m(0xffff, 0x01, 8, 1), m(1, 0x81, 4, 5)],
        },
        0,
    )
    .expect("a valid table");
    GeneveMap::of(&t)
}

fuzz_target!(|data: &[u8]| {
    let Some((&p, payload)) = data.split_first() else {
        return;
    };
    let proto = if p & 1 == 0 { Proto::Vxlan } else { Proto::Geneve };
    if let Ok(d) = decode(proto, payload) {
        assert!(d.len <= payload.len());
        assert!(d.vni <= packet::tunnel::MAX_VNI);
        let again = decode(proto, &proto.header(d.vni)).expect("our own header decodes");
        assert_eq!(again.vni, d.vni);
        let opts = &payload[HEADER_LEN..d.len];
        let g = map();
        let mut key = FlowKey::default();
        if g.read(opts, &mut key).is_ok() {
            let out = g.write(&key).unwrap_or_default();
            assert!(out.len() <= packet::tunnel::MAX_OPTIONS);
            let mut back = FlowKey::default();
            g.read(&out, &mut back).expect("our own options read");
            assert_eq!(back, key);
        }
    }
});
