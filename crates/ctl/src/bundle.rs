//! `--bundle`: flow and group changes sent as one OpenFlow bundle, the
//! way `ovs-ofctl --bundle` sends them: to an OpenFlow 1.3 switch with the
//! ONF extension (`ofp::msg::bundle`), to a 1.4 or 1.5 one as native
//! bundles, each change in the connection's version: OPEN with ATOMIC and ORDERED, one ADD
//! per change, a BARRIER to collect the errors the adds drew (a refused
//! add is left out of the bundle, not fatal to it), then COMMIT if none
//! came, else DISCARD. The switch applies every change, in order, or none.
//!
//! Errors are printed as sluice-ctl prints them without `--bundle`, each
//! named by what it refers to (a file line, a deletion, the command), and
//! say that nothing changed; a commit the switch refused also shows its
//! `OFPBFC_MSG_FAILED`. The bundle id is 0, as ovs-ofctl's: one bundle a
//! connection.

use ofp::error::{BadRequestCode, ErrorCode};
use ofp::msg::bundle::{bundle_flags, BundleAdd, BundleCtrl, BundleCtrlType, BundleMsg};
use ofp::Message;

use crate::client::{Client, ClientError};
use crate::commands::{CmdError, Result};

/// The id of the one bundle sluice-ctl opens on a connection.
pub const BUNDLE_ID: u32 = 0;
const FLAGS: u16 = bundle_flags::ATOMIC | bundle_flags::ORDERED;

/// Changes for a bundle: their ADD messages encoded back to back, and
/// their xids (consecutive from `first_xid`).
pub struct Batch {
    wire: Vec<u8>,
    first_xid: u32,
    count: u32,
    /// The connection's: OpenFlow 1.3's ONF extension, or 1.4's and 1.5's
    /// native bundles, each change in that version.
    version: ofp::Version,
}

impl Batch {
    /// An empty batch whose changes take the xids `c` gives next.
    pub fn new(c: &mut Client) -> Batch {
        Batch {
            wire: Vec::new(),
            first_xid: c.reserve_xids(0),
            count: 0,
            version: c.version(),
        }
    }

    /// Adds `msg`; false if its ADD message would be longer than an
    /// OpenFlow message can be (the change is then not added).
    pub fn push(&mut self, msg: &Message) -> bool {
        let xid = self.first_xid.wrapping_add(self.count);
        let mut inner = Vec::new();
        if msg.encode_as(self.version, xid, &mut inner).is_err() {
            return false;
        }
        let add = BundleAdd {
            message: inner.into(),
            ..BundleAdd::new(BUNDLE_ID, FLAGS, &Message::BarrierRequest, xid)
        }
        .message();
        let at = self.wire.len();
        if add.encode_as(self.version, xid, &mut self.wire).is_err()
            || self.wire.len() - at > 65_535
        {
            self.wire.truncate(at);
            return false;
        }
        self.count += 1;
        true
    }

    /// Which change (0 first) an xid belongs to.
    pub fn index(&self, xid: u32) -> Option<usize> {
        let i = xid.wrapping_sub(self.first_xid);
        (i < self.count).then_some(i as usize)
    }

    /// How many changes.
    pub fn len(&self) -> usize {
        self.count as usize
    }
}

/// Sends one control request and checks its reply.
fn control(c: &mut Client, t: BundleCtrlType) -> std::result::Result<(), ClientError> {
    let req = BundleCtrl {
        bundle_id: BUNDLE_ID,
        ctrl_type: t,
        flags: FLAGS,
        properties: Default::default(),
    };
    match c.request(&req.message())? {
        Message::Experimenter(e) => match BundleMsg::decode(&e) {
            Some(Ok(BundleMsg::Control(r)))
                if r.bundle_id == BUNDLE_ID && Some(r.ctrl_type) == t.reply() =>
            {
                Ok(())
            }
            _ => Err(ClientError::Unexpected(format!(
                "not a bundle {}",
                t.reply().unwrap_or(t)
            ))),
        },
        m => Err(ClientError::Unexpected(format!("{:?}", m.msg_type()))),
    }
}

/// One line per error: `NAME: the switch answered CODE`, NAME from
/// `name` (None: the xid).
fn error_lines(errors: &[(u32, ErrorCode)], name: &dyn Fn(u32) -> Option<String>) -> String {
    errors
        .iter()
        .map(|(xid, code)| match name(*xid) {
            Some(n) => format!("{n}: the switch answered {code}\n"),
            None => format!("xid {xid}: the switch answered {code}\n"),
        })
        .collect()
}

