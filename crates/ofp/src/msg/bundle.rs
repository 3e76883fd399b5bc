//! Bundles for OpenFlow 1.3 peers: the ONF extension that carries
//! OpenFlow 1.4's OFPT_BUNDLE_CONTROL and OFPT_BUNDLE_ADD_MESSAGE as
//! experimenter messages of [`ONF_EXPERIMENTER`], as Open vSwitch offers
//! them (`ovs-ofctl -O OpenFlow13 --bundle`).
//!
//! After the 16-byte experimenter header (`ofp_header`, experimenter,
//! exp_type):
//!
//! * `BUNDLE_CONTROL` (exp_type 2300): `bundle_id` (u32), `type` (u16, a
//!   [`BundleCtrlType`]), `flags` (u16, [`bundle_flags`]), then properties
//!   (a whole number of 8-byte units, kept as bytes).
//! * `BUNDLE_ADD_MESSAGE` (exp_type 2301): `bundle_id` (u32), two unused
//!   bytes (the control message's `type`), `flags` (u16), then one whole
//!   OpenFlow message whose own header gives its length (its xid must be
//!   the outer one), then, only when properties follow, zero padding to a
//!   multiple of 8 and the properties (kept as bytes).
//!
//! Decoding checks structure only: a body too short for its fixed part,
//! or control properties that are not a multiple of 8 bytes, are
//! `OFPBRC_BAD_LEN`; an inner message shorter than a header, or whose
//! length field is below 8 or past the end, is `OFPBFC_MSG_BAD_LEN`.
//! What the inner message is, and whether it may be bundled, is the
//! switch's business (the agent's bundle module).
//!
//! Checked against Open vSwitch: `struct ofp14_bundle_ctrl_msg` and the
//! type and flag values in include/openflow/openflow-1.4.h, the
//! ONFT13_BUNDLE_CONTROL / ONFT13_BUNDLE_ADD_MESSAGE numbers (2300, 2301)
//! and their decoding in lib/ofp-bundle.c, the error numbers in
//! lib/ofp-errors.h, and by `ovs-ofctl ofp-print` reading bytes this
//! module writes (the golden test below holds them).

use bytes::{BufMut, Bytes};

use crate::error::{BundleFailedCode, ErrorCode, OfpError, Result};
use crate::header::{Header, HEADER_LEN};
use crate::macros::wire_enum;
use crate::msg::simple::ExperimenterMsg;
use crate::msg::Message;
use crate::wire::{pad8, zeros, Reader};

pub use crate::error::ONF_EXPERIMENTER;

/// exp_type of a bundle control message.
pub const BUNDLE_CONTROL: u32 = 2300;
/// exp_type of a bundle add message.
pub const BUNDLE_ADD_MESSAGE: u32 = 2301;

wire_enum! {
    /// `ofp14_bundle_ctrl_type`.
    pub enum BundleCtrlType: u16 {
        OpenRequest = 0 => "OPEN_REQUEST",
        OpenReply = 1 => "OPEN_REPLY",
        CloseRequest = 2 => "CLOSE_REQUEST",
        CloseReply = 3 => "CLOSE_REPLY",
        CommitRequest = 4 => "COMMIT_REQUEST",
        CommitReply = 5 => "COMMIT_REPLY",
        DiscardRequest = 6 => "DISCARD_REQUEST",
        DiscardReply = 7 => "DISCARD_REPLY",
    }
}

impl BundleCtrlType {
    /// The reply to this request (None: not a request).
    pub fn reply(self) -> Option<BundleCtrlType> {
        use BundleCtrlType as T;
        match self {
            T::OpenRequest => Some(T::OpenReply),
            T::CloseRequest => Some(T::CloseReply),
            T::CommitRequest => Some(T::CommitReply),
            T::DiscardRequest => Some(T::DiscardReply),
            _ => None,
        }
    }
}

/// `ofp14_bundle_flags`.
pub mod bundle_flags {
    /// Apply all of the bundle or none of it.
    pub const ATOMIC: u16 = 1 << 0;
    /// Apply the messages in the order they were added.
    pub const ORDERED: u16 = 1 << 1;
    /// Every flag defined.
    pub const ALL: u16 = ATOMIC | ORDERED;
}

