//! OpenFlow 1.2, 1.4 and 1.5 onto the 1.3-shaped [`Message`].
//!
//! Most messages of these versions are laid out as in 1.3 and go through
//! the 1.3 codec with the header's version byte changed; this module
//! translates the ones that differ.

use bytes::Bytes;

use crate::error::{ErrorCode, Result};
use crate::header::{Header, HEADER_LEN};
use crate::msg::{check_frame, decode_body, Message, TooLong};
use crate::wire::Reader;
use crate::Version;

/// Decodes a whole frame of `version` (1.2, 1.4 or 1.5).
pub fn decode(frame: &Bytes, version: Version) -> Result<(Header, Message)> {
    let h = check_frame(frame, version.wire())?;
    let mut r = Reader::new(frame, ErrorCode::BAD_LEN);
    r.skip(HEADER_LEN)?;
    let m = decode_body(&h, &mut r)?;
    r.finish(ErrorCode::BAD_LEN)?;
    Ok((h, m))
}

/// Appends `msg` as `version` (1.2, 1.4 or 1.5) writes it.
pub fn encode(
    msg: &Message,
    version: Version,
    xid: u32,
    out: &mut Vec<u8>,
) -> std::result::Result<(), TooLong> {
    let start = out.len();
    msg.try_encode(xid, out)?;
    if !matches!(msg, Message::Hello(_)) {
        out[start] = version.wire();
    }
    Ok(())
}
