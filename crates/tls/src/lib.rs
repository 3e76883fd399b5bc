//! TLS for OpenFlow connections, as Open vSwitch does it: every peer has a
//! private key and a certificate, and trusts one CA certificate; both ends
//! present their certificate and check the other's against the CA (mutual
//! authentication). Built on rustls (ring provider, TLS 1.2 and 1.3).
//!
//! Names: like Open vSwitch, a switch checks that a controller's
//! certificate is signed by the CA, not that it names the host dialled
//! (controllers are usually dialled by address and their certificates,
//! made with `ovs-pki` or by hand, rarely carry it). Every other check
//! (chain, validity dates, key usage, signatures) is rustls's own.
//!
//! [`TlsStream`] is a non-blocking TCP stream with TLS on top, shaped like
//! the plain streams it sits beside: `read` and `write` return
//! `WouldBlock` when the socket would block, and [`TlsStream::wants_write`]
//! says when TLS records (handshake, buffered data) wait for the socket to
//! be writable, so a `poll(2)` loop knows to ask for POLLOUT.

mod stream;
#[cfg(any(test, feature = "testpki"))]
pub mod testpki;

pub use stream::TlsStream;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// The three files of a TLS identity (Open vSwitch's `--private-key`,
/// `--certificate`, `--ca-cert`), all PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    pub private_key: PathBuf,
    pub certificate: PathBuf,
    pub ca_cert: PathBuf,
}

/// A loaded identity: the client and server configurations made from it.
#[derive(Debug, Clone)]
pub struct Tls {
    pub client: Arc<ClientConfig>,
    pub server: Arc<ServerConfig>,
}

/// A TLS set-up problem: which file (by its role) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// `private_key`, `certificate` or `ca_cert` (or `tls` for the whole).
    pub what: &'static str,
    pub problem: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.problem)
    }
}

impl std::error::Error for Error {}

fn err(what: &'static str, problem: impl Into<String>) -> Error {
    Error {
        what,
        problem: problem.into(),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(what, format!("{}: {e}", path.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(what, format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(err(
            what,
            format!("{}: no PEM certificate in it", path.display()),
        ));
    }
    Ok(certs)
}

impl Tls {
    /// Loads the files and builds both configurations, checking that the
    /// key belongs to the certificate.
    pub fn load(files: &Files) -> Result<Tls, Error> {
        let chain = certs("certificate", &files.certificate)?;
        let key = PrivateKeyDer::from_pem_file(&files.private_key).map_err(|e| {
            err(
                "private_key",
                format!("{}: {e}", files.private_key.display()),
            )
        })?;
        let mut roots = RootCertStore::empty();
        for c in certs("ca_cert", &files.ca_cert)? {
            roots
                .add(c)
                .map_err(|e| err("ca_cert", format!("{}: {e}", files.ca_cert.display())))?;
        }
        let roots = Arc::new(roots);

        let client_verifier =
            WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
                .build()
                .map_err(|e| err("ca_cert", e.to_string()))?;
        let server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| err("tls", e.to_string()))?
            .with_client_cert_verifier(client_verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| identity_error(files, e))?;

        let server_verifier = WebPkiServerVerifier::builder_with_provider(roots, provider())
            .build()
            .map_err(|e| err("ca_cert", e.to_string()))?;
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| err("tls", e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(CaOnly(server_verifier)))
            .with_client_auth_cert(chain, key)
            .map_err(|e| identity_error(files, e))?;
        Ok(Tls {
            client: Arc::new(client),
            server: Arc::new(server),
        })
    }
}

/// Says which file is at fault when rustls refuses the key and certificate.
fn identity_error(files: &Files, e: rustls::Error) -> Error {
    match e {
        rustls::Error::InvalidCertificate(c) => err(
            "certificate",
            format!(
                "{}: not usable ({c:?}); an X.509 v3 certificate is needed",
                files.certificate.display()
            ),
        ),
        rustls::Error::InconsistentKeys(_) => err(
            "private_key",
            format!(
                "{}: does not fit the certificate {}",
                files.private_key.display(),
                files.certificate.display()
            ),
        ),
        e => err(
            "private_key",
            format!("{}: {e}", files.private_key.display()),
        ),
    }
}

/// The server name to give rustls for `host` (an address or a DNS name;
/// see the module docs for why it is not checked against the certificate).
pub fn server_name(host: &str) -> Result<ServerName<'static>, Error> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| err("tls", format!("{host:?}: {e}")))
}

/// rustls's WebPKI verification with the name check left out (module docs).
#[derive(Debug)]
struct CaOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for CaOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests;