/// A bundle control message (request or reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleCtrl {
    pub bundle_id: u32,
    pub ctrl_type: BundleCtrlType,
    pub flags: u16,
    /// Bundle properties, as received (a multiple of 8 bytes).
    pub properties: Bytes,
}

/// A bundle add message: one OpenFlow message for a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleAdd {
    pub bundle_id: u32,
    pub flags: u16,
    /// The whole inner message, header included.
    pub message: Bytes,
    /// Bundle properties after the padding, as received.
    pub properties: Bytes,
}

impl BundleAdd {
    /// The inner message's header (the decoder guarantees there is one).
    pub fn inner_header(&self) -> Option<Header> {
        Header::parse(&self.message)
    }
}

/// Decodes a bundled message as it is held: in its 1.3 form (what the
/// ONF extension carries, and what OpenFlow 1.4 and 1.5 bundles are
/// turned into on arrival), or, for what that form cannot say (OpenFlow
/// 1.5's INSERT_BUCKET, REMOVE_BUCKET, bucket ids, selection methods:
/// [`crate::msg::group::GroupMod::fits_1_3`]), in the version it came in,
/// which its header names. Another version than 1.3 and `peer` is
/// `OFPBRC_BAD_VERSION`.
pub fn decode_held(msg: &Bytes, peer: crate::Version) -> Result<(Header, Message)> {
    match msg.first().copied().and_then(crate::Version::from_wire) {
        Some(v) if v != crate::Version::V1_3 && v == peer => Message::decode_as(msg, v),
        _ => Message::decode(msg),
    }
}

/// A message of the ONF bundle extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleMsg {
    Control(BundleCtrl),
    Add(BundleAdd),
}

fn bad_len(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BAD_LEN, why)
}

fn msg_bad_len(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::bundle(BundleFailedCode::MsgBadLen), why)
}

impl BundleMsg {
    /// Whether `e` is a bundle message (ONF, exp_type 2300 or 2301).
    pub fn is_bundle(e: &ExperimenterMsg) -> bool {
        e.experimenter == ONF_EXPERIMENTER
            && (e.exp_type == BUNDLE_CONTROL || e.exp_type == BUNDLE_ADD_MESSAGE)
    }

    /// Reads a bundle message from an experimenter message: None when it is
    /// not one, else the message or the error to answer.
    pub fn decode(e: &ExperimenterMsg) -> Option<Result<BundleMsg>> {
        if !Self::is_bundle(e) {
            return None;
        }
        let mut r = Reader::new(&e.data, ErrorCode::BAD_LEN);
        Some(if e.exp_type == BUNDLE_CONTROL {
            Self::decode_control(&mut r)
        } else {
            Self::decode_add(&mut r)
        })
    }

    fn decode_control(r: &mut Reader<'_>) -> Result<BundleMsg> {
        if r.remaining() < 8 {
            return Err(bad_len("bundle control shorter than its 8-byte body"));
        }
        let bundle_id = r.u32()?;
        let ctrl_type = BundleCtrlType::from(r.u16()?);
        let flags = r.u16()?;
        if !r.remaining().is_multiple_of(8) {
            return Err(bad_len(
                "bundle control properties not a multiple of 8 bytes",
            ));
        }
        Ok(BundleMsg::Control(BundleCtrl {
            bundle_id,
            ctrl_type,
            flags,
            properties: r.rest(),
        }))
    }

    fn decode_add(r: &mut Reader<'_>) -> Result<BundleMsg> {
        if r.remaining() < 8 {
            return Err(bad_len("bundle add shorter than its 8-byte body"));
        }
        let bundle_id = r.u32()?;
        r.skip(2)?;
        let flags = r.u16()?;
        if r.remaining() < HEADER_LEN {
            return Err(msg_bad_len("bundle add without a whole inner header"));
        }
        let len = r.peek_u16(2)? as usize;
        if len < HEADER_LEN || len > r.remaining() {
            return Err(msg_bad_len("inner message length inconsistent"));
        }
        let message = r.bytes(len)?;
        let rest = r.rest();
        let properties = if rest.is_empty() {
            rest
        } else {
            let pad = pad8(len) - len;
            if rest.len() < pad {
                return Err(bad_len(
                    "bytes after the inner message shorter than its padding",
                ));
            }
            rest.slice(pad..)
        };
        Ok(BundleMsg::Add(BundleAdd {
            bundle_id,
            flags,
            message,
            properties,
        }))
    }

