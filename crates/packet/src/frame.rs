//! [`FrameBuf`]: the bytes of one frame as the pipeline edits them.
//!
//! Most actions rewrite header bytes in place (a `&mut [u8]` does); a few
//! change the frame's length (push and pop of VLAN tags, MPLS entries and
//! PBB headers, padding to Ethernet's minimum). Those go through this
//! trait, so that the same pipeline code runs on a frame in a `Vec<u8>`
//! and on one that stays in the memory it was received into (an AF_XDP
//! UMEM frame, `netdev::umem`), which makes room from its headroom and
//! tailroom and moves to a `Vec` of its own only when neither suffices.
//!
//! Contract: every method keeps the bytes outside the edited range as they
//! were; none panics for `at` within the frame (an `at` past the end is a
//! caller bug and may panic, as `Vec::splice` does).

use std::ops::DerefMut;

/// A frame the pipeline can edit in place and grow or shrink.
pub trait FrameBuf: DerefMut<Target = [u8]> {
    /// Inserts `bytes` at offset `at` (`at <= len`).
    fn insert(&mut self, at: usize, bytes: &[u8]);
    /// Removes the `n` bytes at `at..at + n` (within the frame).
    fn remove(&mut self, at: usize, n: usize);
    /// Pads the frame with zeros to `len` bytes, if it is shorter.
    fn pad_to(&mut self, len: usize);
}

impl FrameBuf for Vec<u8> {
    fn insert(&mut self, at: usize, bytes: &[u8]) {
        self.splice(at..at, bytes.iter().copied());
    }

    fn remove(&mut self, at: usize, n: usize) {
        self.drain(at..at + n);
    }

    fn pad_to(&mut self, len: usize) {
        if self.len() < len {
            self.resize(len, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vec_grows_and_shrinks_where_asked() {
        let mut f = vec![1u8, 2, 3, 4];
        FrameBuf::insert(&mut f, 2, &[9, 9]);
        assert_eq!(f, [1, 2, 9, 9, 3, 4]);
        FrameBuf::remove(&mut f, 0, 3);
        assert_eq!(f, [9, 3, 4]);
        f.pad_to(5);
        assert_eq!(f, [9, 3, 4, 0, 0]);
        f.pad_to(2);
        assert_eq!(f.len(), 5);
    }
}
