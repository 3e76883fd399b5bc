//! The endpoint's HTTP side: just enough HTTP/1.x for a scraper, with no
//! dependency.
//!
//! * `GET` and `HEAD` of `/metrics` (or `/`; a query string is ignored):
//!   200 with the text (HEAD: the same headers, no body). Another path:
//!   404. Another method: 405 with `Allow: GET, HEAD`. A request that is
//!   not HTTP: 400; a request head over 8 KiB: 431.
//! * One response per connection (`Connection: close`).
//! * Each connection has a thread of its own, so a client that is slow or
//!   idle delays no other; it has [`Limits::head_timeout`] to send its
//!   request head (a client trickling bytes is cut off at the deadline,
//!   not at each byte) and as long to take the response. At most
//!   [`Limits::max_connections`] are served at once; one more is answered
//!   503 and closed at once.
//!
//! Nothing a client sends can panic the server; a panic in rendering
//! would end that connection's thread with an error logged, not the
//! endpoint.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Sources;

/// The content type of the text format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// How the server bounds its clients.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time a client has to send its request head, and again to take the
    /// response.
    pub head_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            head_timeout: Duration::from_secs(5),
            max_connections: 32,
        }
    }
}

/// Serves the metrics of `sources` on `listener` until the process ends.
pub fn serve(
    listener: TcpListener,
    sources: Vec<Sources>,
    ovsdb: Option<std::sync::Arc<crate::database::Counters>>,
) {
    serve_with(listener, Limits::default(), move || {
        super::render(&sources, ovsdb.as_deref())
    });
}

/// Serves what `render` returns on `listener` until the process ends.
pub fn serve_with<F>(listener: TcpListener, limits: Limits, render: F)
where
    F: Fn() -> String + Send + Sync + 'static,
{
    let render = Arc::new(render);
    let live = Arc::new(AtomicUsize::new(0));
    let mut last_warning: Option<Instant> = None;
    for conn in listener.incoming() {
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                // EMFILE and the like: rest instead of spinning, and say
                // so at most every 10 s.
                if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                    tracing::warn!("metrics: accept: {e}; not accepting for 100 ms");
                    last_warning = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if live.load(Ordering::Acquire) >= limits.max_connections {
            // Refused without waiting on the client: one non-blocking try
            // to tell it why.
            let _ = conn.set_nonblocking(true);
            let _ = conn.write(&head(
                "503 Service Unavailable",
                "text/plain",
                0,
                "Retry-After: 1\r\n",
            ));
            continue;
        }
        let slot = Slot::take(&live);
        let render = render.clone();
        let spawned = std::thread::Builder::new()
            .name("metrics-conn".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _slot = slot;
                let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    handle(conn, limits.head_timeout, &*render)
                }));
                if served.is_err() {
                    tracing::error!("metrics: a connection's thread panicked");
                }
            });
        if let Err(e) = spawned {
            // The closure (and its slot and connection) is dropped.
            tracing::warn!("metrics: cannot start a thread for a connection: {e}");
        }
    }
}

/// One connection counted in `live` while this lives.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(live: &Arc<AtomicUsize>) -> Slot {
        live.fetch_add(1, Ordering::AcqRel);
        Slot(live.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// The metrics, with the body (GET) or without (HEAD).
    Metrics {
        body: bool,
    },
    Error(&'static str, &'static str),
}

const NOT_FOUND: Answer = Answer::Error("404 Not Found", "only /metrics is served\n");
const NOT_ALLOWED: Answer = Answer::Error("405 Method Not Allowed", "only GET and HEAD\n");
const BAD: Answer = Answer::Error("400 Bad Request", "not an HTTP request\n");
const TOO_LARGE: Answer = Answer::Error(
    "431 Request Header Fields Too Large",
    "request head over 8 KiB\n",
);

/// Reads one request from `conn` and answers it, all within `timeout`
/// for each direction.
fn handle(mut conn: TcpStream, timeout: Duration, render: &dyn Fn() -> String) {
    let answer = match read_head(&mut conn, timeout) {
        Ok(Some(head)) => parse(&head),
        Ok(None) => TOO_LARGE,
        // Timed out, closed, or reset: nobody to answer.
        Err(_) => return,
    };
    let response = match answer {
        Answer::Metrics { body } => {
            let text = render();
            let mut r = head("200 OK", CONTENT_TYPE, text.len(), "");
            if body {
                r.extend_from_slice(text.as_bytes());
            }
            r
        }
        Answer::Error(status, text) => {
            let extra = if status.starts_with("405") {
                "Allow: GET, HEAD\r\n"
            } else {
                ""
            };
            let mut r = head(status, "text/plain", text.len(), extra);
            r.extend_from_slice(text.as_bytes());
            r
        }
    };
    if write_all_by(&mut conn, &response, Instant::now() + timeout).is_err() {
        return;
    }
    // Closing with unread bytes would reset the connection and could lose
    // the response: say we are done, then read what is left for a moment.
    let _ = conn.shutdown(Shutdown::Write);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match conn.read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
}

/// The status line and headers of a response.
fn head(status: &str, content_type: &str, len: usize, extra: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n\
         Connection: close\r\n{extra}\r\n"
    )
    .into_bytes()
}

