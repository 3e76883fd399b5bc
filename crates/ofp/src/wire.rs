//! Checked reading and plain writing of big-endian wire structures.
//!
//! [`Reader`] is the one door for untrusted bytes: every accessor checks the
//! remaining length and fails with the OpenFlow error the caller chose for
//! "too short" in its context (a short action is `OFPBAC_BAD_LEN`, a short
//! match `OFPBMC_BAD_LEN`, a short message `OFPBRC_BAD_LEN`). No accessor can
//! panic. Byte ranges are handed out as [`Bytes`] slices of the frame, so
//! payloads (packet data, echo data) are never copied.

use bytes::{BufMut, Bytes};

use crate::error::{ErrorCode, OfpError};

/// A bounds-checked cursor over a frame.
#[derive(Clone)]
pub struct Reader<'a> {
    buf: &'a Bytes,
    pos: usize,
    end: usize,
    short: ErrorCode,
}

impl<'a> Reader<'a> {
    /// A reader over all of `buf`; `short` is the error for reading past the end.
    pub fn new(buf: &'a Bytes, short: ErrorCode) -> Self {
        Reader {
            buf,
            pos: 0,
            end: buf.len(),
            short,
        }
    }

    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    /// True when everything was read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos == self.end
    }

    /// The error this reader reports for truncation.
    pub fn short_error(&self) -> OfpError {
        OfpError::new(self.short, "truncated")
    }

    #[inline]
    fn need(&self, n: usize) -> Result<(), OfpError> {
        if self.remaining() < n {
            Err(self.short_error())
        } else {
            Ok(())
        }
    }

    /// Reads `N` bytes into an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], OfpError> {
        self.need(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(a)
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, OfpError> {
        Ok(self.array::<1>()?[0])
    }
    #[inline]
    pub fn u16(&mut self) -> Result<u16, OfpError> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    #[inline]
    pub fn u32(&mut self) -> Result<u32, OfpError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    #[inline]
    pub fn u64(&mut self) -> Result<u64, OfpError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Skips `n` bytes (padding).
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<(), OfpError> {
        self.need(n)?;
        self.pos += n;
        Ok(())
    }

    /// The next `n` bytes as a slice, consumed.
    #[inline]
    pub fn slice(&mut self, n: usize) -> Result<&'a [u8], OfpError> {
        self.need(n)?;
        let buf: &'a Bytes = self.buf;
        let s = &buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next `n` bytes as a shared [`Bytes`] (no copy), consumed.
    pub fn bytes(&mut self, n: usize) -> Result<Bytes, OfpError> {
        self.need(n)?;
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    /// Everything left as [`Bytes`] (no copy).
    pub fn rest(&mut self) -> Bytes {
        let n = self.remaining();
        self.bytes(n).unwrap_or_default()
    }

    /// A sub-reader over the next `n` bytes, with its own truncation error;
    /// `n` is checked against this reader with this reader's error.
    pub fn sub(&mut self, n: usize, short: ErrorCode) -> Result<Reader<'a>, OfpError> {
        self.need(n)?;
        let r = Reader {
            buf: self.buf,
            pos: self.pos,
            end: self.pos + n,
            short,
        };
        self.pos += n;
        Ok(r)
    }

    /// Peeks a big-endian u16 at `off` bytes from the cursor.
    #[inline]
    pub fn peek_u16(&self, off: usize) -> Result<u16, OfpError> {
        self.need(off + 2)?;
        let p = self.pos + off;
        Ok(u16::from_be_bytes([self.buf[p], self.buf[p + 1]]))
    }

    /// Fails with `code` unless everything was consumed.
    pub fn finish(&self, code: ErrorCode) -> Result<(), OfpError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(OfpError::new(code, "trailing bytes"))
        }
    }
}

/// Rounds `n` up to a multiple of 8, the alignment of OpenFlow structures.
#[inline]
pub const fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

/// Writes `n` zero bytes.
#[inline]
pub fn zeros(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, 0);
}

/// Pads `out` with zeros so that the bytes since `start` are a multiple of 8.
#[inline]
pub fn pad_to_8(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    zeros(out, pad8(len) - len);
}

/// Writes a placeholder u16 to fill later with [`patch_len`]; returns its offset.
#[inline]
pub fn len_placeholder(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.put_u16(0);
    at
}

/// Stores the length of everything written since `start` as a big-endian u16
/// at offset `at`. Lengths that do not fit in 16 bits are a caller bug
/// (OpenFlow messages are at most 64 KiB); they are saturated rather than
/// wrapped so the peer sees a length error, not garbage.
#[inline]
pub fn patch_len(out: &mut [u8], at: usize, start: usize) {
    let v = u16::try_from(out.len() - start).unwrap_or(u16::MAX);
    out[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// A fixed-size, NUL-padded string field (port names, descriptions).
///
/// Keeps the raw bytes so that decode -> encode is exact even for bytes that
/// are not UTF-8; [`FixedStr::as_str`] shows the text up to the first NUL.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedStr<const N: usize>(pub [u8; N]);

impl<const N: usize> FixedStr<N> {
    /// Builds from text, truncated to `N - 1` bytes so a NUL always ends it.
    pub fn new(s: &str) -> Self {
        let mut a = [0u8; N];
        let mut n = s.len().min(N.saturating_sub(1));
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        a[..n].copy_from_slice(&s.as_bytes()[..n]);
        FixedStr(a)
    }

    /// The text up to the first NUL (lossy for non-UTF-8 bytes).
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(N);
        String::from_utf8_lossy(&self.0[..end])
    }
}

impl<const N: usize> Default for FixedStr<N> {
    fn default() -> Self {
        FixedStr([0; N])
    }
}

impl<const N: usize> std::fmt::Debug for FixedStr<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl<const N: usize> std::fmt::Display for FixedStr<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str())
    }
}
