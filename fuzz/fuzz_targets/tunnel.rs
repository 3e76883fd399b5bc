//! The VXLAN and Geneve header decoder (`packet::tunnel`) on any UDP
//! payload: it never panics, a decoded header never claims more bytes than
//! the payload has, and what it accepts re-encodes (for an option-less
//! header) to a header that decodes the same.
//!
//! Input: a protocol byte (even: VXLAN, odd: Geneve), then the payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packet::tunnel::{decode, Proto};

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
    }
});
