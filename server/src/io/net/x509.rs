//! Certificates as OpenSSL takes them, for the server's own certificate and for client
//! certificates under `tls-auth-clients yes|optional`.
//!
//! rustls checks certificates with webpki, which accepts only what the Web PKI allows:
//! X.509 v3, with the extensions a browser expects. Redis links OpenSSL, which takes what
//! people actually make for Redis: `openssl x509 -req ... -CA ca.crt` without an extension
//! file (an X.509 v1 certificate; Redis' own `utils/gen-test-certs.sh` makes one), a
//! certificate without subjectAltName, a v1 root. A server that refuses to start, or a
//! handshake that fails, with material redis-server takes is not a drop-in; so Tumbler does
//! not let webpki near these certificates:
//!
//! - the server's certificate and key go into a [`CertifiedKey`] directly, with OpenSSL's
//!   own check that they belong together (`X509_check_private_key`: the key's public half is
//!   the certificate's), and nothing else, as OpenSSL checks nothing else;
//! - client certificates are verified by [`ClientVerifier`], which follows the checks of
//!   OpenSSL's `X509_verify_cert` for the `ssl_client` purpose that a server applies: a chain
//!   from the presented certificate through the presented intermediates and the CA file to a
//!   self-signed certificate of the CA file, each signature, each validity period, each
//!   issuer a CA (`X509_check_ca`: basicConstraints CA:TRUE, or, without basicConstraints, a
//!   v1 self-signed root, a keyCertSign key usage or a Netscape CA type), and the purpose
//!   (extended key usage, key usage, Netscape type) of the leaf and the intermediates.
//!
//! Certificates are parsed with `x509-parser` and signatures checked with ring, the crypto
//! rustls already runs on here; the TLS handshake signatures use rustls' own algorithm
//! table, matched to the certificate's key by its algorithm identifier.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::FromDer;
use x509_parser::time::ASN1Time;
use x509_parser::x509::X509Version;

/// The server's certificate chain and key, served to every client (Redis has one
/// certificate per listener; SNI does not choose between several).
#[derive(Debug)]
pub struct OneCert(Arc<CertifiedKey>);

impl ResolvesServerCert for OneCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// The chain and key as OpenSSL's `SSL_CTX_use_certificate_chain_file` and
/// `SSL_CTX_use_PrivateKey_file` take them (PKCS#1, PKCS#8 and SEC1 keys), with its one
/// check: the key's public half is the certificate's. `Err` is the reason, in the words
/// Redis' log uses.
pub fn server_cert(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    provider: &CryptoProvider,
    cert_file: &str,
    key_file: &str,
) -> Result<OneCert, String> {
    let (_, leaf) = X509Certificate::from_der(&certs[0])
        .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    let signing = match provider.key_provider.load_private_key(key.clone_key()) {
        Ok(k) => k,
        // An EC key in PKCS#8 without its public half (what the JDK's getEncoded() writes):
        // OpenSSL derives the half; ring needs it given, and the certificate has it.
        Err(e) => with_public_half(&key, leaf.public_key().raw)
            .and_then(|k| provider.key_provider.load_private_key(k).ok())
            .ok_or_else(|| format!("Failed to load private key: {key_file}: {e}"))?,
    };
    if let Some(spki) = signing.public_key() {
        if spki.as_ref() != leaf.public_key().raw {
            return Err(format!(
                "Failed to load certificate/private key: {cert_file} / {key_file}: key values mismatch"
            ));
        }
    }
    Ok(OneCert(Arc::new(CertifiedKey::new(certs, signing))))
}

