//! TLS with rustls: redis-server 7's `tls-*` directives turned into a
//! `rustls::ServerConfig`, the handshake, and the reload on CONFIG SET.
//!
//! rustls runs on the `ring` provider, so the binary has no OpenSSL and the musl build stays
//! static. What rustls cannot do that OpenSSL-based Redis accepts:
//! - TLSv1 and TLSv1.1 in `tls-protocols`: warned about and left out (rustls has 1.2 and
//!   1.3 only); asking for nothing else is an error.
//! - OpenSSL cipher rules in `tls-ciphers` (`HIGH:!aNULL`, `DEFAULT`) and cipher names
//!   rustls does not implement (CBC, RSA key exchange): each is warned about and ignored;
//!   the names rustls has (`ECDHE-RSA-AES256-GCM-SHA384`, ...) restrict the TLS 1.2 suites.
//! - `tls-dh-params-file`: rustls only does ECDHE; warned about and ignored.
//! - `tls-session-cache-timeout`: the rustls session cache evicts by size only.
//! - `tls-key-file-pass`: encrypted private keys cannot be read; setting it is an error.
//!
//!
//! Certificates are taken as OpenSSL takes them (X.509 v1, no subjectAltName, chains in the
//! CA file, PKCS#1, PKCS#8 and SEC1 keys), not as webpki would: server/src/io/net/x509.rs.
//!
//! Redis reads certificates when TLS is configured and again on every CONFIG SET of a
//! `tls-*` parameter, never on its own; so does Tumbler. A failed reload leaves the running
//! configuration in place and CONFIG SET answers Redis' error.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache};
use rustls::{ServerConfig, SupportedCipherSuite};

use crate::config::Config;
use crate::state::Shared;

/// OpenSSL's names for the TLS 1.2 suites rustls implements, and rustls' names for them.
const TLS12_NAMES: &[(&str, &str)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// The `tls-*` parameters whose CONFIG SET rebuilds the TLS configuration.
pub fn is_tls_param(name: &str) -> bool {
    name.starts_with("tls-") && name != "tls-port"
}

fn suite_name(s: &SupportedCipherSuite) -> String {
    format!("{:?}", s.suite())
}

/// Picks the cipher suites: `tls-ciphersuites` (TLS 1.3, IANA names as OpenSSL spells
/// them) and `tls-ciphers` (TLS 1.2, OpenSSL names). Empty means rustls' defaults.
fn pick_suites(cfg: &Config, warnings: &mut Vec<String>) -> Vec<SupportedCipherSuite> {
    let all = ring::default_provider().cipher_suites;
    let (v13, v12): (Vec<SupportedCipherSuite>, Vec<SupportedCipherSuite>) = all
        .into_iter()
        .partition(|s| matches!(s, SupportedCipherSuite::Tls13(_)));
    let split = |s: &str| -> Vec<String> {
        s.split([':', ',', ' '])
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut chosen13 = Vec::new();
    for name in split(cfg.get(crate::config::key::TLS_CIPHERSUITES)) {
        // OpenSSL: TLS_AES_128_GCM_SHA256; rustls: TLS13_AES_128_GCM_SHA256.
        let want = name.replacen("TLS_", "TLS13_", 1);
        match v13
            .iter()
            .find(|s| suite_name(s).eq_ignore_ascii_case(&want))
        {
            Some(s) => chosen13.push(*s),
            None => warnings.push(format!(
                "tls-ciphersuites: '{name}' is not a TLS 1.3 suite rustls implements; ignored"
            )),
        }
    }
    let mut chosen12 = Vec::new();
    for name in split(cfg.get(crate::config::key::TLS_CIPHERS)) {
        let rustls_name = TLS12_NAMES
            .iter()
            .find(|(o, r)| o.eq_ignore_ascii_case(&name) || r.eq_ignore_ascii_case(&name))
            .map(|(_, r)| *r);
        match rustls_name.and_then(|r| v12.iter().find(|s| suite_name(s) == r)) {
            Some(s) => chosen12.push(*s),
            None => warnings.push(format!(
                "tls-ciphers: '{name}' is an OpenSSL cipher rule or a cipher rustls does not implement; ignored"
            )),
        }
    }
    if chosen13.is_empty() {
        chosen13 = v13;
    }
    if chosen12.is_empty() {
        chosen12 = v12;
    }
    chosen13.into_iter().chain(chosen12).collect()
}

/// `tls-protocols`: "" means TLSv1.2 and TLSv1.3, as in Redis 7.
fn pick_versions(
    cfg: &Config,
    warnings: &mut Vec<String>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    let spec = cfg.get(crate::config::key::TLS_PROTOCOLS);
    if spec.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut out = Vec::new();
    for w in spec.split_whitespace() {
        match w.to_ascii_lowercase().as_str() {
            "tlsv1.3" => out.push(&rustls::version::TLS13),
            "tlsv1.2" => out.push(&rustls::version::TLS12),
            "tlsv1" | "tlsv1.1" => warnings.push(format!(
                "tls-protocols: {w} is not supported by rustls (TLSv1.2 and TLSv1.3 only); ignored"
            )),
            _ => return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into()),
        }
    }
    if out.is_empty() {
        return Err(
            "tls-protocols: none of the protocols is supported by rustls (TLSv1.2 and TLSv1.3 only)"
                .into(),
        );
    }
    Ok(out)
}

fn load_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("Failed to load certificate: {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "Failed to load certificate: {path}: no certificate found"
        ));
    }
    Ok(certs)
}

