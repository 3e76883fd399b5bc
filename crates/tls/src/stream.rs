//! A non-blocking TCP stream with TLS on top.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use rustls::{ClientConfig, ClientConnection, Connection, ServerConfig, ServerConnection};
use rustls_pki_types::ServerName;

/// TLS over a TCP socket the caller has made non-blocking. Plaintext
/// written before the handshake ends is held by rustls and sent after it.
pub struct TlsStream {
    sock: TcpStream,
    conn: Connection,
}

fn invalid(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsStream {
    /// The client side (we dialled `sock`).
    pub fn client(
        sock: TcpStream,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> io::Result<TlsStream> {
        let conn = ClientConnection::new(config, name).map_err(invalid)?;
        let mut s = TlsStream {
            sock,
            conn: conn.into(),
        };
        s.flush_tls()?;
        Ok(s)
    }

    /// The server side (we accepted `sock`).
    pub fn server(sock: TcpStream, config: Arc<ServerConfig>) -> io::Result<TlsStream> {
        let conn = ServerConnection::new(config).map_err(invalid)?;
        Ok(TlsStream {
            sock,
            conn: conn.into(),
        })
    }

    /// Whether the handshake is still going on.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Reads plaintext: `Ok(0)` at the end of the stream, `WouldBlock`
    /// when nothing is ready; a TLS failure (bad certificate, corrupt
    /// record) is `InvalidData`, after the alert is sent.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            match self.conn.read_tls(&mut self.sock) {
                Ok(0) => return Ok(0),
                Ok(_) => {
                    let r = self.conn.process_new_packets();
                    // Handshake replies, or the alert that says why not.
                    let flushed = self.flush_tls();
                    r.map_err(invalid)?;
                    flushed?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes plaintext (all of it unless rustls's buffer is full) and
    /// sends what the socket takes now; the rest waits for
    /// [`TlsStream::flush_tls`].
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.conn.writer().write(buf)?;
        match self.flush_tls() {
            Ok(()) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(n),
            Err(e) => Err(e),
        }
    }

    /// Whether TLS records wait for the socket.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Sends waiting TLS records until done or the socket would block
    /// (then `WouldBlock`).
    pub fn flush_tls(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl AsRawFd for TlsStream {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}
