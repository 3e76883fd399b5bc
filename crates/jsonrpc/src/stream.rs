//! One non-blocking byte stream, whatever its transport: a Unix socket,
//! TCP, or TLS over TCP (the `tls` crate's [`tls::TlsStream`]).
//!
//! Contract: the socket is non-blocking; `read` and `write` return
//! `WouldBlock` when the socket would block, `read` returns `Ok(0)` at the
//! end of the stream. TLS keeps records of its own (handshake, data it took
//! but could not send yet): [`Stream::wants_write`] says so, and
//! [`Stream::flush_transport`] sends them, so a `poll(2)` loop knows to
//! ask for POLLOUT even when the caller has nothing queued. The sluice
//! daemon's OpenFlow connections use this type too.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::Remote;

/// A non-blocking stream.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<tls::TlsStream>),
}

impl Stream {
    /// Connects to an active remote (blocking until connected, then
    /// non-blocking). `ssl:` needs a client configuration; its server name
    /// is the address (Open vSwitch checks the CA, not the name).
    pub fn connect(remote: &Remote, identity: Option<&tls::Tls>) -> io::Result<Stream> {
        let s = match remote {
            Remote::Unix(p) => Stream::Unix(UnixStream::connect(p)?),
            Remote::Tcp(a) => {
                let s = TcpStream::connect(a)?;
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }
            Remote::Ssl(a) => {
                let config = identity.map(|t| t.client.clone()).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "ssl: needs a TLS identity (private key, certificate, CA)",
                    )
                })?;
                let s = TcpStream::connect(a)?;
                let _ = s.set_nodelay(true);
                s.set_nonblocking(true)?;
                let name = rustls_pki_types::ServerName::IpAddress(a.ip().into());
                Stream::Tls(Box::new(tls::TlsStream::client(s, config, name)?))
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{remote}: a passive remote cannot be connected to"),
                ))
            }
        };
        s.set_nonblocking()?;
        Ok(s)
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(true),
            Stream::Unix(s) => s.set_nonblocking(true),
            Stream::Tls(_) => Ok(()),
        }
    }

    pub fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.as_raw_fd(),
        }
    }

    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }

    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// Whether the transport holds bytes of its own to send (TLS records).
    pub fn wants_write(&self) -> bool {
        matches!(self, Stream::Tls(s) if s.wants_write())
    }

    /// Sends the transport's own bytes (TLS records) as far as the socket
    /// takes them.
    pub fn flush_transport(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => match s.flush_tls() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                r => r,
            },
            _ => Ok(()),
        }
    }
}
