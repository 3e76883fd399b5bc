//! A connection's bytes to send: appended at the back, consumed from the
//! front as the socket takes them.
//!
//! A read cursor instead of `Vec::drain` from the front: a peer that reads
//! a few bytes at a time would otherwise make every write move the whole
//! rest of the buffer (quadratic in the backlog). The consumed front is
//! reclaimed when it is more than half of the buffer (each byte moves at
//! most once on average), and an emptied buffer that grew past
//! [`KEEP_CAPACITY`] gives its memory back, so a burst does not pin its
//! high-water mark for the connection's life.

use std::ops::Deref;

use ofp::msg::TooLong;
use ofp::{Message, Version};

/// Capacity an empty outbox keeps.
pub const KEEP_CAPACITY: usize = 64 << 10;

/// Bytes queued for one connection.
#[derive(Debug, Default, Clone)]
pub struct Outbox {
    buf: Vec<u8>,
    /// Bytes of `buf` already sent.
    head: usize,
}

impl Outbox {
    /// Appends `msg` with `xid`, as OpenFlow `version` writes it, if it
    /// fits (a multipart reply may become several messages of that
    /// version: [`Message::encode_as`]).
    pub fn push(&mut self, msg: &Message, xid: u32, version: Version) -> Result<(), TooLong> {
        msg.encode_as(version, xid, &mut self.buf)
    }

    /// Appends raw bytes (already framed messages).
    pub fn extend_from_slice(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// Marks the first `n` unsent bytes as sent.
    pub fn consume(&mut self, n: usize) {
        self.head = (self.head + n).min(self.buf.len());
        if self.head == self.buf.len() {
            self.clear();
        } else if self.head > self.buf.len() / 2 && self.head >= 4096 {
            self.buf.drain(..self.head);
            self.head = 0;
        }
    }

    /// Drops everything unsent.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.head = 0;
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf.shrink_to(KEEP_CAPACITY);
        }
    }

    /// Memory held, bytes (for budgets and tests).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

impl Deref for Outbox {
    type Target = [u8];

    /// The unsent bytes.
    fn deref(&self) -> &[u8] {
        &self.buf[self.head..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumed_bytes_leave_from_the_front_and_memory_comes_back() {
        let mut o = Outbox::default();
        o.extend_from_slice(&[1, 2, 3, 4, 5]);
        o.consume(2);
        assert_eq!(&o[..], &[3, 4, 5]);
        o.extend_from_slice(&[6]);
        o.consume(1);
        assert_eq!(&o[..], &[4, 5, 6]);
        o.consume(10);
        assert!(o.is_empty());
        // A burst, drained a byte at a time at first, then all at once.
        o.extend_from_slice(&vec![9u8; 1 << 20]);
        for _ in 0..100 {
            o.consume(1);
        }
        assert_eq!(o.len(), (1 << 20) - 100);
        o.consume(600_000);
        assert_eq!(o.len(), (1 << 20) - 600_100, "compacted, nothing lost");
        assert!(o.iter().all(|&b| b == 9));
        o.consume(usize::MAX / 2);
        assert!(o.is_empty());
        assert!(o.capacity() <= KEEP_CAPACITY);
    }

    #[test]
    fn a_message_too_long_leaves_nothing_behind() {
        let mut o = Outbox::default();
        o.push(&Message::BarrierReply, 1, Version::V1_3).unwrap();
        let big = Message::EchoReply(bytes::Bytes::from(vec![0u8; 70_000]));
        assert!(o.push(&big, 2, Version::V1_3).is_err());
        assert_eq!(o.len(), 8);
    }
}
