//! ARP frames: the requests the load is made of, and the replies the
//! responder makes of them.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use pcap_file::pcap::{PcapPacket, PcapWriter};

/// The requesting host (the responder's replies go back to it).
pub const HOST_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x99, 0x00, 0x01];
/// The address the responder answers for, with this MAC.
pub const ANSWER_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x99, 0x00, 0x02];

const ETH_ARP: u16 = 0x0806;

/// An ARP request from `HOST_MAC`/10.99.0.1 for 10.99.0.2, padded to 60 bytes.
pub fn request() -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(&HOST_MAC);
    f.extend_from_slice(&ETH_ARP.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&HOST_MAC);
    f.extend_from_slice(&[10, 99, 0, 1]);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&[10, 99, 0, 2]);
    f.resize(60, 0);
    f
}

/// The reply to an ARP request, answering with `ANSWER_MAC`; None if the
/// frame is not an Ethernet/IPv4 ARP request.
pub fn reply(req: &[u8]) -> Option<Vec<u8>> {
    if req.len() < 42
        || req[12..14] != ETH_ARP.to_be_bytes()
        || req[14..22] != [0, 1, 0x08, 0, 6, 4, 0, 1]
    {
        return None;
    }
    let (sha, spa, tpa) = (&req[22..28], &req[28..32], &req[38..42]);
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(sha);
    f.extend_from_slice(&ANSWER_MAC);
    f.extend_from_slice(&ETH_ARP.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x08, 0, 6, 4, 0, 2]);
    f.extend_from_slice(&ANSWER_MAC);
    f.extend_from_slice(tpa);
    f.extend_from_slice(sha);
    f.extend_from_slice(spa);
    f.resize(60, 0);
    Some(f)
}

/// Writes `count` requests to a capture at `path`.
pub fn write_requests(path: &Path, count: u64) -> Result<(), String> {
    let f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = PcapWriter::new(BufWriter::with_capacity(1 << 20, f))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let frame = request();
    for _ in 0..count {
        w.write_packet(&PcapPacket::new(Default::default(), 60, &frame))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_answers_the_request() {
        let r = reply(&request()).unwrap();
        assert_eq!(&r[0..6], &HOST_MAC, "back to the asker");
        assert_eq!(&r[20..22], &[0, 2], "an ARP reply");
        assert_eq!(&r[22..28], &ANSWER_MAC);
        assert_eq!(&r[28..32], &[10, 99, 0, 2], "for the address asked about");
        assert_eq!(&r[38..42], &[10, 99, 0, 1]);
        assert_eq!(r.len(), 60);
        assert!(reply(&r).is_none(), "a reply is not answered");
        assert!(reply(&r[..30]).is_none());
    }
}
