//! How a change reaches the switch and how its refusal is reported.
//!
//! Contract: a change (flow, group, meter, port or table mod, packet-out)
//! is sent alone and followed by a barrier, so the switch has answered
//! before the command returns; a flow or group change goes as a bundle of
//! one instead with `--bundle` (`crate::bundle`). A refusal is an error
//! naming the message type (or, for a batch from a file, the line each
//! refused message came from) and the switch's error code by its spec name.

use ofp::{ErrorCode, Message};

use super::{usage, CmdError, Result};
use crate::client::Client;
use crate::{bundle, Opts};

/// The refusals of a batch of messages from `file`, each named by the
/// line its message came from (`line_of(xid)`: None if unknown, 0 for a
/// message no line asked for, a deletion `replace-flows` made): "N of
/// TOTAL WHAT refused:" and one line per refusal.
pub(crate) fn refused_lines(
    file: &str,
    errors: &[(u32, ErrorCode, bytes::Bytes)],
    total: usize,
    what: &str,
    line_of: impl Fn(u32) -> Option<usize>,
) -> CmdError {
    let mut msg = String::new();
    for (xid, code, _) in errors {
        msg.push_str(&match line_of(*xid) {
            Some(0) => format!("deleting a flow: the switch answered {code}\n"),
            Some(line) => format!("{file}:{line}: the switch answered {code}\n"),
            None => format!("xid {xid}: the switch answered {code}\n"),
        });
    }
    CmdError::Refused(format!(
        "{} of {total} {what} refused:\n{}",
        errors.len(),
        msg.trim_end()
    ))
}

/// The switch refused `what` with `code`.
fn refused(what: &str, code: ErrorCode) -> CmdError {
    CmdError::Refused(format!("{what}: the switch answered {code}"))
}

/// One flow or group change: alone ([`modify`]) or, with `--bundle`, as
/// a bundle of one.
pub(super) fn change(c: &mut Client, msg: &Message, opts: &Opts) -> Result<String> {
    if !opts.bundle {
        return modify(c, msg);
    }
    let what = format!("{:?}", msg.msg_type());
    let mut batch = bundle::Batch::new(c);
    if !batch.push(msg) {
        return usage(&what, "too long for a bundle");
    }
    bundle::run(c, batch, "changes", &|_| what.clone())
}

/// Sends one modification, then a barrier: the error, if any, is printed
/// by name.
pub(super) fn modify(c: &mut Client, msg: &Message) -> Result<String> {
    modify_named(c, &[msg], &format!("{:?}", msg.msg_type()))
}

/// Sends the messages of one modification (a flow format's setup, then
/// the change), then a barrier: the first error, if any, is printed with
/// `what`.
pub(super) fn modify_named(c: &mut Client, msgs: &[&Message], what: &str) -> Result<String> {
    for m in msgs {
        c.send(m);
    }
    c.barrier()?;
    match c.take_errors().into_iter().next() {
        Some((_, code, _)) => Err(refused(what, code)),
        None => Ok(String::new()),
    }
}
