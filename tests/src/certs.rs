//! Test certificates, generated per test with rcgen: a CA, a server certificate for
//! `localhost` and `127.0.0.1`, a client certificate from the same CA, and a client
//! certificate from another CA that the server does not trust. PEM files go to a fresh
//! temporary directory (removed on drop), as redis-server and redis-cli want files:
//! `ca.crt`, `server.crt`/`.key`, `client.crt`/`.key`, `rogue.crt`/`.key`, `rogue-ca.crt`.

use std::path::PathBuf;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

pub struct Certs {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// A client certificate signed by a CA the server does not trust.
    pub rogue_cert: PathBuf,
    pub rogue_key: PathBuf,
    /// That other CA's certificate (`rogue-ca.crt`): a trust store that is not the server's.
    pub rogue_ca: PathBuf,
    ca_cert: Certificate,
    ca_key: KeyPair,
}

fn ca(name: &str) -> (Certificate, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let k = KeyPair::generate().unwrap();
    let c = p.self_signed(&k).unwrap();
    (c, k)
}

fn leaf(cn: &str, client: bool, issuer: &Certificate, issuer_key: &KeyPair) -> (String, String) {
    let mut p =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.extended_key_usages = vec![if client {
        ExtendedKeyUsagePurpose::ClientAuth
    } else {
        ExtendedKeyUsagePurpose::ServerAuth
    }];
    let k = KeyPair::generate().unwrap();
    let c = p.signed_by(&k, issuer, issuer_key).unwrap();
    (c.pem(), k.serialize_pem())
}

impl Certs {
    pub fn new() -> Certs {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tumbler-certs-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let (ca_cert, ca_key) = ca("Tumbler Test CA");
        let (rogue_ca, rogue_ca_key) = ca("Rogue CA");
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let ca_path = write("ca.crt", &ca_cert.pem());
        let (sc, sk) = leaf("server", false, &ca_cert, &ca_key);
        let (cc, ck) = leaf("client", true, &ca_cert, &ca_key);
        let (rc, rk) = leaf("rogue", true, &rogue_ca, &rogue_ca_key);
        let rogue_ca_path = write("rogue-ca.crt", &rogue_ca.pem());
        Certs {
            ca: ca_path,
            server_cert: write("server.crt", &sc),
            server_key: write("server.key", &sk),
            client_cert: write("client.crt", &cc),
            client_key: write("client.key", &ck),
            rogue_cert: write("rogue.crt", &rc),
            rogue_key: write("rogue.key", &rk),
            rogue_ca: rogue_ca_path,
            dir,
            ca_cert,
            ca_key,
        }
    }

    /// Another server certificate from the same CA, with common name `cn` (for reloads).
    pub fn another_server_cert(&self, cn: &str) -> (PathBuf, PathBuf) {
        let (c, k) = leaf(cn, false, &self.ca_cert, &self.ca_key);
        let cp = self.dir.join(format!("{cn}.crt"));
        let kp = self.dir.join(format!("{cn}.key"));
        std::fs::write(&cp, c).unwrap();
        std::fs::write(&kp, k).unwrap();
        (cp, kp)
    }

    /// A rustls client configuration trusting the CA, with the client certificate
    /// (`with_cert`), the rogue one (`rogue`), or none.
    pub fn client_config(&self, with_cert: bool, rogue: bool) -> Arc<rustls::ClientConfig> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(&self.ca).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let b = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let cfg = if with_cert || rogue {
            let (c, k) = if rogue {
                (&self.rogue_cert, &self.rogue_key)
            } else {
                (&self.client_cert, &self.client_key)
            };
            let certs = CertificateDer::pem_file_iter(c)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_file(k).unwrap();
            b.with_client_auth_cert(certs, key).unwrap()
        } else {
            b.with_no_client_auth()
        };
        Arc::new(cfg)
    }

    pub fn path(p: &std::path::Path) -> &str {
        p.to_str().unwrap()
    }
}

impl Default for Certs {
    fn default() -> Self {
        Certs::new()
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