    /// The message as an OFPT_EXPERIMENTER.
    pub fn message(&self) -> Message {
        let mut data = Vec::new();
        let exp_type = match self {
            BundleMsg::Control(c) => {
                data.put_u32(c.bundle_id);
                data.put_u16(c.ctrl_type.value());
                data.put_u16(c.flags);
                data.extend_from_slice(&c.properties);
                BUNDLE_CONTROL
            }
            BundleMsg::Add(a) => {
                data.put_u32(a.bundle_id);
                zeros(&mut data, 2);
                data.put_u16(a.flags);
                data.extend_from_slice(&a.message);
                if !a.properties.is_empty() {
                    zeros(&mut data, pad8(a.message.len()) - a.message.len());
                    data.extend_from_slice(&a.properties);
                }
                BUNDLE_ADD_MESSAGE
            }
        };
        Message::Experimenter(ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER,
            exp_type,
            data: data.into(),
        })
    }
}

impl BundleCtrl {
    /// The control message as an OFPT_EXPERIMENTER.
    pub fn message(&self) -> Message {
        BundleMsg::Control(self.clone()).message()
    }
}

impl BundleAdd {
    /// `inner` (encoded with `xid`, the xid the add message must carry
    /// too) for bundle `bundle_id`.
    pub fn new(bundle_id: u32, flags: u16, inner: &Message, xid: u32) -> BundleAdd {
        BundleAdd {
            bundle_id,
            flags,
            message: inner.to_bytes(xid).into(),
            properties: Bytes::new(),
        }
    }

