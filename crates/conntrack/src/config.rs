//! Timeouts and limits, changeable while packets flow (atomics: a worker
//! reads them per packet without a lock).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Idle timeouts in seconds. The defaults are Linux's (`nf_conntrack_*`
/// sysctls): the kernel is the behaviour hosts are used to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A TCP connection until both ends reached established (SYN_SENT).
    pub tcp_syn_sent: u32,
    pub tcp_established: u32,
    /// After a FIN, until both FINs are acknowledged.
    pub tcp_fin_wait: u32,
    /// Both FINs acknowledged.
    pub tcp_time_wait: u32,
    /// After a RST.
    pub tcp_close: u32,
    /// UDP before a reply.
    pub udp: u32,
    /// UDP with replies.
    pub udp_stream: u32,
    pub icmp: u32,
    /// Other IP protocols.
    pub other: u32,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            tcp_syn_sent: 120,
            tcp_established: 432_000,
            tcp_fin_wait: 120,
            tcp_time_wait: 120,
            tcp_close: 10,
            udp: 30,
            udp_stream: 120,
            icmp: 30,
            other: 600,
        }
    }
}

/// The names of the timeouts, as the configuration and `sluice-ctl` spell
/// them.
pub const TIMEOUT_NAMES: [&str; 9] = [
    "tcp_syn_sent",
    "tcp_established",
    "tcp_fin_wait",
    "tcp_time_wait",
    "tcp_close",
    "udp",
    "udp_stream",
    "icmp",
    "other",
];

impl Timeouts {
    fn as_array(&self) -> [u32; 9] {
        [
            self.tcp_syn_sent,
            self.tcp_established,
            self.tcp_fin_wait,
            self.tcp_time_wait,
            self.tcp_close,
            self.udp,
            self.udp_stream,
            self.icmp,
            self.other,
        ]
    }

    fn from_array(a: [u32; 9]) -> Timeouts {
        Timeouts {
            tcp_syn_sent: a[0],
            tcp_established: a[1],
            tcp_fin_wait: a[2],
            tcp_time_wait: a[3],
            tcp_close: a[4],
            udp: a[5],
            udp_stream: a[6],
            icmp: a[7],
            other: a[8],
        }
    }

    /// Sets the timeout `name` (one of [`TIMEOUT_NAMES`]) to `secs`.
    pub fn set(&mut self, name: &str, secs: u32) -> Result<(), String> {
        let i = TIMEOUT_NAMES
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| {
                format!(
                    "unknown conntrack timeout `{name}` (one of {})",
                    TIMEOUT_NAMES.join(", ")
                )
            })?;
        if secs == 0 {
            return Err(format!(
                "conntrack timeout `{name}` must be at least 1 second"
            ));
        }
        let mut a = self.as_array();
        a[i] = secs;
        *self = Timeouts::from_array(a);
        Ok(())
    }

    /// (name, seconds) pairs.
    pub fn pairs(&self) -> impl Iterator<Item = (&'static str, u32)> {
        TIMEOUT_NAMES.into_iter().zip(self.as_array())
    }
}

/// The timeouts as the workers read them.
#[derive(Debug, Default)]
pub(crate) struct LiveTimeouts([AtomicU32; 9]);

impl LiveTimeouts {
    pub(crate) fn store(&self, t: &Timeouts) {
        for (a, v) in self.0.iter().zip(t.as_array()) {
            a.store(v, Relaxed);
        }
    }

    pub(crate) fn load(&self) -> Timeouts {
        Timeouts::from_array(std::array::from_fn(|i| self.0[i].load(Relaxed)))
    }

    /// Milliseconds of timeout `i` (the index in [`TIMEOUT_NAMES`]).
    #[inline]
    pub(crate) fn ms(&self, i: Timeout) -> u64 {
        self.0[i as usize].load(Relaxed) as u64 * 1000
    }
}

/// A timeout's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Timeout {
    TcpSynSent = 0,
    TcpEstablished = 1,
    TcpFinWait = 2,
    TcpTimeWait = 3,
    TcpClose = 4,
    Udp = 5,
    UdpStream = 6,
    Icmp = 7,
    Other = 8,
}

/// How many connections may be tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// In total (0: no limit beyond memory; the default is 1 048 576, as
    /// a bound on memory: about 200 bytes each).
    pub total: u64,
    /// Per zone, for zones without a limit of their own (0: none).
    pub zone_default: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            total: 1 << 20,
            zone_default: 0,
        }
    }
}

/// The limits as the workers read them, and the per-zone counts.
pub(crate) struct LiveLimits {
    pub(crate) total: AtomicU64,
    pub(crate) zone_default: AtomicU32,
    /// Per zone: 0 the default, u32::MAX no limit, else the limit.
    pub(crate) zone: Box<[AtomicU32]>,
    /// Connections per zone now.
    pub(crate) count: Box<[AtomicU32]>,
}

impl LiveLimits {
    pub(crate) fn new(l: &Limits) -> LiveLimits {
        LiveLimits {
            total: AtomicU64::new(l.total),
            zone_default: AtomicU32::new(l.zone_default),
            zone: (0..=u16::MAX as usize).map(|_| AtomicU32::new(0)).collect(),
            count: (0..=u16::MAX as usize).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// The limit of `zone` (0: none).
    pub(crate) fn zone_limit(&self, zone: u16) -> u32 {
        match self.zone[zone as usize].load(Relaxed) {
            0 => self.zone_default.load(Relaxed),
            u32::MAX => 0,
            n => n,
        }
    }
}
