//! Cutting a byte stream into JSON values.
//!
//! JSON-RPC as Open vSwitch speaks it puts JSON objects one after another
//! on a stream with nothing between them (whitespace is allowed and
//! ignored). The [`Framer`] finds where each top-level value ends by
//! itself, tracking strings, escapes and nesting depth byte by byte, and
//! only then hands that one slice to `serde_json`. This is why its memory
//! is bounded: a message longer than [`Limits::max_message`] is an error as
//! soon as the framer has seen that many bytes of it, without buffering
//! the rest, and nesting deeper than [`Limits::max_depth`] is an error at
//! the bracket that goes too deep (before any recursive parser sees it).
//!
//! Contract:
//! * A top-level value must be an object or an array (a bare number or
//!   string cannot be delimited on a stream); anything else is
//!   [`FrameError::Syntax`].
//! * Values completed before an error are delivered first, then the error
//!   once; after it the framer ignores input and [`Framer::next`] returns
//!   `None`. The stream's owner is to close the connection: there is no
//!   way to find the next message boundary in a broken stream.
//! * What the framer holds is the bytes given to [`Framer::push`] that
//!   belong to values not yet taken with [`Framer::next`]; a caller that
//!   pushes bounded reads and drains `next` after each holds at most one
//!   read plus one partial message (under `max_message`).
//! * It never panics on input (the unit and property tests feed it
//!   garbage and every split of a stream).

use std::collections::VecDeque;
use std::fmt;

use serde_json::Value;

/// serde_json refuses values nested this deep or deeper; the framer's own
/// depth limit is kept below it so that the framer, not serde, says why.
pub const SERDE_DEPTH_LIMIT: usize = 127;

/// The framer's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of one message (from its first bracket to its last).
    pub max_message: usize,
    /// Most nested objects and arrays in one message (the top level counts
    /// as 1). Values above [`SERDE_DEPTH_LIMIT`] are taken as it.
    pub max_depth: usize,
}

impl Default for Limits {
    /// 64 MiB and 64 levels: a large OVSDB transaction or monitor reply
    /// fits; the deepest OVSDB value (a map of sets of uuids inside an
    /// operation inside a transaction) is around ten levels.
    fn default() -> Limits {
        Limits {
            max_message: 64 << 20,
            max_depth: 64,
        }
    }
}

