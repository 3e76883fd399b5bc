//! A port backed by pcap files: frames are received from one capture and
//! sent into another. For tests, benchmarks and replaying traffic offline.
//! Receiving stops at the end of the input file; sending writes every frame
//! with the time it was sent.
//!
//! Receiving is as fast as the worker asks, or paced at a given rate
//! ([`PcapPort::paced`]): then frames are released as the time they are due
//! comes, and a timer descriptor that fires once per batch's worth of time
//! wakes the worker, so a benchmark can offer a known load (the way a
//! traffic generator would) and compare what came out with what went in.

use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

use crate::{Batch, Port};

/// A pcap port.
pub struct PcapPort {
    name: String,
    input: Option<PcapReader<BufReader<File>>>,
    output: Option<PcapWriter<BufWriter<File>>>,
    pace: Option<Pace>,
}

/// Release frames at `rate` per second from `start`.
struct Pace {
    rate: u64,
    start: Option<Instant>,
    released: u64,
    timer: OwnedFd,
}

fn pcap_err(path: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {e}", path.display()),
    )
}

impl PcapPort {
    /// A port reading frames from `input` and writing what it sends to
    /// `output` (either may be absent, not both).
    pub fn open(name: &str, input: Option<&Path>, output: Option<&Path>) -> io::Result<PcapPort> {
        let input = match input {
            Some(p) => {
                let f = File::open(p)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
                Some(PcapReader::new(BufReader::new(f)).map_err(|e| pcap_err(p, e))?)
            }
            None => None,
        };
        let output = match output {
            Some(p) => {
                let f = File::create(p)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
                Some(PcapWriter::new(BufWriter::new(f)).map_err(|e| pcap_err(p, e))?)
            }
            None => None,
        };
        Ok(PcapPort {
            name: name.to_string(),
            input,
            output,
            pace: None,
        })
    }

    /// Paces receiving at `rate` frames per second (from the first receive).
    pub fn paced(mut self, rate: u64) -> io::Result<PcapPort> {
        if rate == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a paced pcap port needs a rate above 0",
            ));
        }
        // SAFETY: timerfd_create takes no pointers; the result is checked.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor that nothing else owns.
        let timer = unsafe { OwnedFd::from_raw_fd(fd) };
        // One tick per 32 frames' worth of time (at least 10 us).
        let tick_ns = (32_000_000_000 / rate).max(10_000);
        let ts = libc::timespec {
            tv_sec: (tick_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (tick_ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: spec is a valid itimerspec; the old value is not asked for.
        if unsafe { libc::timerfd_settime(timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        self.pace = Some(Pace {
            rate,
            start: None,
            released: 0,
            timer,
        });
        Ok(self)
    }
}

impl Pace {
    /// Disarms and drains the timer (the capture has ended: nothing will
    /// be due again, and a readable timer would keep the worker awake).
    fn stop(&mut self) {
        let zero = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        };
        // SAFETY: zero is a valid itimerspec; the old value is not asked for.
        unsafe { libc::timerfd_settime(self.timer.as_raw_fd(), 0, &zero, std::ptr::null_mut()) };
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into buf from a non-blocking timer.
        unsafe { libc::read(self.timer.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    }

    /// How many frames may be released now.
    fn due(&mut self) -> u64 {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into buf; the timer is non-blocking
        // and a failed read (nothing expired) changes nothing.
        unsafe { libc::read(self.timer.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        let start = *self.start.get_or_insert_with(Instant::now);
        let elapsed = start.elapsed().as_nanos() as u64;
        let allowed = (elapsed as u128 * self.rate as u128 / 1_000_000_000) as u64 + 1;
        allowed.saturating_sub(self.released)
    }
}

impl Port for PcapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens) = batch.slots();
        let mut n = 0;
        let limit = match (&mut self.pace, &self.input) {
            (Some(p), Some(_)) => (p.due().min(bufs.len() as u64)) as usize,
            _ => bufs.len(),
        };
        if let Some(r) = &mut self.input {
            while n < limit {
                match r.next_packet() {
                    Some(Ok(p)) => {
                        let len = p.data.len().min(bufs[n].len());
                        bufs[n][..len].copy_from_slice(&p.data[..len]);
                        lens[n] = len;
                        n += 1;
                    }
                    // End of the capture, or a damaged tail: nothing more to receive.
                    Some(Err(_)) | None => {
                        self.input = None;
                        break;
                    }
                }
            }
        }
        if let Some(p) = &mut self.pace {
            p.released += n as u64;
            if self.input.is_none() {
                p.stop();
            }
        }
        batch.set_len(n);
        Ok(n)
    }

    fn fd(&self) -> Option<i32> {
        self.pace.as_ref().map(|p| p.timer.as_raw_fd())
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let Some(w) = &mut self.output else {
            return Ok(frames.len());
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        for f in frames {
            w.write_packet(&PcapPacket::new(now, f.len() as u32, f))
                .map_err(|e| io::Error::other(format!("{}: {e}", self.name)))?;
        }
        Ok(frames.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_port_never_runs_ahead_of_its_rate_and_delivers_everything() {
        let dir = std::env::temp_dir().join(format!("sluice-pcap-pace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("in.pcap");
        {
            let mut w = PcapWriter::new(BufWriter::new(File::create(&path).unwrap())).unwrap();
            let frame = [0xabu8; 60];
            for _ in 0..2_000 {
                w.write_packet(&PcapPacket::new(Default::default(), 60, &frame))
                    .unwrap();
            }
        }
        let mut p = PcapPort::open("p", Some(&path), None)
            .unwrap()
            .paced(20_000)
            .unwrap();
        assert!(p.fd().is_some(), "the worker polls the pacing timer");
        let mut batch = Batch::new(64);
        let t0 = Instant::now();
        let mut got = 0;
        while got < 2_000 {
            got += p.recv(&mut batch).unwrap();
            assert!(t0.elapsed() < std::time::Duration::from_secs(30));
            std::thread::yield_now();
        }
        // 2 000 frames at 20 000/s cannot all be out before ~100 ms.
        assert!(
            t0.elapsed() >= std::time::Duration::from_millis(95),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(p.recv(&mut batch).unwrap(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
