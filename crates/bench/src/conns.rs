//! TCP connections per second through a switch (the lab's `conntrack`
//! scenario): `conn-server` in one namespace host, `conn-client` in the
//! other. Each connection is a whole short exchange: the three-way
//! handshake, a small request from the client, a small response from the
//! server, then the close, the server first (as HTTP/1.0 does: the
//! client's end, which closes second, keeps no TIME_WAIT and so never
//! runs out of source ports; the server's TIME_WAITs cost no ports).
//!
//! Blocking sockets and one OS thread per concurrent connection loop: the
//! work per connection is a handful of system calls, so the client and
//! server cost little CPU beside the switch (the hosts share the lab's
//! CPUs with it), and there is no runtime to tune.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct ServerOptions {
    pub listen: SocketAddr,
    /// Listen on this many consecutive ports from `listen`'s.
    pub ports: u16,
    pub threads: usize,
    pub request: usize,
    pub response: usize,
    /// The server ends itself after this long (bounded even if nobody
    /// stops it).
    pub max_seconds: f64,
}

/// Accepts and answers until `max_seconds` have passed. Each thread
/// blocks in accept() on one of the listeners (`threads` spread over the
/// ports) and serves one connection at a time: read the request's bytes,
/// write the response, close.
pub fn serve(o: &ServerOptions) -> Result<String, String> {
    let mut listeners = Vec::new();
    for i in 0..o.ports.max(1) {
        let mut a = o.listen;
        a.set_port(o.listen.port() + i);
        listeners.push(Arc::new(
            TcpListener::bind(a).map_err(|e| format!("{a}: {e}"))?,
        ));
    }
    let response = Arc::new(vec![b'r'; o.response]);
    for t in 0..o.threads.max(listeners.len()) {
        let l = listeners[t % listeners.len()].clone();
        let response = response.clone();
        let request = o.request;
        std::thread::spawn(move || loop {
            if let Ok((s, _)) = l.accept() {
                let _ = answer(s, request, &response);
            }
        });
    }
    std::thread::sleep(Duration::from_secs_f64(o.max_seconds.max(0.0)));
    Ok(String::new())
}

fn answer(mut s: TcpStream, request: usize, response: &[u8]) -> io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; request.max(1)];
    s.read_exact(&mut buf[..request])?;
    s.write_all(response)?;
    // Dropping the socket closes it: FIN, the server first.
    Ok(())
}

pub struct ClientOptions {
    pub connect: SocketAddr,
    /// Loop i connects to `connect`'s port + i mod `ports`: the 4-tuples
    /// spread over several server ports, so the client's source ports
    /// are not reused within a run (a reused 4-tuple would reopen a
    /// tracked connection still in TIME_WAIT rather than commit a new one).
    pub ports: u16,
    pub concurrency: usize,
    pub seconds: f64,
    pub request: usize,
    pub response: usize,
    /// Per connect and per read.
    pub timeout: Duration,
}

#[derive(Default)]
struct Tally {
    done: u64,
    connect_failed: u64,
    exchange_failed: u64,
    /// Microseconds from connect() to the server's close seen, per
    /// completed connection.
    lat_us: Vec<u32>,
}

/// Runs `concurrency` connection loops for `seconds`; a loop starts no new
/// connection after that, and the rate is over the time until the last
/// loop finished. Returns one JSON object.
pub fn client(o: &ClientOptions) -> Result<String, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for i in 0..o.concurrency.max(1) {
        let stop = stop.clone();
        let mut addr = o.connect;
        addr.set_port(o.connect.port() + (i % o.ports.max(1) as usize) as u16);
        let (request, response, timeout) = (o.request, o.response, o.timeout);
        handles.push(std::thread::spawn(move || {
            let req = vec![b'q'; request];
            let mut buf = vec![0u8; response + 1];
            let mut t = Tally::default();
            while !stop.load(Ordering::Relaxed) {
                let c0 = Instant::now();
                let mut s = match TcpStream::connect_timeout(&addr, timeout) {
                    Ok(s) => s,
                    Err(_) => {
                        t.connect_failed += 1;
                        continue;
                    }
                };
                match exchange(&mut s, &req, &mut buf, response, timeout) {
                    Ok(()) => {
                        t.done += 1;
                        t.lat_us
                            .push(c0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                    }
                    Err(_) => t.exchange_failed += 1,
                }
            }
            t
        }));
    }
    std::thread::sleep(Duration::from_secs_f64(o.seconds.max(0.0)));
    stop.store(true, Ordering::Relaxed);
    let mut all = Tally::default();
    for h in handles {
        let t = h
            .join()
            .map_err(|_| "a client thread panicked".to_string())?;
        all.done += t.done;
        all.connect_failed += t.connect_failed;
        all.exchange_failed += t.exchange_failed;
        all.lat_us.extend(t.lat_us);
    }
    let secs = t0.elapsed().as_secs_f64();
    all.lat_us.sort_unstable();
    let pct = |p: f64| -> String {
        if all.lat_us.is_empty() {
            return "null".into();
        }
        let i = ((all.lat_us.len() - 1) as f64 * p).round() as usize;
        format!("{:.3}", all.lat_us[i] as f64 / 1000.0)
    };
    Ok(format!(
        "{{\"connections\": {}, \"conn_failures\": {}, \"connect_failures\": {}, \"seconds\": {:.3}, \"conns_per_s\": {:.0}, \"conn_p50_ms\": {}, \"conn_p99_ms\": {}, \"conn_max_ms\": {}}}\n",
        all.done,
        all.connect_failed + all.exchange_failed,
        all.connect_failed,
        secs,
        all.done as f64 / secs,
        pct(0.5),
        pct(0.99),
        pct(1.0),
    ))
}

/// Request out, the whole response in, the server's close seen, then our
/// close.
fn exchange(
    s: &mut TcpStream,
    req: &[u8],
    buf: &mut [u8],
    response: usize,
    timeout: Duration,
) -> io::Result<()> {
    s.set_read_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    s.write_all(req)?;
    let mut got = 0;
    loop {
        let n = s.read(&mut buf[got..])?;
        if n == 0 {
            break;
        }
        got += n;
        if got > response {
            return Err(io::Error::other("response too long"));
        }
    }
    if got != response {
        return Err(io::Error::other("response short"));
    }
    let _ = s.shutdown(Shutdown::Both);
    Ok(())
}
