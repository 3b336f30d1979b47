package dev.tumbler;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS material made on the fly with the JDK alone (no keytool, no OpenSSL, no BouncyCastle):
 * a CA, a server certificate for 127.0.0.1/localhost and a client certificate, all ECDSA
 * P-256, as PEM files for the server and PKCS#12 stores for Java clients.
 */
public final class TlsMaterial {
    /** The password of {@link #truststore()} and {@link #keystore()}. */
    public static final String STORE_PASSWORD = "tumbler";

    private final Path dir;
    private final X509Certificate ca;
    private final X509Certificate clientCert;
    private final PrivateKey clientKey;

    private TlsMaterial(Path dir, X509Certificate ca, X509Certificate clientCert, PrivateKey clientKey) {
        this.dir = dir;
        this.ca = ca;
        this.clientCert = clientCert;
        this.clientKey = clientKey;
    }

    /** The directory holding every file; deleted by {@link TumblerServer#close()}. */
    public Path dir() {
        return dir;
    }

    public Path caCertPem() {
        return dir.resolve("ca.pem");
    }

    public Path serverCertPem() {
        return dir.resolve("server.pem");
    }

    public Path serverKeyPem() {
        return dir.resolve("server.key");
    }

    public Path clientCertPem() {
        return dir.resolve("client.pem");
    }

    public Path clientKeyPem() {
        return dir.resolve("client.key");
    }

    /** PKCS#12 trust store with the CA ({@link #STORE_PASSWORD}). */
    public Path truststore() {
        return dir.resolve("truststore.p12");
    }

    /** PKCS#12 key store with the client key and certificate ({@link #STORE_PASSWORD}). */
    public Path keystore() {
        return dir.resolve("client.p12");
    }

    public URL truststoreUrl() {
        return url(truststore());
    }

    public URL keystoreUrl() {
        return url(keystore());
    }

    private static URL url(Path p) {
        try {
            return p.toUri().toURL();
        } catch (IOException e) {
            throw new TumblerException("bad path " + p, e);
        }
    }

    public X509Certificate caCertificate() {
        return ca;
    }