/// A PKCS#8 EC private key whose ECPrivateKey lacks the optional `[1] publicKey`, rebuilt
/// with the public key of the certificate's SubjectPublicKeyInfo; `None` for anything else.
/// If the two do not belong together, loading the result fails as a mismatch would.
fn with_public_half(key: &PrivateKeyDer<'_>, spki: &[u8]) -> Option<PrivateKeyDer<'static>> {
    let PrivateKeyDer::Pkcs8(p8) = key else {
        return None;
    };
    let (0x30, body, _) = tlv(p8.secret_pkcs8_der())? else {
        return None;
    };
    let (0x02, version, rest) = tlv(body)? else {
        return None;
    };
    let (0x30, alg, rest) = tlv(rest)? else {
        return None;
    };
    let (0x04, ec_key, _) = tlv(rest)? else {
        return None;
    };
    let (spki_alg, public) = spki_parts(spki)?;
    if spki_alg != alg {
        return None;
    }
    // ECPrivateKey: SEQUENCE { version, privateKey, [0] parameters OPTIONAL, [1] publicKey OPTIONAL }
    let (0x30, mut fields, _) = tlv(ec_key)? else {
        return None;
    };
    let mut inner = Vec::new();
    while !fields.is_empty() {
        let (tag, _, rest) = tlv(fields)?;
        if tag == 0xa1 {
            return None; // it has the public key: the failure was something else
        }
        inner.extend_from_slice(&fields[..fields.len() - rest.len()]);
        fields = rest;
    }
    let mut bits = vec![0u8];
    bits.extend_from_slice(public);
    inner.extend(der(0xa1, &der(0x03, &bits)));
    let mut out = der(0x02, version);
    out.extend(der(0x30, alg));
    out.extend(der(0x04, &der(0x30, &inner)));
    Some(PrivateKeyDer::Pkcs8(der(0x30, &out).into()))
}

/// DER tag-length-value.
fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = contents.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

/// One parsed CA certificate of `tls-ca-cert-file`/`tls-ca-cert-dir`.
#[derive(Debug)]
struct Anchor {
    der: CertificateDer<'static>,
}

/// Client certificates checked as OpenSSL checks them for a server (see the module doc).
#[derive(Debug)]
pub struct ClientVerifier {
    roots: Vec<Anchor>,
    mandatory: bool,
    provider: Arc<CryptoProvider>,
}

impl ClientVerifier {
    /// `roots`: the CA certificates; each must parse. `mandatory`: `tls-auth-clients yes`
    /// (`optional` lets a client without a certificate in, and checks one that is given).
    pub fn new(
        roots: Vec<CertificateDer<'static>>,
        mandatory: bool,
        provider: Arc<CryptoProvider>,
    ) -> Result<ClientVerifier, String> {
        let mut out = Vec::new();
        for der in roots {
            X509Certificate::from_der(&der).map_err(|e| format!("{e}"))?;
            out.push(Anchor { der });
        }
        Ok(ClientVerifier {
            roots: out,
            mandatory,
            provider,
        })
    }
}

fn parse<'a>(der: &'a [u8]) -> Result<X509Certificate<'a>, Error> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))
}

/// OpenSSL's `X509_check_ca`, as a yes or no.
fn is_ca(c: &X509Certificate<'_>) -> bool {
    let mut bc = None;
    let mut ku = None;
    let mut ns_ca = None;
    for ext in c.extensions() {
        match ext.parsed_extension() {
            ParsedExtension::BasicConstraints(b) => bc = Some(b.ca),
            ParsedExtension::KeyUsage(k) => ku = Some(k.key_cert_sign()),
            ParsedExtension::NSCertType(n) => {
                ns_ca = Some(n.ssl_ca() || n.smime_ca() || n.object_signing_ca())
            }
            _ => {}
        }
    }
    if ku == Some(false) {
        return false;
    }
    match bc {
        Some(ca) => ca,
        None => {
            let v1_root = c.version() == X509Version::V1 && self_issued(c);
            v1_root || ku.is_some() || ns_ca == Some(true)
        }
    }
}

fn self_issued(c: &X509Certificate<'_>) -> bool {
    c.subject().as_raw() == c.issuer().as_raw()
}

