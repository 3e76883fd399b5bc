//! A port backed by pcap files: frames are received from one capture and
//! sent into another. For tests, benchmarks and replaying traffic offline.
//! Receiving stops at the end of the input file; sending writes every frame
//! with the time it was sent.

use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

use crate::{Batch, Port};

/// A pcap port.
pub struct PcapPort {
    name: String,
    input: Option<PcapReader<BufReader<File>>>,
    output: Option<PcapWriter<BufWriter<File>>>,
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
        })
    }
}

impl Port for PcapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens) = batch.slots();
        let mut n = 0;
        if let Some(r) = &mut self.input {
            while n < bufs.len() {
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
        batch.set_len(n);
        Ok(n)
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
