//! What the switch is: show (features, ports and configuration) and
//! dump-desc (manufacturer, hardware, software, serial number, datapath).
//!
//! Contract: these take no arguments but the switch; each reply is printed
//! with the xid of the request it answers, as ovs-ofctl prints it.

use ofp::msg::multipart::{MultipartReplyBody as R, MultipartRequestBody as Q};
use ofp::Message;

use super::port_table::port_descs;
use super::Result;
use crate::client::{Client, ClientError};
use crate::print;

/// show: FEATURES_REPLY, the port descriptions and GET_CONFIG_REPLY.
pub(super) fn show(c: &mut Client) -> Result<String> {
    let Message::FeaturesReply(f) = c.request(&Message::FeaturesRequest)? else {
        return Err(ClientError::Unexpected("not a FEATURES_REPLY".into()).into());
    };
    let features_xid = c.last_xid();
    let ports = port_descs(c)?;
    let ports_xid = c.last_xid();
    let Message::GetConfigReply(cfg) = c.request(&Message::GetConfigRequest)? else {
        return Err(ClientError::Unexpected("not a GET_CONFIG_REPLY".into()).into());
    };
    Ok(print::features(
        &f,
        &ports,
        &cfg,
        [features_xid, ports_xid, c.last_xid()],
    ))
}

/// dump-desc: the switch's description.
pub(super) fn dump_desc(c: &mut Client) -> Result<String> {
    let parts = c.multipart(Q::Desc)?;
    let mut s = print::header("OFPST_DESC reply", c.last_xid());
    s.push('\n');
    for part in parts {
        if let R::Desc(d) = part.body {
            s.push_str(&format!(
                "Manufacturer: {}\nHardware: {}\nSoftware: {}\nSerial Num: {}\nDP Description: {}\n",
                d.mfr_desc.as_str(),
                d.hw_desc.as_str(),
                d.sw_desc.as_str(),
                d.serial_num.as_str(),
                d.dp_desc.as_str()
            ));
        }
    }
    Ok(s)
}