/// The CA certificates of `tls-ca-cert-file` and `tls-ca-cert-dir`.
fn load_roots(cfg: &Config) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut roots = Vec::new();
    let file = cfg.get(crate::config::key::TLS_CA_CERT_FILE);
    if !file.is_empty() {
        roots.extend(
            load_certs(file).map_err(|e| {
                format!("Failed to configure CA certificate(s) file/directory: {e}")
            })?,
        );
    }
    let dir = cfg.get(crate::config::key::TLS_CA_CERT_DIR);
    if !dir.is_empty() {
        // OpenSSL reads `<hash>.0` files; reading every certificate in the directory finds
        // the same ones (and does not need c_rehash).
        let entries = std::fs::read_dir(dir).map_err(|e| {
            format!("Failed to configure CA certificate(s) file/directory: {dir}: {e}")
        })?;
        for e in entries.flatten() {
            let p = e.path();
            if !p.is_file() {
                continue;
            }
            if let Ok(it) = CertificateDer::pem_file_iter(&p) {
                roots.extend(it.flatten());
            }
        }
    }
    Ok(roots)
}

/// Client certificates with no CA to check them against: every one is refused. Redis gets
/// here when CONFIG SET turns `tls-auth-clients` on without a CA (it checks for a CA only
/// when it rebuilds its TLS context, which that parameter does not do), and then refuses
/// every TLS client; so does Tumbler.
#[derive(Debug)]
struct RefuseAll(Vec<rustls::SignatureScheme>);

impl rustls::server::danger::ClientCertVerifier for RefuseAll {
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }
    fn verify_client_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ))
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("no CA configured".into()))
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("no CA configured".into()))
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.clone()
    }
}

/// Builds the server configuration from the `tls-*` parameters. `Err` is the reason, as
/// Redis logs it; the warnings list what rustls cannot honour.
pub fn build(cfg: &Config) -> Result<(Arc<ServerConfig>, Vec<String>), String> {
    build_checked(cfg, true)
}