    /// The add message as an OFPT_EXPERIMENTER.
    pub fn message(&self) -> Message {
        BundleMsg::Add(self.clone()).message()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    fn experimenter(wire: &[u8]) -> ExperimenterMsg {
        let (_, m) = Message::decode(&Bytes::copy_from_slice(wire)).unwrap();
        match m {
            Message::Experimenter(e) => e,
            other => panic!("{other:?}"),
        }
    }

    /// Bytes `ovs-ofctl ofp-print` (Open vSwitch 3.1) reads as
    /// "ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x5): bundle_id=0x7
    /// type=OPEN_REQUEST flags=atomic ordered", "ONFT_BUNDLE_ADD_MESSAGE
    /// (OF1.3) (xid=0x5): bundle_id=0x7 flags=atomic ordered
    /// OFPT_FLOW_MOD (OF1.3) (xid=0x5): ADD priority=1 actions=drop" and "OFPT_ERROR (OF1.3)
    /// (xid=0x5): OFPBFC_MSG_FAILED".
    #[test]
    fn golden_bytes_as_open_vswitch_reads_them() {
        let open = hex("04 04 00 18 00 00 00 05 4f 4e 46 00 00 00 08 fc 00 00 00 07 00 00 00 03");
        let ctrl = BundleCtrl {
            bundle_id: 7,
            ctrl_type: BundleCtrlType::OpenRequest,
            flags: bundle_flags::ALL,
            properties: Bytes::new(),
        };
        assert_eq!(ctrl.message().to_bytes(5), open);
        assert_eq!(
            BundleMsg::decode(&experimenter(&open)).unwrap().unwrap(),
            BundleMsg::Control(ctrl)
        );

        // The inner message: FLOW_MOD "priority=1,actions=drop", xid 5.
        let add = hex(
            "04 04 00 50 00 00 00 05 4f 4e 46 00 00 00 08 fd 00 00 00 07 00 00 00 03 \
             04 0e 00 38 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
             00 00 00 00 00 00 00 01 ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 00 \
             00 01 00 04 00 00 00 00",
        );
        let fm = crate::text::parse_flow_mod("priority=1,actions=drop").unwrap();
        let a = BundleAdd::new(7, bundle_flags::ALL, &Message::FlowMod(fm), 5);
        let got = a.message().to_bytes(5);
        assert_eq!(got, add, "{got:02x?}");
        assert_eq!(
            BundleMsg::decode(&experimenter(&add)).unwrap().unwrap(),
            BundleMsg::Add(a.clone())
        );
        assert_eq!(a.inner_header().unwrap().xid, 5);

        let err = hex("04 01 00 14 00 00 00 05 ff ff 09 09 4f 4e 46 00 04 14 00 08");
        let (_, m) = Message::decode(&Bytes::from(err.clone())).unwrap();
        let Message::Error(e) = &m else {
            panic!("{m:?}")
        };
        assert_eq!(e.code, ErrorCode::bundle(BundleFailedCode::MsgFailed));
        assert_eq!(m.to_bytes(5), err);
    }

    #[test]
    fn properties_follow_the_inner_message_padded_to_8() {
        let a = BundleAdd {
            bundle_id: 1,
            flags: 0,
            message: Message::EchoRequest(Bytes::from_static(b"abc"))
                .to_bytes(9)
                .into(),
            properties: Bytes::from_static(&[0xff, 0xff, 0, 8, 0, 0, 0, 1]),
        };
        let Message::Experimenter(e) = a.message() else {
            unreachable!()
        };
        // 8 bytes of body, 11 of message, 5 of padding, 8 of property.
        assert_eq!(e.data.len(), 8 + 11 + 5 + 8);
        assert_eq!(&e.data[19..24], &[0; 5]);
        assert_eq!(
            BundleMsg::decode(&e).unwrap().unwrap(),
            BundleMsg::Add(a.clone())
        );
        // Padding alone (no property) is taken and means no properties.
        let mut data = e.data[..24].to_vec();
        let padded = ExperimenterMsg {
            data: Bytes::from(std::mem::take(&mut data)),
            ..e.clone()
        };
        let Some(Ok(BundleMsg::Add(b))) = BundleMsg::decode(&padded) else {
            panic!()
        };
        assert!(b.properties.is_empty());
        assert_eq!(b.message, a.message);
    }

    #[test]
    fn short_and_inconsistent_bodies_are_refused_with_the_right_code() {
        let ctl = |data: &[u8]| ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER,
            exp_type: BUNDLE_CONTROL,
            data: Bytes::copy_from_slice(data),
        };
        let add = |data: &[u8]| ExperimenterMsg {
            exp_type: BUNDLE_ADD_MESSAGE,
            ..ctl(data)
        };
        let code = |e: &ExperimenterMsg| BundleMsg::decode(e).unwrap().unwrap_err().code;
        let msg_bad_len = ErrorCode::bundle(BundleFailedCode::MsgBadLen);
        assert_eq!(code(&ctl(&[0; 7])), ErrorCode::BAD_LEN);
        assert_eq!(code(&ctl(&[0; 12])), ErrorCode::BAD_LEN);
        assert!(BundleMsg::decode(&ctl(&[0; 16])).unwrap().is_ok());
        assert_eq!(code(&add(&[0; 7])), ErrorCode::BAD_LEN);
        // No inner header; a header whose length is below 8, or past the end.
        assert_eq!(code(&add(&[0; 12])), msg_bad_len);
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&[4, 20, 0, 7, 0, 0, 0, 0]);
        assert_eq!(code(&add(&b)), msg_bad_len);
        b[11] = 9;
        assert_eq!(code(&add(&b)), msg_bad_len);
        // Length 12 with 12 bytes, then 3 bytes: shorter than the 4 of padding.
        b[11] = 12;
        b.extend_from_slice(&[0; 7]);
        assert_eq!(code(&add(&b)), ErrorCode::BAD_LEN);
        b.push(0);
        assert!(BundleMsg::decode(&add(&b)).unwrap().is_ok());
        // Not a bundle message at all.
        assert!(BundleMsg::decode(&ExperimenterMsg {
            exp_type: 2302,
            ..ctl(&[])
        })
        .is_none());
        assert!(BundleMsg::decode(&ExperimenterMsg {
            experimenter: 0x2320,
            ..ctl(&[])
        })
        .is_none());
    }

    #[test]
    fn each_request_has_its_reply() {
        use BundleCtrlType as T;
        assert_eq!(T::OpenRequest.reply(), Some(T::OpenReply));
        assert_eq!(T::CommitRequest.reply(), Some(T::CommitReply));
        assert_eq!(T::CloseReply.reply(), None);
        assert_eq!(T::Unknown(8).reply(), None);
        for t in T::KNOWN {
            if let Some(r) = t.reply() {
                assert_eq!(r.value(), t.value() + 1);
            }
        }
    }
}
