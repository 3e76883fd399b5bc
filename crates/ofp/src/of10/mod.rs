//! OpenFlow 1.0 onto the 1.3-shaped [`Message`].

use bytes::Bytes;

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::header::Header;
use crate::msg::{check_frame, Message, TooLong};

/// Decodes a whole OpenFlow 1.0 frame.
pub fn decode(frame: &Bytes) -> Result<(Header, Message)> {
    let _h = check_frame(frame, 1)?;
    Err(OfpError::new(
        ErrorCode::BadRequest(BadRequestCode::BadVersion),
        "OpenFlow 1.0 is not decoded yet",
    ))
}

/// Appends `msg` as OpenFlow 1.0 writes it.
pub fn encode(msg: &Message, xid: u32, out: &mut Vec<u8>) -> std::result::Result<(), TooLong> {
    let start = out.len();
    msg.try_encode(xid, out)?;
    if !matches!(msg, Message::Hello(_)) {
        out[start] = 1;
    }
    Ok(())
}
