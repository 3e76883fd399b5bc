//! The PACKET_IN buffer pool: a bounded ring of frames a controller can
//! refer to by `buffer_id` in a PACKET_OUT or FLOW_MOD.
//!
//! Ids carry a generation in their upper bits, so an id whose slot has been
//! reused since is told apart (OFPBRC_BUFFER_UNKNOWN) from one already
//! taken (OFPBRC_BUFFER_EMPTY). Memory is bounded by the slot count.
//! A request that names a buffer reads it with [`Buffers::get`] and takes
//! it with [`Buffers::take`] only once the request has succeeded, so a
//! refused PACKET_OUT or FLOW_MOD leaves the packet for a corrected retry.

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
        let mut n = self.next;
        // 24 bits of generation above the slot index; never NO_BUFFER
        // (0xffffffff, the last slot of the last generation), which would
        // tell the controller the packet was not buffered.
        let id_of = |n: u32| (n % N_BUFFERS) | ((n / N_BUFFERS) & 0x00ff_ffff) << 8;
        if id_of(n) == u32::MAX {
            n = n.wrapping_add(1);
        }
        self.next = n.wrapping_add(1);
        let id = id_of(n);
        let s = &mut self.slots[(n % N_BUFFERS) as usize];
        s.id = id;
        s.frame = Some((in_port, frame));
        id
    }

    /// The frame of `id`, with its ingress port, left in the pool.
    pub fn get(&self, id: u32) -> Result<(u32, Bytes), Missing> {
        let s = &self.slots[(id % N_BUFFERS) as usize];
        if s.id != id {
            return Err(Missing::Unknown);
        }
        s.frame.clone().ok_or(Missing::Empty)
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

    #[test]
    fn get_leaves_the_frame_for_take() {
        let mut b = Buffers::default();
        let id = b.put(3, Bytes::from_static(b"abc"));
        assert_eq!(b.get(id), Ok((3, Bytes::from_static(b"abc"))));
        assert_eq!(b.get(id), Ok((3, Bytes::from_static(b"abc"))));
        assert!(b.take(id).is_ok());
        assert_eq!(b.get(id), Err(Missing::Empty));
    }

    #[test]
    fn no_buffer_is_never_issued() {
        // The last slot of the last generation would be 0xffffffff.
        let mut b = Buffers {
            next: u32::MAX - 1,
            ..Buffers::default()
        };
        let ids: Vec<u32> = (0..4).map(|_| b.put(1, Bytes::new())).collect();
        assert!(!ids.contains(&u32::MAX), "{ids:x?}");
        assert_eq!(ids[0], 0xffff_fffe);
        assert_eq!(ids[1], 0, "wraps to the first slot of generation 0");
        for id in ids {
            assert!(b.get(id).is_ok());
        }
    }
}
