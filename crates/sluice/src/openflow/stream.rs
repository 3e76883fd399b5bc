//! One OpenFlow connection's socket, whatever its transport (TCP, Unix,
//! TLS over TCP), non-blocking.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

pub(super) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<tls::TlsStream>),
}

impl Stream {
    pub(super) fn fd(&self) -> i32 {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.as_raw_fd(),
        }
    }

    pub(super) fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }

    pub(super) fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// Whether the transport holds bytes of its own to send (TLS records).
    pub(super) fn wants_write(&self) -> bool {
        matches!(self, Stream::Tls(s) if s.wants_write())
    }

    pub(super) fn flush_transport(&mut self) {
        if let Stream::Tls(s) = self {
            let _ = s.flush_tls();
        }
    }
}
