//! Certificates for tests: a CA and identities it signs, written as PEM
//! files, so tests run TLS for real without shipping keys.

use std::path::Path;

use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair};

use crate::Files;

/// A certificate authority that can sign identities.
pub struct Ca {
    cert: Certificate,
    key: KeyPair,
}

impl Ca {
    /// A new self-signed CA called `name`.
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().expect("key generation");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("self-signed CA");
        Ca { cert, key }
    }

    /// Writes `DIR/NAME-key.pem`, `DIR/NAME-cert.pem` (signed by this CA,
    /// valid for `localhost` and 127.0.0.1) and `DIR/NAME-ca.pem` (this
    /// CA), and returns them as [`Files`].
    pub fn identity(&self, dir: &Path, name: &str) -> Files {
        let key = KeyPair::generate().expect("key generation");
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .expect("params");
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("signing");
        let files = Files {
            private_key: dir.join(format!("{name}-key.pem")),
            certificate: dir.join(format!("{name}-cert.pem")),
            ca_cert: dir.join(format!("{name}-ca.pem")),
        };
        std::fs::write(&files.private_key, key.serialize_pem()).expect("write key");
        std::fs::write(&files.certificate, cert.pem()).expect("write cert");
        std::fs::write(&files.ca_cert, self.cert.pem()).expect("write CA");
        files
    }
}
