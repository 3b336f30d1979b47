//! `rediss://` for `tumbler bench`: the client side of TLS, with the options redis-cli takes
//! (`--cacert`, `--cert`/`--key`, `--insecure`, `--sni`).
//!
//! rustls on the `ring` provider, as the server uses (server/src/io/net/tls.rs): no OpenSSL.
//! Without `--cacert` the system's CA bundle is read from `SSL_CERT_FILE` or the usual
//! distribution paths, so a server with a public certificate needs no option; a test or
//! private CA is given with `--cacert`, as redis-cli wants it.
//!
//! The handshake is completed when a connection is made, before the clock starts, so a
//! certificate that does not verify is one error before the run, not an error per request.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, StreamOwned};

/// Where distributions keep the CA bundle (Debian/Ubuntu/Alpine, Fedora/RHEL, openSUSE,
/// macOS with Homebrew's OpenSSL), tried in order when `--cacert` is not given.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The TLS options of one bench run, shared by every `rediss://` URL.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub insecure: bool,
    pub sni: Option<String>,
}

impl TlsOptions {
    pub fn any(&self) -> bool {
        self.cacert.is_some()
            || self.cert.is_some()
            || self.key.is_some()
            || self.insecure
            || self.sni.is_some()
    }

    /// The rustls client configuration; a bad file is one line naming it.
    pub fn config(&self) -> Result<Arc<ClientConfig>, String> {
        let provider = Arc::new(ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
        } else {
            builder.with_root_certificates(self.roots()?)
        };
        let config = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert, "--cert")?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| format!("--key {}: no private key read: {e}", key.display()))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("--cert/--key: {e}"))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => return Err("--cert and --key go together".into()),
        };
        Ok(Arc::new(config))
    }

    fn roots(&self) -> Result<RootCertStore, String> {
        let (path, what) =
            match &self.cacert {
                Some(p) => (p.clone(), "--cacert"),
                None => {
                    let env = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
                    let found = env.or_else(|| {
                        SYSTEM_BUNDLES
                            .iter()
                            .map(PathBuf::from)
                            .find(|p| p.is_file())
                    });
                    match found {
                        Some(p) => (p, "system CA bundle"),
                        None => return Err(
                            "no CA bundle found on this system: give --cacert FILE (or --insecure)"
                                .into(),
                        ),
                    }
                }
            };
        let mut roots = RootCertStore::empty();
        for c in read_certs(&path, what)? {
            roots
                .add(c)
                .map_err(|e| format!("{what} {}: {e}", path.display()))?;
        }
        Ok(roots)
    }

    /// What a connection to `host` checks the certificate against (and sends as SNI, unless
    /// it is an IP address): `--sni` if given, else the URL's host.
    pub fn target(&self, config: &Arc<ClientConfig>, host: &str) -> Result<TlsTarget, String> {
        let name = self.sni.as_deref().unwrap_or(host);
        let name = ServerName::try_from(name.to_string())
            .map_err(|_| format!("\"{name}\" is not a valid TLS server name (see --sni)"))?;
        Ok(TlsTarget {
            config: config.clone(),
            name,
        })
    }
}

/// Every certificate in a PEM file; none is an error.
fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("{what} {}: {e}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in the file"));
    }
    Ok(certs)
}

/// How to wrap connections to one server.
#[derive(Debug, Clone)]
pub struct TlsTarget {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

/// A TLS stream for the blocking administrative client.
pub type BlockingStream = StreamOwned<ClientConnection, TcpStream>;

impl TlsTarget {
    /// Wraps a blocking connection, handshake done (its read timeout bounds the wait).
    pub fn wrap_blocking(&self, mut tcp: TcpStream) -> Result<BlockingStream, String> {
        let mut conn = ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(|e| format!("TLS: {e}"))?;
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp)
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
        }
        // TLS 1.3 sends the server's verdict on a client certificate after the client's
        // handshake is over; it surfaces on the first read.
        Ok(StreamOwned::new(conn, tcp))
    }

    /// Wraps a load connection, handshake done.
    pub async fn wrap(
        &self,
        tcp: tokio::net::TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
        tokio_rustls::TlsConnector::from(self.config.clone())
            .connect(self.name.clone(), tcp)
            .await
            .map_err(|e| format!("TLS handshake failed: {e}"))
    }
}

/// `--insecure`: any certificate is accepted, but the handshake's signatures are still
/// checked against the certificate presented (so the session keys are the server's).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// An I/O error as the user should read it. A server that refuses the client's certificate
/// (or its absence) says so with an alert after the client's TLS 1.3 handshake is over, so
/// it arrives on the first command; it is named for what it means.
pub fn describe(e: &std::io::Error) -> String {
    use rustls::AlertDescription as A;
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::AlertReceived(A::CertificateRequired)) => {
            "the server requires a client certificate (give --cert FILE --key FILE)".into()
        }
        Some(rustls::Error::AlertReceived(a)) => {
            format!("the server refused the TLS connection (alert {a:?})")
        }
        _ => e.to_string(),
    }
}