/// Runs `batch` as one bundle. `label` names the change (by its index in
/// the batch) in errors; `what` is what the changes are ("flows").
pub fn run(
    c: &mut Client,
    batch: Batch,
    what: &str,
    label: &dyn Fn(usize) -> String,
) -> Result<String> {
    let name = |xid: u32| batch.index(xid).map(label);
    // The changes' xids are taken before the control messages'.
    c.reserve_xids(batch.count);
    match control(c, BundleCtrlType::OpenRequest) {
        Ok(()) => {}
        Err(ClientError::Refused(code)) => {
            let unknown = matches!(
                code,
                ErrorCode::BadRequest(
                    BadRequestCode::BadType
                        | BadRequestCode::BadExperimenter
                        | BadRequestCode::BadExpType
                )
            );
            return Err(CmdError::Refused(format!(
                "bundle open: the switch answered {code}{}",
                if unknown {
                    " (the switch does not take OpenFlow bundles)"
                } else {
                    ""
                }
            )));
        }
        Err(e) => return Err(e.into()),
    }
    c.send_bytes(&batch.wire)?;
    c.barrier()?;
    let errors: Vec<(u32, ErrorCode)> = c
        .take_errors()
        .into_iter()
        .map(|(xid, code, _)| (xid, code))
        .collect();
    if !errors.is_empty() {
        // The switch keeps a bundle whose adds were refused: drop it
        // (its own answer changes nothing for the user).
        let _ = control(c, BundleCtrlType::DiscardRequest);
        return Err(CmdError::Refused(format!(
            "{} of {} {what} refused, bundle discarded, nothing changed:\n{}",
            errors.len(),
            batch.len(),
            error_lines(&errors, &name).trim_end()
        )));
    }
    match control(c, BundleCtrlType::CommitRequest) {
        Ok(()) => Ok(String::new()),
        Err(ClientError::Refused(code)) => {
            // The message that failed is answered first, with its own xid.
            let mut errors: Vec<(u32, ErrorCode)> = c
                .take_errors()
                .into_iter()
                .map(|(xid, code, _)| (xid, code))
                .collect();
            let commit = c.last_xid();
            errors.push((commit, code));
            let named = |xid: u32| {
                if xid == commit {
                    Some("bundle commit".to_string())
                } else {
                    name(xid)
                }
            };
            Err(CmdError::Refused(format!(
                "bundle commit refused, nothing changed:\n{}",
                error_lines(&errors, &named).trim_end()
            )))
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::target::Target;

    struct Dp;
    impl agent::Datapath for Dp {
        type Port = agent::PortInfo;
        type PortSettings = ();
        fn publish(&self, _: Arc<pipeline::Snapshot>) {}
        fn packet_out(&self, _: u32, _: Vec<ofp::Action>, _: bytes::Bytes) -> bool {
            true
        }
        fn port_stats(&self, _: u32) -> Option<ofp::msg::multipart::PortStats> {
            None
        }
        fn queue_stats(&self, _: u32, _: u32) -> Option<(u64, u64, u64)> {
            None
        }
        fn port_add(
            &mut self,
            port: agent::PortInfo,
        ) -> std::result::Result<agent::PortInfo, String> {
            Ok(port)
        }
    }

    /// The agent behind a Unix socket, serving `conns` connections one
    /// after another; returns the flows it holds at the end.
    fn switch(path: std::path::PathBuf, conns: usize) -> std::thread::JoinHandle<usize> {
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            let mut a = agent::Agent::new(
                1,
                pipeline::Pipeline::new(pipeline::Config::default()),
                Dp,
                "br0",
            );
            for n in 1..=2 {
                let p = agent::PortInfo::new(n, "p", [2, 0, 0, 0, 0, n as u8]);
                a.handle_add_port(p, 0).unwrap();
            }
            for _ in 0..conns {
                let (mut s, _) = listener.accept().unwrap();
                let id = a.connect(0);
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    let out = a.poll_transmit(id).unwrap_or_default().to_vec();
                    a.transmitted(id, out.len());
                    s.write_all(&out).unwrap();
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            a.handle_input(id, &buf[..n], 1);
                        }
                    }
                }
                a.disconnect(id);
            }
            a.pipeline().flow_count()
        })
    }

    fn flow(text: &str) -> Message {
        let mut fm = ofp::text::parse_flow_mod(text).unwrap();
        fm.command = ofp::FlowModCommand::Add;
        Message::FlowMod(fm)
    }

    fn bundle_of(path: &std::path::Path, flows: &[&str]) -> Result<String> {
        let t = Target::parse(&format!("unix:{}", path.display()), &[]).unwrap();
        let mut c = Client::connect(
            &t,
            Duration::from_secs(5),
            None,
            ofp::Versions::only(ofp::Version::V1_3),
        )?;
        let mut batch = Batch::new(&mut c);
        for f in flows {
            assert!(batch.push(&flow(f)));
        }
        run(&mut c, batch, "flows", &|i| format!("f:{}", i + 1))
    }

    #[test]
    fn a_bundle_is_committed_whole_or_discarded_with_its_errors_named() {
        let dir = std::env::temp_dir().join(format!("sluice-ctl-bundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sw.sock");
        let sw = switch(path.clone(), 3);
        // Two good flows: committed.
        let ok = bundle_of(
            &path,
            &[
                "priority=1,in_port=1,actions=output:2",
                "priority=1,in_port=2,actions=output:1",
            ],
        );
        assert_eq!(ok.unwrap(), "");
        // A group that does not exist is found at commit: the switch names
        // the flow-mod, then fails the commit; nothing of it is made.
        let e = bundle_of(
            &path,
            &[
                "priority=2,in_port=1,actions=output:2",
                "priority=2,in_port=2,actions=group:99",
            ],
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "bundle commit refused, nothing changed:\n\
             f:2: the switch answered OFPET_BAD_ACTION/OFPBAC_BAD_OUT_GROUP\n\
             bundle commit: the switch answered OFPET_EXPERIMENTER/OFPBFC_MSG_FAILED"
        );
        // A value out of range is found when the flow-mod is added: the
        // bundle is discarded, not committed.
        let e = bundle_of(
            &path,
            &[
                "priority=3,in_port=1,actions=output:2",
                "priority=3,ip,actions=set_field:99->ip_dscp",
            ],
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "1 of 2 flows refused, bundle discarded, nothing changed:\n\
             f:2: the switch answered OFPET_BAD_ACTION/OFPBAC_BAD_SET_ARGUMENT"
        );
        assert_eq!(sw.join().unwrap(), 2, "only the first bundle's flows");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
