//! The PACKET_IN buffer pool: a bounded ring of frames a controller can
//! refer to by `buffer_id` in a PACKET_OUT or FLOW_MOD.
//!
//! Ids carry a generation in their upper bits, so an id whose slot has been
//! reused since is told apart (OFPBRC_BUFFER_UNKNOWN) from one already
//! taken (OFPBRC_BUFFER_EMPTY). Memory is bounded by the slot count.

use bytes::Bytes;

/// Slots in the pool (Open vSwitch 1.x offered 256).
pub const N_BUFFERS: u32 = 256;

#[derive(Default)]
struct Slot {
    id: u32,
    frame: Option<(u32, Bytes)>,
}

/// Buffered frames by id.
pub struct Buffers {
    slots: Vec<Slot>,
    next: u32,
}

impl Default for Buffers {
    fn default() -> Self {
        Buffers {
            slots: (0..N_BUFFERS).map(|_| Slot::default()).collect(),
            next: 0,
        }
    }
}

/// Why a buffer id cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Never issued, or overwritten since.
    Unknown,
    /// Issued and already used.
    Empty,
}

impl Buffers {
    /// Keeps `frame` (received on `in_port`); returns its id.
    pub fn put(&mut self, in_port: u32, frame: Bytes) -> u32 {
        let n = self.next;
        self.next = self.next.wrapping_add(1);
        // 24 bits of generation above the slot index; never NO_BUFFER.
        let id = (n % N_BUFFERS) | ((n / N_BUFFERS) & 0x00ff_ffff) << 8;
        let s = &mut self.slots[(n % N_BUFFERS) as usize];
        s.id = id;
        s.frame = Some((in_port, frame));
        id
    }

    /// Takes the frame of `id` out of the pool, with its ingress port.
    pub fn take(&mut self, id: u32) -> Result<(u32, Bytes), Missing> {
        let s = &mut self.slots[(id % N_BUFFERS) as usize];
        if s.id != id {
            return Err(Missing::Unknown);
        }
        s.frame.take().ok_or(Missing::Empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_single_use_and_age_out() {
        let mut b = Buffers::default();
        let id = b.put(3, Bytes::from_static(b"abc"));
        assert_eq!(b.take(id), Ok((3, Bytes::from_static(b"abc"))));
        assert_eq!(b.take(id), Err(Missing::Empty));
        assert_eq!(b.take(12345), Err(Missing::Unknown));
        let old = b.put(1, Bytes::new());
        for _ in 0..N_BUFFERS {
            b.put(1, Bytes::new());
        }
        assert_eq!(b.take(old), Err(Missing::Unknown), "slot reused since");
    }
}