/// OpenSSL's `ssl_client` purpose check: an extended key usage, if present, names
/// clientAuth; for the leaf, a key usage, if present, allows digitalSignature or
/// keyAgreement, and a Netscape certificate type, if present, has "SSL client".
fn purpose_ok(c: &X509Certificate<'_>, leaf: bool) -> bool {
    for ext in c.extensions() {
        match ext.parsed_extension() {
            ParsedExtension::ExtendedKeyUsage(e) if !e.client_auth => return false,
            ParsedExtension::KeyUsage(k)
                if leaf && !(k.digital_signature() || k.key_agreement()) =>
            {
                return false
            }
            ParsedExtension::NSCertType(n) if leaf && !n.ssl_client() => return false,
            _ => {}
        }
    }
    true
}

fn valid_at(c: &X509Certificate<'_>, now: UnixTime) -> Result<(), Error> {
    let t = ASN1Time::from_timestamp(now.as_secs() as i64)
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let v = c.validity();
    if t < v.not_before {
        return Err(Error::InvalidCertificate(CertificateError::NotValidYet));
    }
    if t > v.not_after {
        return Err(Error::InvalidCertificate(CertificateError::Expired));
    }
    Ok(())
}

/// Whether `issuer` signed `c`.
fn signed_by(c: &X509Certificate<'_>, issuer: &X509Certificate<'_>) -> bool {
    c.issuer().as_raw() == issuer.subject().as_raw()
        && c.verify_signature(Some(issuer.public_key())).is_ok()
}

/// How many certificates a chain may have, as OpenSSL's default verify depth allows.
const MAX_DEPTH: usize = 100;

