//! Management commands: sluice's COMMAND_REQUEST experimenter message
//! (`ofp::msg::sluice`), which changes the switch itself: `add-port`,
//! `del-port`, `fdb-show`, `fdb-flush`, `vlog`. The switch takes them only
//! on its management socket (`unix:` targets or a bridge name); elsewhere
//! it answers OFPBRC_EPERM.

use ofp::msg::sluice::{CommandReply, CommandRequest, COMMAND_REPLY, SLUICE_EXPERIMENTER};
use ofp::msg::Message;

use crate::client::{Client, ClientError};
use crate::commands::CmdError;

/// Sends `words` as one command; the switch's text, or its refusal.
pub fn command(c: &mut Client, words: Vec<String>) -> Result<String, CmdError> {
    let verb = words.first().cloned().unwrap_or_default();
    let req = CommandRequest { words };
    match c.request(&req.message()) {
        Ok(Message::Experimenter(e))
            if e.experimenter == SLUICE_EXPERIMENTER && e.exp_type == COMMAND_REPLY =>
        {
            let r = CommandReply::decode(&e.data)
                .map_err(|e| ClientError::Unexpected(e.detail.to_string()))?;
            if r.ok {
                Ok(r.text)
            } else {
                Err(CmdError::Refused(r.text.trim_end().to_string()))
            }
        }
        Ok(m) => Err(ClientError::Unexpected(format!("{:?}", m.msg_type())).into()),
        Err(ClientError::Refused(code)) => Err(CmdError::Refused(format!(
            "{verb}: the switch answered {code} ({verb} is a sluice extension, taken on the bridge's management socket only)"
        ))),
        Err(e) => Err(e.into()),
    }
}
