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

/// Waits (at most 20 s) for `child`, an ovs-ofctl pointed at
/// `listener` (non-blocking), to connect, then says HELLO (OpenFlow 1.3);
/// the stream reads with a 20 s timeout. `Err` with its status and
/// standard error if it exited without connecting.
pub fn accept_ovs_ofctl(
    listener: &std::os::unix::net::UnixListener,
    child: &mut std::process::Child,
) -> Result<UnixStream, (std::process::ExitStatus, String)> {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut conn = loop {
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(st) = child.try_wait().unwrap() {
                    let mut err = String::new();
                    if let Some(mut s) = child.stderr.take() {
                        s.read_to_string(&mut err).unwrap();
                    }
                    return Err((st, err));
                }
                assert!(Instant::now() < deadline, "ovs-ofctl never connected");
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(&[4, 0, 0, 8, 0, 0, 0, 1]).unwrap();
    Ok(conn)
}

/// Answers `m` if it is an ECHO_REQUEST or BARRIER_REQUEST (a reply with
/// the same xid); whether it was one.
pub fn answer_keepalive(conn: &mut UnixStream, m: &[u8]) -> bool {
    use std::io::Write;
    if !matches!(m[1], 2 | 20) {
        return false;
    }
    let mut r = m[..8].to_vec();
    r[1] += 1;
    r[2..4].copy_from_slice(&8u16.to_be_bytes());
    conn.write_all(&r).unwrap();
    true
}
