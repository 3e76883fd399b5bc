//! The purge against the kernel: a veth pair in a network namespace of
//! the test's own (needs root; in CI, `CI` set, it fails rather than
//! skip).

use super::*;
use packet::wire::build;
use std::process::Command;
use std::time::{Duration, Instant};

const ETHERTYPE: u16 = 0x88b5;

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the AF_XDP purge test needs root in CI"
    );
    eprintln!("skipped: the AF_XDP purge test needs root");
    false
}

fn run(args: &[&str]) {
    let st = Command::new(args[0]).args(&args[1..]).status().unwrap();
    assert!(st.success(), "{args:?}: {st}");
}

/// Waits (at most 5 s) until `name`'s operational state is `want`
/// (sysfs shows the namespace it was mounted in, so `ip` is asked).
fn wait_oper(name: &str, want: &str) {
    let t = Instant::now();
    loop {
        let out = Command::new("ip")
            .args(["-o", "link", "show", name])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).contains(&format!("state {want}")) {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{name} not {want} after 5 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn frame(seq: u32) -> Vec<u8> {
    let src = 0x0200_0000_7701;
    let mut f = build::ethernet(0xffff_ffff_ffff, src, None, ETHERTYPE, &seq.to_be_bytes());
    f.resize(60, 0);
    f
}

/// An AF_PACKET socket receiving `ETHERTYPE` frames on `name`.
fn listener(name: &str) -> i32 {
    let proto = ETHERTYPE.to_be();
    // SAFETY: socket(2), checked; closed by the test.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, proto as i32) };
    assert!(fd >= 0);
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = crate::afpacket::ifindex(name).unwrap();
    // SAFETY: binding our socket to a live sockaddr_ll.
    let r = unsafe {
        libc::bind(
            fd,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    assert_eq!(r, 0);
    fd
}

/// The sequence numbers `fd` receives until `last` arrives (at most
/// 5 s).
fn received_until(fd: i32, last: u32) -> Vec<u32> {
    let t = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 128];
    while got.last() != Some(&last) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "frame {last} not received after 5 s (got {got:?})"
        );
        // SAFETY: receiving into a live buffer of that size.
        let n = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n >= 18 {
            got.push(u32::from_be_bytes(buf[14..18].try_into().unwrap()));
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    got
}

/// A veth pair `A`-`B` in a network namespace of this thread's own (the
/// test harness's other threads keep theirs; `ip` inherits it), an
/// AF_XDP port on A, a listener on B, and 100 frames on A's TX ring
/// of which one kick (stopped at the kernel's batch limit) sent 32:
/// the rest would leave whenever the kernel is kicked again.
struct Left {
    ports: Vec<AfXdp>,
    rx: i32,
    /// Free chunks before the 100 frames.
    free: usize,
}

const A: &str = "slxpa";
const N: u32 = 100;

impl Left {
    fn new() -> Left {
        // SAFETY: unshare(2) of the calling thread's network namespace.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
        run(&["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"]);
        let q = ["numtxqueues", "1", "numrxqueues", "1"];
        let mut add = vec!["ip", "link", "add", A];
        add.extend(q);
        add.extend(["type", "veth", "peer", "name", "slxpb"]);
        add.extend(q);
        run(&add);
        run(&["ip", "link", "set", A, "up"]);
        run(&["ip", "link", "set", "slxpb", "up"]);
        wait_oper(A, "UP");
        let rx = listener("slxpb");
        let mut ports = AfXdp::open_queues(A, 1, true, None).unwrap();
        let s = &mut ports[0].socks[0];
        assert!(!s.zero_copy, "veth is copy-only");
        let free = s.umem.free_chunks();
        for seq in 0..N {
            let f = frame(seq);
            let addr = s.umem.alloc().unwrap();
            let d = Desc {
                addr,
                len: f.len() as u32,
            };
            // SAFETY: a chunk just allocated, held by us alone.
            unsafe { s.umem.chunk_mut(d)[..f.len()].copy_from_slice(&f) };
            s.umem.to_tx(s.id, d);
            // SAFETY: a free slot of the TX ring (it is empty).
            unsafe {
                *s.tx.slot(s.tx.cached) = XdpDesc {
                    addr,
                    len: d.len,
                    options: 0,
                }
            };
            s.tx.cached = s.tx.cached.wrapping_add(1);
        }
        s.tx.producer().store(s.tx.cached, Ordering::Release);
        assert_eq!(s.kick().unwrap(), Kick::Again);
        assert_eq!(received_until(rx, 31), (0..32).collect::<Vec<_>>());
        Left { ports, rx, free }
    }

    /// The fixture with A then set down (None: not root, the test is
    /// skipped).
    fn down() -> Option<Left> {
        if !root() {
            return None;
        }
        let t = Left::new();
        run(&["ip", "link", "set", A, "down"]);
        Some(t)
    }

    fn sock(&mut self) -> &mut Socket {
        &mut self.ports[0].socks[0]
    }

    /// The purge starts at the consumer index the kernel published:
    /// past the 32 it sent, or (a kernel that publishes it only once
    /// it runs out) before them.
    fn assert_purged(&mut self) {
        let purged = self.sock().purge.as_ref().map_or(0, |p| p.descs.len()) as u32;
        assert!(purged == N - 32 || purged == N, "{purged} purged");
    }

    /// The link comes back; `settle` resolves the purge: nothing of it
    /// reaches B before the frame `tx` then sends, exactly 32 were
    /// counted sent (with the new one, 33) and 68 dropped, and every
    /// chunk comes back.
    fn up_and_check(&mut self, settle: fn(&mut Socket)) {
        run(&["ip", "link", "set", A, "up"]);
        wait_oper(A, "UP");
        settle(self.sock());
        assert_eq!(self.sock().tx(&[TxFrame::Bytes(&frame(2000))]).unwrap(), 1);
        assert!(self.sock().purge.is_none());
        assert_eq!(
            received_until(self.rx, 2000),
            [2000],
            "purged frames were sent late"
        );
        self.sock().settle();
        assert_eq!(
            std::mem::take(&mut self.sock().settled_tx),
            crate::TxSettled {
                sent: 33,
                bytes: 33 * 60,
                dropped: (N - 32) as u64,
            }
        );
        let (free, t) = (self.free, Instant::now());
        while self.sock().umem.free_chunks() != free {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "{} chunks free, {free} before",
                self.sock().umem.free_chunks()
            );
            self.sock().reap();
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Left {
    fn drop(&mut self) {
        // SAFETY: closing the listener opened in `new`.
        unsafe { libc::close(self.rx) };
    }
}

/// Link down: the next send is refused (its frame taken back) and
/// what is left is purged, not sent when the link comes back.
#[test]
fn frames_left_on_the_ring_when_the_link_goes_down_are_purged_not_sent_late() {
    let Some(mut t) = Left::down() else {
        return;
    };
    assert_eq!(t.sock().tx(&[TxFrame::Bytes(&frame(1000))]).unwrap(), 0);
    t.assert_purged();
    t.up_and_check(|_| {});
}

/// The same when no send comes while the link is down (the worker
/// stops sending to a port it sees down): the kick before the worker
/// sleeps purges, and the one after the link is back resolves it.
#[test]
fn the_idle_kick_purges_too() {
    let Some(mut t) = Left::down() else {
        return;
    };
    t.sock().before_wait();
    t.assert_purged();
    t.up_and_check(Socket::before_wait);
}

/// A port closed while frames are left on its ring and the link is
/// down counts each of them once: sent or dropped.
#[test]
fn a_port_closed_with_frames_left_counts_each_once() {
    let Some(mut t) = Left::down() else {
        return;
    };
    t.ports[0].close_tx();
    let c = t.ports[0].take_tx_settled();
    assert_eq!(c.sent + c.dropped, N as u64, "{c:?}");
    assert!(c.dropped >= (N - 32) as u64, "{c:?}");
}