/// [`build`]; `check_ca: false` skips Redis' "a CA is needed" check (see [`RefuseAll`]).
fn build_checked(cfg: &Config, check_ca: bool) -> Result<(Arc<ServerConfig>, Vec<String>), String> {
    let mut warnings = Vec::new();
    let cert_file = cfg.get(crate::config::key::TLS_CERT_FILE);
    let key_file = cfg.get(crate::config::key::TLS_KEY_FILE);
    if cert_file.is_empty() {
        return Err("No tls-cert-file configured!".into());
    }
    if key_file.is_empty() {
        return Err("No tls-key-file configured!".into());
    }
    if !cfg.get(crate::config::key::TLS_KEY_FILE_PASS).is_empty() {
        return Err("tls-key-file-pass: encrypted private keys are not supported by Tumbler's rustls TLS; decrypt the key (openssl pkey -in key.pem -out plain.pem)".into());
    }
    if !cfg.get(crate::config::key::TLS_DH_PARAMS_FILE).is_empty() {
        warnings
            .push("tls-dh-params-file is ignored: rustls uses ECDHE key exchange only".to_string());
    }
    let certs = load_certs(cert_file)?;
    let key = PrivateKeyDer::from_pem_file(Path::new(key_file))
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;

    let auth = cfg.get(crate::config::key::TLS_AUTH_CLIENTS);
    let has_ca = !cfg.get(crate::config::key::TLS_CA_CERT_FILE).is_empty()
        || !cfg.get(crate::config::key::TLS_CA_CERT_DIR).is_empty();
    if check_ca
        && (auth != "no"
            || cfg.get_bool(crate::config::key::TLS_CLUSTER)
            || cfg.get_bool(crate::config::key::TLS_REPLICATION))
        && !has_ca
    {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let provider = Arc::new(CryptoProvider {
        cipher_suites: pick_suites(cfg, &mut warnings),
        ..ring::default_provider()
    });
    let versions = pick_versions(cfg, &mut warnings)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols / tls-ciphers: {e}"))?;
    let builder = if auth == "no" {
        builder.with_no_client_auth()
    } else if !has_ca {
        warnings.push("tls-auth-clients is on but there is no tls-ca-cert-file or tls-ca-cert-dir: every TLS client will be refused".into());
        let schemes = provider
            .signature_verification_algorithms
            .supported_schemes();
        builder.with_client_cert_verifier(Arc::new(RefuseAll(schemes)))
    } else {
        let v = super::x509::ClientVerifier::new(
            load_roots(cfg)?,
            auth != "optional",
            provider.clone(),
        )
        .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
        builder.with_client_cert_verifier(Arc::new(v))
    };
    let cert = super::x509::server_cert(certs, key, &provider, cert_file, key_file)?;
    let mut sc = builder.with_cert_resolver(Arc::new(cert));
    sc.ignore_client_order = cfg.get_bool(crate::config::key::TLS_PREFER_SERVER_CIPHERS);
    if cfg.get_bool(crate::config::key::TLS_SESSION_CACHING) {
        sc.session_storage = ServerSessionMemoryCache::new(
            cfg.get_i64(crate::config::key::TLS_SESSION_CACHE_SIZE)
                .max(1) as usize,
        );
    } else {
        sc.session_storage = Arc::new(NoServerSessionStorage {});
        sc.send_tls13_tickets = 0;
    }
    Ok((Arc::new(sc), warnings))
}

/// CONFIG SET of a `tls-*` parameter while TLS listens: rebuild from `next` (re-reading the
/// certificate files) and swap it in for new connections. `Err` leaves the old one.
/// `check_ca` is false when only `tls-auth-clients` changed: Redis applies that one per
/// connection, without its "a CA is needed" check.
pub fn reload(shared: &Shared, next: &Config, check_ca: bool) -> Result<(), String> {
    if shared.tls.read().is_none() {
        return Ok(());
    }
    match build_checked(next, check_ca) {
        Ok((c, warnings)) => {
            for w in warnings {
                tracing::warn!("{w}");
            }
            *shared.tls.write() = Some(c);
            Ok(())
        }
        Err(e) => {
            tracing::warn!("Failed to configure TLS: {e}");
            Err(e)
        }
    }
}