impl ClientVerifier {
    /// Builds and checks the chain from `leaf` (see the module doc).
    fn verify_chain(
        &self,
        leaf: &[u8],
        presented: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<(), Error> {
        // (DER, parsed): certificates are the same when their DER is.
        let roots: Vec<(&[u8], X509Certificate<'_>)> = self
            .roots
            .iter()
            .filter_map(|a| Some((a.der.as_ref(), parse(&a.der).ok()?)))
            .collect();
        let untrusted: Vec<(&[u8], X509Certificate<'_>)> = presented
            .iter()
            .filter_map(|d| Some((d.as_ref(), parse(d).ok()?)))
            .collect();
        let trusted = |der: &[u8]| roots.iter().any(|(r, _)| *r == der);
        let mut current = (leaf, parse(leaf)?);
        valid_at(&current.1, now)?;
        if !purpose_ok(&current.1, true) {
            return Err(Error::InvalidCertificate(CertificateError::InvalidPurpose));
        }
        // A self-signed client certificate that the CA file holds is trusted as it is.
        if self_issued(&current.1) && trusted(leaf) {
            return Ok(());
        }
        for _ in 0..MAX_DEPTH {
            // The issuer: a CA file certificate first (OpenSSL looks in the trusted store
            // before the peer's chain), then one the client sent.
            let next = roots
                .iter()
                .chain(untrusted.iter())
                .find(|(der, i)| *der != current.0 && signed_by(&current.1, i));
            let Some((der, issuer)) = next else {
                return Err(Error::InvalidCertificate(CertificateError::UnknownIssuer));
            };
            if !is_ca(issuer) || !purpose_ok(issuer, false) {
                return Err(Error::InvalidCertificate(CertificateError::UnknownIssuer));
            }
            valid_at(issuer, now)?;
            // The chain ends at a self-signed certificate of the CA file.
            if trusted(der) && self_issued(issuer) && signed_by(issuer, issuer) {
                return Ok(());
            }
            current = (der, issuer.clone());
        }
        Err(Error::InvalidCertificate(CertificateError::UnknownIssuer))
    }

    fn verify_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
        tls13: bool,
    ) -> Result<HandshakeSignatureValid, Error> {
        let c = parse(cert)?;
        let (alg_id, key) = spki_parts(c.public_key().raw)
            .ok_or(Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let scheme = dss.scheme;
        // TLS 1.3 has no PKCS#1 v1.5 or SHA-1 handshake signatures (RFC 8446, 4.2.3).
        let legacy = matches!(
            scheme,
            SignatureScheme::RSA_PKCS1_SHA1
                | SignatureScheme::RSA_PKCS1_SHA256
                | SignatureScheme::RSA_PKCS1_SHA384
                | SignatureScheme::RSA_PKCS1_SHA512
                | SignatureScheme::ECDSA_SHA1_Legacy
        );
        if tls13 && legacy {
            return Err(Error::PeerMisbehaved(
                rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
            ));
        }
        let algs = self
            .provider
            .signature_verification_algorithms
            .mapping
            .iter()
            .find(|(s, _)| *s == scheme)
            .map(|(_, a)| *a)
            .unwrap_or(&[]);
        for alg in algs {
            if alg.public_key_alg_id().as_ref() == alg_id
                && alg.verify_signature(key, message, dss.signature()).is_ok()
            {
                return Ok(HandshakeSignatureValid::assertion());
            }
        }
        Err(Error::InvalidCertificate(CertificateError::BadSignature))
    }
}

/// The algorithm identifier's contents and the key bits of a DER SubjectPublicKeyInfo,
/// the two halves rustls' signature algorithms take.
fn spki_parts(spki: &[u8]) -> Option<(&[u8], &[u8])> {
    let (tag, body, _) = tlv(spki)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, alg, rest) = tlv(body)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, bits, _) = tlv(rest)?;
    if tag != 0x03 || bits.is_empty() {
        return None;
    }
    Some((alg, &bits[1..]))
}

/// One DER tag-length-value: (tag, contents, what follows).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

impl ClientCertVerifier for ClientVerifier {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    /// Redis sets no list of acceptable CAs (`SSL_CTX_set_client_CA_list`), so OpenSSL asks
    /// for a certificate without one, and clients pick theirs without a filter.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        self.verify_chain(end_entity, intermediates, now)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verify_signature(message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verify_signature(message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An EC key and a self-signed certificate for it (rcgen writes PKCS#8 with the public
    /// key), and the same key as the JDK writes it: without the ECPrivateKey's `[1]`.
    fn ec_key_and_cert() -> (
        PrivateKeyDer<'static>,
        PrivateKeyDer<'static>,
        CertificateDer<'static>,
    ) {
        let k = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&k)
            .unwrap();
        let full = k.serialize_der();
        let (_, body, _) = tlv(&full).unwrap();
        let (_, version, rest) = tlv(body).unwrap();
        let (_, alg, rest) = tlv(rest).unwrap();
        let (_, ec_key, _) = tlv(rest).unwrap();
        let (_, mut fields, _) = tlv(ec_key).unwrap();
        let mut inner = Vec::new();
        while !fields.is_empty() {
            let (tag, _, rest) = tlv(fields).unwrap();
            if tag != 0xa1 {
                inner.extend_from_slice(&fields[..fields.len() - rest.len()]);
            }
            fields = rest;
        }
        let mut out = der(0x02, version);
        out.extend(der(0x30, alg));
        out.extend(der(0x04, &der(0x30, &inner)));
        let jdk = PrivateKeyDer::Pkcs8(der(0x30, &out).into());
        (PrivateKeyDer::Pkcs8(full.into()), jdk, cert.der().clone())
    }

    #[test]
    fn a_pkcs8_ec_key_without_its_public_half_loads_with_its_certificate() {
        let provider = rustls::crypto::ring::default_provider();
        let (full, jdk, cert) = ec_key_and_cert();
        // ring alone refuses the JDK form; with the certificate's public key it loads.
        assert!(provider
            .key_provider
            .load_private_key(jdk.clone_key())
            .is_err());
        assert!(provider
            .key_provider
            .load_private_key(full.clone_key())
            .is_ok());
        assert!(server_cert(vec![cert.clone()], jdk.clone_key(), &provider, "c", "k").is_ok());
        // With another key's certificate it does not.
        let (_, _, other) = ec_key_and_cert();
        assert!(server_cert(vec![other], jdk, &provider, "c", "k").is_err());
    }

    #[test]
    fn der_round_trips_long_lengths() {
        let v = vec![7u8; 300];
        let enc = der(0x04, &v);
        assert_eq!(&enc[..4], &[0x04, 0x82, 0x01, 0x2c]);
        let (tag, body, rest) = tlv(&enc).unwrap();
        assert_eq!((tag, body, rest.len()), (0x04, &v[..], 0));
    }
}