/// Why a stream cannot be framed any further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A message is longer than the limit (bytes).
    TooLong { limit: usize },
    /// A message nests deeper than the limit.
    TooDeep { limit: usize },
    /// Bytes that cannot start a top-level value.
    Syntax(String),
    /// A delimited value that is not valid JSON (serde_json's words).
    Json(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLong { limit } => {
                write!(f, "message longer than {limit} bytes")
            }
            FrameError::TooDeep { limit } => {
                write!(f, "message nested more than {limit} levels deep")
            }
            FrameError::Syntax(s) => write!(f, "syntax error: {s}"),
            FrameError::Json(s) => write!(f, "invalid JSON: {s}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// The incremental splitter (see the module docs).
#[derive(Debug)]
pub struct Framer {
    limits: Limits,
    /// Bytes of complete values not yet taken (from `head`), then the
    /// current partial value.
    buf: Vec<u8>,
    head: usize,
    /// Lengths of the complete values at the front of `buf[head..]`.
    ready: VecDeque<usize>,
    /// Bytes of the partial value (at the end of `buf`); 0 between values.
    partial: usize,
    depth: usize,
    in_string: bool,
    escape: bool,
    error: Option<FrameError>,
    failed: bool,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Framer {
    pub fn new(limits: Limits) -> Framer {
        let limits = Limits {
            max_message: limits.max_message.max(2),
            max_depth: limits.max_depth.clamp(1, SERDE_DEPTH_LIMIT),
        };
        Framer {
            limits,
            buf: Vec::new(),
            head: 0,
            ready: VecDeque::new(),
            partial: 0,
            depth: 0,
            in_string: false,
            escape: false,
            error: None,
            failed: false,
        }
    }

    /// The limits in force (after clamping).
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether the stream is broken (an error was found, delivered or not).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Bytes held: complete values not yet taken plus the partial one.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.head
    }

    /// Whether the stream ends between values (nothing partial is held):
    /// an end of stream here is clean.
    pub fn is_idle(&self) -> bool {
        self.partial == 0
    }

    fn fail(&mut self, e: FrameError) {
        // Drop the partial value: it will never be delivered.
        let keep = self.buf.len() - self.partial;
        self.buf.truncate(keep);
        self.partial = 0;
        self.error = Some(e);
        self.failed = true;
    }

    /// Adds bytes from the stream.
    pub fn push(&mut self, data: &[u8]) {
        let mut i = 0;
        // Start (in `data`) of the bytes of the current value not yet
        // copied into `buf`.
        let mut seg = 0;
        while i < data.len() && !self.failed {
            if self.partial == 0 && seg == i {
                // Between values.
                let b = data[i];
                if is_ws(b) {
                    i += 1;
                    seg = i;
                    continue;
                }
                if b != b'{' && b != b'[' {
                    self.fail(FrameError::Syntax(format!(
                        "expected '{{' or '[' to begin a message, found {}",
                        shown(b)
                    )));
                    return;
                }
                self.depth = 0;
                self.in_string = false;
                self.escape = false;
            }
            let b = data[i];
            if self.in_string {
                if self.escape {
                    self.escape = false;
                } else if b == b'"' {
                    self.in_string = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else {
                    // Skip to the next byte that matters in a string.
                    let skip = data[i..]
                        .iter()
                        .position(|&c| c == b'"' || c == b'\\')
                        .unwrap_or(data.len() - i);
                    i += skip;
                    continue;
                }
                i += 1;
                continue;
            }
            i += 1;
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > self.limits.max_depth {
                        self.fail(FrameError::TooDeep {
                            limit: self.limits.max_depth,
                        });
                        return;
                    }
                }
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        let len = self.partial + (i - seg);
                        if len > self.limits.max_message {
                            self.fail(FrameError::TooLong {
                                limit: self.limits.max_message,
                            });
                            return;
                        }
                        self.buf.extend_from_slice(&data[seg..i]);
                        self.ready.push_back(len);
                        self.partial = 0;
                        seg = i;
                    }
                }
                _ => {}
            }
        }
        if self.failed {
            return;
        }
        let rest = data.len() - seg;
        if self.partial + rest > self.limits.max_message {
            self.fail(FrameError::TooLong {
                limit: self.limits.max_message,
            });
            return;
        }
        self.buf.extend_from_slice(&data[seg..]);
        self.partial += rest;
    }

    /// The length in bytes of the next complete value, if there is one.
    pub fn next_len(&self) -> Option<usize> {
        self.ready.front().copied()
    }

    /// The next complete value's bytes, not parsed (the caller parses
    /// them, where it likes: [`parse`]); `None` when there is none.
    pub fn next_raw(&mut self) -> Option<Vec<u8>> {
        let len = self.ready.pop_front()?;
        let bytes = self.buf[self.head..self.head + len].to_vec();
        self.consumed(len);
        Some(bytes)
    }

    fn consumed(&mut self, len: usize) {
        self.head += len;
        if self.head > 4096 && self.head * 2 > self.buf.len() {
            self.buf.drain(..self.head);
            self.head = 0;
        } else if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        }
    }

    /// The next complete value, or the error that ended the stream (once),
    /// or `None` when more input is needed (or after the error).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<Value, FrameError>> {
        let Some(len) = self.ready.pop_front() else {
            return self.error.take().map(Err);
        };
        let slice = &self.buf[self.head..self.head + len];
        let parsed = serde_json::from_slice(slice);
        self.consumed(len);
        match parsed {
            Ok(v) => Some(Ok(v)),
            Err(e) => {
                // The stream is broken from here on: drop everything else.
                self.ready.clear();
                self.buf.clear();
                self.head = 0;
                self.partial = 0;
                self.error = None;
                self.failed = true;
                Some(Err(FrameError::Json(e.to_string())))
            }
        }
    }
}

/// Parses one value's bytes from [`Framer::next_raw`] (its depth was
/// checked by the framer).
pub fn parse(bytes: &[u8]) -> Result<Value, FrameError> {
    serde_json::from_slice(bytes).map_err(|e| FrameError::Json(e.to_string()))
}

