//! What the tests that play a switch for `ovs-ofctl` share: finding the
//! tool (a clear failure when it is missing, never a skip) and reading
//! one OpenFlow message off the socket it connected to.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

/// `ovs-ofctl`, checked to run.
pub fn ovs_ofctl() -> &'static str {
    let ok = Command::new("ovs-ofctl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "ovs-ofctl is needed (Debian's openvswitch-common; scripts/setup.sh installs it)"
    );
    "ovs-ofctl"
}

/// One whole message (header and body), or None at the end of the stream.
pub fn read_msg(s: &mut UnixStream) -> Option<Vec<u8>> {
    let mut h = [0u8; 8];
    s.read_exact(&mut h).ok()?;
    let len = u16::from_be_bytes([h[2], h[3]]) as usize;
    let mut m = h.to_vec();
    m.resize(len.max(8), 0);
    s.read_exact(&mut m[8..]).ok()?;
    Some(m)
}