/// Reads up to the end of the request head (an empty line), within
/// `timeout` from now in all. `None`: over [`MAX_HEAD`] bytes.
fn read_head(conn: &mut TcpStream, timeout: Duration) -> std::io::Result<Option<Vec<u8>>> {
    let deadline = Instant::now() + timeout;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = head_end(&buf) {
            buf.truncate(end);
            return Ok(Some(buf));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        conn.set_read_timeout(Some(left))?;
        match conn.read(&mut chunk) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Where the request head ends (after its empty line), if it has.
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What a request head asks for.
fn parse(head: &[u8]) -> Answer {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let Ok(line) = std::str::from_utf8(line) else {
        return BAD;
    };
    let mut words = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return BAD;
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || target.is_empty() {
        return BAD;
    }
    let body = match method {
        "GET" => true,
        "HEAD" => false,
        _ => return NOT_ALLOWED,
    };
    let path = target.split('?').next().unwrap_or_default();
    match path {
        "/metrics" | "/" => Answer::Metrics { body },
        _ => NOT_FOUND,
    }
}

/// Writes all of `data` before `deadline`.
fn write_all_by(conn: &mut TcpStream, mut data: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !data.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        conn.set_write_timeout(Some(left))?;
        match conn.write(data) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        assert_eq!(
            parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Answer::Metrics { body: true }
        );
        assert_eq!(
            parse(b"HEAD /metrics?x=1 HTTP/1.0\r\n\r\n"),
            Answer::Metrics { body: false }
        );
        assert_eq!(parse(b"GET / HTTP/1.0\n\n"), Answer::Metrics { body: true });
        assert_eq!(parse(b"GET /metricsx HTTP/1.1\r\n\r\n"), NOT_FOUND);
        assert_eq!(parse(b"GET /other HTTP/1.1\r\n\r\n"), NOT_FOUND);
        assert_eq!(parse(b"POST /metrics HTTP/1.1\r\n\r\n"), NOT_ALLOWED);
        assert_eq!(parse(b"DELETE / HTTP/1.1\r\n\r\n"), NOT_ALLOWED);
        for bad in [
            &b"GET /metrics\r\n\r\n"[..],
            b"GET  /metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1 x\r\n\r\n",
            b"GET /metrics SPDY/3\r\n\r\n",
            b"\xff\xfe /metrics HTTP/1.1\r\n\r\n",
            b"\r\n\r\n",
            b"",
        ] {
            assert_eq!(parse(bad), BAD, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn head_ends_at_the_first_empty_line() {
        assert_eq!(head_end(b"GET / HTTP/1.0\r\n\r\nbody"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.0\n\nbody"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.0\r\nHost: x\r\n"), None);
        assert_eq!(head_end(b""), None);
    }

    /// A server on a free loopback port answering "m 1\n".
    fn server(limits: Limits) -> std::net::SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || serve_with(l, limits, || "m 1\n".to_string()));
        addr
    }

    fn exchange(addr: std::net::SocketAddr, req: &[u8]) -> String {
        try_exchange(addr, req).unwrap()
    }

    fn try_exchange(addr: std::net::SocketAddr, req: &[u8]) -> std::io::Result<String> {
        let mut s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(req)?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    }

    #[test]
    fn answers_get_head_404_405_431() {
        let addr = server(Limits::default());
        let r = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: text/plain; version=0.0.4"), "{r}");
        assert!(
            r.ends_with("Content-Length: 4\r\nConnection: close\r\n\r\nm 1\n"),
            "{r}"
        );
        let r = exchange(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(
            r.ends_with("Content-Length: 4\r\nConnection: close\r\n\r\n"),
            "{r}"
        );
        let r = exchange(addr, b"GET /nope HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
        let r = exchange(addr, b"PUT /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 405 "), "{r}");
        assert!(r.contains("\r\nAllow: GET, HEAD\r\n"), "{r}");
        let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        big.resize(MAX_HEAD + 100, b'a');
        let r = exchange(addr, &big);
        assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
        let r = exchange(addr, b"hello\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 400 "), "{r}");
    }

    #[test]
    fn idle_and_trickling_clients_delay_no_scrape() {
        let addr = server(Limits {
            head_timeout: Duration::from_millis(1500),
            max_connections: 4,
        });
        // One client connects and says nothing; another sends a byte at a
        // time without ever finishing its head.
        let idle = TcpStream::connect(addr).unwrap();
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.write_all(b"GET /metr").unwrap();
        let t = Instant::now();
        let r = exchange(addr, b"GET /metrics HTTP/1.0\r\n\r\n");
        assert!(r.ends_with("m 1\n"), "{r}");
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        // The trickler is cut off at the deadline, not kept alive by its
        // bytes.
        let t = Instant::now();
        slow.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 64];
        let mut closed = false;
        while t.elapsed() < Duration::from_secs(4) {
            if slow.write_all(b"i").is_err() {
                closed = true;
                break;
            }
            match slow.read(&mut buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Ok(n) => {
                    closed = n == 0;
                    break;
                }
                Err(_) => {
                    closed = true;
                    break;
                }
            }
        }
        assert!(
            closed && t.elapsed() < Duration::from_secs(3),
            "{:?}",
            t.elapsed()
        );
        drop(idle);
    }

    #[test]
    fn connections_over_the_cap_get_503_at_once() {
        let addr = server(Limits {
            head_timeout: Duration::from_secs(3),
            max_connections: 2,
        });
        let _a = TcpStream::connect(addr).unwrap();
        let _b = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // (Read without sending: a refused request is not read, and
        // closing over unread bytes would reset the connection.)
        let t = Instant::now();
        let r = exchange(addr, b"");
        assert!(r.starts_with("HTTP/1.1 503 "), "{r}");
        assert!(t.elapsed() < Duration::from_secs(1));
        // Once they are gone, scrapes are served again.
        drop((_a, _b));
        let t = Instant::now();
        loop {
            // (Refused while the two are let go: a 503, or a reset.)
            let r = try_exchange(addr, b"GET /metrics HTTP/1.0\r\n\r\n");
            if r.as_ref().is_ok_and(|r| r.ends_with("m 1\n")) {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(2), "{r:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
