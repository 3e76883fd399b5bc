//! Property tests of the ONF bundle messages: every control and add
//! message survives encode -> decode unchanged (as an OFPT_EXPERIMENTER
//! and as a bundle message), and no experimenter body makes the bundle
//! decoder panic or answer with anything but a length error.

mod common;

use bytes::Bytes;
use proptest::prelude::*;

use ofp::error::BundleFailedCode;
use ofp::msg::bundle::{
    BundleAdd, BundleCtrl, BundleCtrlType, BundleMsg, BUNDLE_ADD_MESSAGE, BUNDLE_CONTROL,
    ONF_EXPERIMENTER,
};
use ofp::msg::simple::ExperimenterMsg;
use ofp::{ErrorCode, Message};

fn bundle_msg() -> impl Strategy<Value = BundleMsg> {
    prop_oneof![
        (any::<u32>(), any::<u16>(), any::<u16>(), common::bytes8(3)).prop_map(
            |(bundle_id, t, flags, properties)| BundleMsg::Control(BundleCtrl {
                bundle_id,
                ctrl_type: BundleCtrlType::from(t % 10),
                flags,
                properties,
            })
        ),
        (
            any::<u32>(),
            any::<u16>(),
            common::message(),
            any::<u32>(),
            common::bytes_any(24),
        )
            .prop_map(|(bundle_id, flags, inner, xid, properties)| {
                BundleMsg::Add(BundleAdd {
                    properties,
                    ..BundleAdd::new(bundle_id, flags, &inner, xid)
                })
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn bundle_messages_round_trip(b in bundle_msg(), xid in any::<u32>()) {
        let m = b.message();
        let wire = m.to_bytes(xid);
        // Inner messages past 65 535 bytes are not the point here.
        prop_assume!(wire.len() <= 65_535);
        let (h, back) = Message::decode(&Bytes::from(wire.clone()))
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(h.xid, xid);
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.to_bytes(xid), wire);
        let Message::Experimenter(e) = back else { unreachable!() };
        let again = BundleMsg::decode(&e).expect("a bundle message").map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(again, b);
    }

    #[test]
    fn the_bundle_decoder_never_panics(add in any::<bool>(), data in common::bytes_any(80)) {
        let e = ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER,
            exp_type: if add { BUNDLE_ADD_MESSAGE } else { BUNDLE_CONTROL },
            data,
        };
        match BundleMsg::decode(&e).expect("a bundle message") {
            // What decodes encodes to something that decodes the same.
            Ok(b) => {
                let Message::Experimenter(e2) = b.message() else { unreachable!() };
                prop_assert_eq!(BundleMsg::decode(&e2).unwrap().unwrap(), b);
            }
            Err(err) => prop_assert!(
                err.code == ErrorCode::BAD_LEN
                    || err.code == ErrorCode::bundle(BundleFailedCode::MsgBadLen),
                "{err}"
            ),
        }
    }
}