    /** An SSLContext that trusts the CA and presents the client certificate. */
    public SSLContext sslContext() {
        try {
            KeyStore ts = KeyStore.getInstance("PKCS12");
            ts.load(null, null);
            ts.setCertificateEntry("ca", ca);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ts);
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setKeyEntry("client", clientKey, STORE_PASSWORD.toCharArray(), new Certificate[] {clientCert, ca});
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, STORE_PASSWORD.toCharArray());
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), new SecureRandom());
            return ctx;
        } catch (GeneralSecurityException | IOException e) {
            throw new TumblerException("cannot build an SSLContext", e);
        }
    }

    /** Makes a CA, a server and a client certificate in a new temporary directory. */
    public static TlsMaterial generate() {
        try {
            Path dir = Files.createTempDirectory("tumbler-tls-");
            KeyPair caKeys = ecKeys();
            KeyPair serverKeys = ecKeys();
            KeyPair clientKeys = ecKeys();
            byte[] caName = name("tumbler test CA");
            X509Certificate ca = certificate(caName, caName, caKeys, caKeys.getPrivate(), Der.seq(
                    extension("2.5.29.19", true, Der.seq(Der.bool(true))),
                    extension("2.5.29.15", true, Der.tlv(0x03, new byte[] {1, 0x06}))));
            X509Certificate server = certificate(caName, name("localhost"), serverKeys, caKeys.getPrivate(),
                    Der.seq(
                            extension("2.5.29.17", false, Der.seq(
                                    Der.tlv(0x82, "localhost".getBytes(StandardCharsets.US_ASCII)),
                                    Der.tlv(0x87, new byte[] {127, 0, 0, 1}))),
                            extension("2.5.29.37", false, Der.seq(Der.oid("1.3.6.1.5.5.7.3.1")))));
            X509Certificate client = certificate(caName, name("tumbler test client"), clientKeys,
                    caKeys.getPrivate(),
                    Der.seq(extension("2.5.29.37", false, Der.seq(Der.oid("1.3.6.1.5.5.7.3.2")))));
            TlsMaterial m = new TlsMaterial(dir, ca, client, clientKeys.getPrivate());
            pem(m.caCertPem(), "CERTIFICATE", ca.getEncoded());
            pem(m.serverCertPem(), "CERTIFICATE", server.getEncoded());
            pem(m.serverKeyPem(), "PRIVATE KEY", pkcs8(serverKeys));
            pem(m.clientCertPem(), "CERTIFICATE", client.getEncoded());
            pem(m.clientKeyPem(), "PRIVATE KEY", pkcs8(clientKeys));
            KeyStore ts = KeyStore.getInstance("PKCS12");
            ts.load(null, null);
            ts.setCertificateEntry("ca", ca);
            store(ts, m.truststore());
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setKeyEntry("client", clientKeys.getPrivate(), STORE_PASSWORD.toCharArray(),
                    new Certificate[] {client, ca});
            store(ks, m.keystore());
            return m;
        } catch (GeneralSecurityException | IOException e) {
            throw new TumblerException("cannot generate TLS material", e);
        }
    }

    private static void store(KeyStore ks, Path p) throws IOException, GeneralSecurityException {
        try (OutputStream out = Files.newOutputStream(p)) {
            ks.store(out, STORE_PASSWORD.toCharArray());
        }
    }

    private static void pem(Path p, String type, byte[] der) throws IOException {
        String body = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der);
        Files.writeString(p, "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n");
    }

    /**
     * PKCS#8 with the public key inside the ECPrivateKey (RFC 5915), which ring (the server's
     * TLS) requires and the JDK's own encoding leaves out.
     */
    private static byte[] pkcs8(KeyPair keys) {
        java.security.interfaces.ECPrivateKey priv = (java.security.interfaces.ECPrivateKey) keys.getPrivate();
        java.security.interfaces.ECPublicKey pub = (java.security.interfaces.ECPublicKey) keys.getPublic();
        byte[] point = new byte[65];
        point[0] = 4;
        System.arraycopy(fixed(pub.getW().getAffineX()), 0, point, 1, 32);
        System.arraycopy(fixed(pub.getW().getAffineY()), 0, point, 33, 32);
        byte[] bits = new byte[66];
        System.arraycopy(point, 0, bits, 1, 65);
        byte[] ecPrivateKey = Der.seq(
                Der.integer(BigInteger.ONE),
                Der.tlv(0x04, fixed(priv.getS())),
                Der.tlv(0xa1, Der.tlv(0x03, bits)));
        return Der.seq(
                Der.integer(BigInteger.ZERO),
                Der.seq(Der.oid("1.2.840.10045.2.1"), Der.oid("1.2.840.10045.3.1.7")),
                Der.tlv(0x04, ecPrivateKey));
    }

    private static byte[] fixed(BigInteger v) {
        byte[] raw = v.toByteArray();
        byte[] out = new byte[32];
        int n = Math.min(raw.length, 32);
        System.arraycopy(raw, raw.length - n, out, 32 - n, n);
        return out;
    }

    private static KeyPair ecKeys() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    private static byte[] name(String cn) {
        return Der.seq(Der.tlv(0x31, Der.seq(Der.oid("2.5.4.3"), Der.tlv(0x0c, cn.getBytes(StandardCharsets.UTF_8)))));
    }

    private static byte[] extension(String oid, boolean critical, byte[] value) {
        return critical ? Der.seq(Der.oid(oid), Der.bool(true), Der.tlv(0x04, value))
                : Der.seq(Der.oid(oid), Der.tlv(0x04, value));
    }

    private static final DateTimeFormatter UTC_TIME =
            DateTimeFormatter.ofPattern("yyMMddHHmmss'Z'").withZone(ZoneOffset.UTC);

    private static X509Certificate certificate(byte[] issuer, byte[] subject, KeyPair keys, PrivateKey signer,
                                               byte[] extensions) throws GeneralSecurityException {
        byte[] algId = Der.seq(Der.oid("1.2.840.10045.4.3.2")); // ecdsa-with-SHA256
        Instant now = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        byte[] tbs = Der.seq(
                Der.tlv(0xa0, Der.integer(BigInteger.valueOf(2))),
                Der.integer(new BigInteger(63, new SecureRandom()).add(BigInteger.ONE)),
                algId,
                issuer,
                Der.seq(Der.tlv(0x17, UTC_TIME.format(now.minus(1, ChronoUnit.DAYS)).getBytes(StandardCharsets.US_ASCII)),
                        Der.tlv(0x17, UTC_TIME.format(now.plus(3650, ChronoUnit.DAYS)).getBytes(StandardCharsets.US_ASCII))),
                subject,
                keys.getPublic().getEncoded(),
                Der.tlv(0xa3, extensions));
        Signature sig = Signature.getInstance("SHA256withECDSA");
        sig.initSign(signer);
        sig.update(tbs);
        byte[] s = sig.sign();
        byte[] bits = new byte[s.length + 1];
        System.arraycopy(s, 0, bits, 1, s.length);
        byte[] cert = Der.seq(tbs, algId, Der.tlv(0x03, bits));
        return (X509Certificate) CertificateFactory.getInstance("X.509")
                .generateCertificate(new ByteArrayInputStream(cert));
    }

    /** DER encoding, just what a certificate needs. */
    static final class Der {
        private Der() {}

        static byte[] tlv(int tag, byte[]... parts) {
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            for (byte[] p : parts) {
                body.writeBytes(p);
            }
            int n = body.size();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.write(tag);
            if (n < 0x80) {
                out.write(n);
            } else {
                byte[] len = BigInteger.valueOf(n).toByteArray();
                int off = len[0] == 0 ? 1 : 0;
                out.write(0x80 | (len.length - off));
                out.write(len, off, len.length - off);
            }
            out.writeBytes(body.toByteArray());
            return out.toByteArray();
        }

        static byte[] seq(byte[]... parts) {
            return tlv(0x30, parts);
        }

        static byte[] integer(BigInteger v) {
            return tlv(0x02, v.toByteArray());
        }

        static byte[] bool(boolean v) {
            return tlv(0x01, new byte[] {(byte) (v ? 0xff : 0)});
        }

        static byte[] oid(String dotted) {
            String[] p = dotted.split("\\.");
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            b.write(Integer.parseInt(p[0]) * 40 + Integer.parseInt(p[1]));
            for (int i = 2; i < p.length; i++) {
                long v = Long.parseLong(p[i]);
                byte[] tmp = new byte[10];
                int k = tmp.length;
                tmp[--k] = (byte) (v & 0x7f);
                v >>>= 7;
                while (v > 0) {
                    tmp[--k] = (byte) (0x80 | (v & 0x7f));
                    v >>>= 7;
                }
                b.write(tmp, k, tmp.length - k);
            }
            return tlv(0x06, b.toByteArray());
        }
    }
}