fn shown(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn framer(max_message: usize, max_depth: usize) -> Framer {
        Framer::new(Limits {
            max_message,
            max_depth,
        })
    }

    fn drain(f: &mut Framer) -> Vec<Result<Value, FrameError>> {
        std::iter::from_fn(|| f.next()).collect()
    }

    #[test]
    fn concatenated_values_with_or_without_whitespace() {
        let mut f = Framer::new(Limits::default());
        f.push(br#"{"a":1}{"b":"}{]\"x"} [1,[2]]"#);
        f.push(b"\n\r\t {\"c\":");
        assert_eq!(
            drain(&mut f),
            vec![
                Ok(json!({"a": 1})),
                Ok(json!({"b": "}{]\"x"})),
                Ok(json!([1, [2]]))
            ]
        );
        assert!(!f.is_idle());
        f.push(b"null}");
        assert_eq!(drain(&mut f), vec![Ok(json!({"c": null}))]);
        assert!(f.is_idle());
        assert_eq!(f.buffered(), 0);
    }

    #[test]
    fn a_message_at_the_limit_passes_and_one_byte_more_fails_without_being_held() {
        // {"a":"xxxx"} is 12 bytes.
        let mut f = framer(12, 8);
        f.push(br#"{"a":"xxxx"}"#);
        assert_eq!(drain(&mut f), vec![Ok(json!({"a": "xxxx"}))]);
        let mut f = framer(12, 8);
        f.push(br#"{"a":"xxxxx"}"#);
        assert_eq!(drain(&mut f), vec![Err(FrameError::TooLong { limit: 12 })]);
        // A partial message is refused as soon as it is over the limit,
        // and nothing of it is kept.
        let mut f = framer(1000, 8);
        f.push(br#"{"ok":1}{"a":""#);
        for _ in 0..100 {
            f.push(&[b'x'; 100]);
            assert!(f.buffered() <= 1000 + 8);
        }
        assert!(f.failed());
        assert_eq!(f.buffered(), 8, "only the complete value is held");
        assert_eq!(
            drain(&mut f),
            vec![
                Ok(json!({"ok": 1})),
                Err(FrameError::TooLong { limit: 1000 })
            ]
        );
        assert!(f.next().is_none());
        f.push(b"{}");
        assert!(f.next().is_none(), "a failed framer takes no more input");
    }

    #[test]
    fn nesting_past_the_limit_fails_at_the_bracket() {
        let mut f = framer(1 << 20, 3);
        f.push(b"[[[]]] [[[[");
        assert_eq!(
            drain(&mut f),
            vec![Ok(json!([[[]]])), Err(FrameError::TooDeep { limit: 3 })]
        );
        // Brackets inside strings do not count.
        let mut f = framer(1 << 20, 1);
        f.push(br#"{"a":"[[[{{{"}"#);
        assert_eq!(drain(&mut f), vec![Ok(json!({"a": "[[[{{{"}))]);
    }

    #[test]
    fn the_depth_limit_stays_within_serde_json() {
        let mut f = framer(1 << 20, 10_000);
        assert_eq!(f.limits().max_depth, SERDE_DEPTH_LIMIT);
        let n = SERDE_DEPTH_LIMIT;
        let deep = format!("{}{}", "[".repeat(n), "]".repeat(n));
        f.push(deep.as_bytes());
        assert!(matches!(f.next(), Some(Ok(_))), "serde takes {n} levels");
        let deeper = format!("{}{}", "[".repeat(n + 1), "]".repeat(n + 1));
        f.push(deeper.as_bytes());
        assert_eq!(
            f.next(),
            Some(Err(FrameError::TooDeep {
                limit: SERDE_DEPTH_LIMIT
            }))
        );
    }

    #[test]
    fn garbage_is_an_error_named_by_its_first_byte() {
        for (input, want) in [
            (&b"42"[..], "'4'"),
            (b"\"s\"", "'\"'"),
            (b"\x00", "byte 0x00"),
            (b"}", "'}'"),
            (b"{} x", "'x'"),
        ] {
            let mut f = framer(100, 8);
            f.push(input);
            let got = drain(&mut f);
            let Some(Err(FrameError::Syntax(s))) = got.last() else {
                panic!("{input:?}: {got:?}");
            };
            assert!(s.contains(want), "{input:?}: {s}");
        }
    }

    #[test]
    fn a_delimited_value_that_is_not_json_ends_the_stream() {
        let mut f = framer(100, 8);
        f.push(b"{\"a\" 1} {\"b\":2}");
        let got = drain(&mut f);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(matches!(&got[0], Err(FrameError::Json(_))));
        assert!(f.failed());
        // Mismatched brackets and bad UTF-8 are serde's to find.
        for bad in [&b"{]"[..], b"[}", b"{\"\xff\":1}", b"[1,]"] {
            let mut f = framer(100, 8);
            f.push(bad);
            assert!(
                matches!(f.next(), Some(Err(FrameError::Json(_)))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn escapes_split_across_pushes() {
        let mut f = Framer::new(Limits::default());
        for b in br#"{"k":"a\\\"b\u0041"}"# {
            f.push(&[*b]);
        }
        assert_eq!(drain(&mut f), vec![Ok(json!({"k": "a\\\"bA"}))]);
    }
}
