package io.tumbler.compat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * TLS material made on the fly with the openssl CLI (and the JDK's keytool for the v3 truststore),
 * in one of the forms users make it ({@link Material}): a CA file, a server certificate and key, a
 * client certificate and key, a PKCS#12 client keystore and a PKCS#12 truststore made from the CA
 * file.
 */
public final class Certs {
    public static final String STORE_PASSWORD = "changeit";

    /** The forms of material the TLS classes run with. */
    public enum Material {
        /**
         * v3 certificates made with an extension file: server subjectAltName IP:127.0.0.1,DNS:localhost,
         * keyUsage/extendedKeyUsage on both; RSA keys (PKCS#8, as openssl req writes them).
         */
        V3,
        /**
         * As many tutorials make it: server and client certificates from
         * {@code openssl x509 -req -in x.csr -CA ca.crt -CAkey ca.key -CAcreateserial} with no extension
         * file, which makes X.509 <b>v1</b> certificates with no extensions at all (no subjectAltName);
         * the server key RSA in PKCS#1 ({@code openssl genrsa -traditional}: BEGIN RSA PRIVATE KEY); the
         * client key EC prime256v1 from {@code openssl ecparam -genkey} (EC PARAMETERS + EC PRIVATE KEY),
         * put into the client's PKCS#12 by {@code openssl pkcs12 -export}.
         */
        V1_EC,
        /**
         * The V3 certificates, but the CA file ({@code tls-ca-cert-file}, and the client's truststore)
         * holds two certificates: an unrelated self-signed root first, the real CA second. Extra client
         * keystores: one signed by the unrelated root, one by a root in neither file.
         */
        CA_BUNDLE;
    }

    /** CA_BUNDLE only: a client keystore whose certificate the unrelated root (first in the CA file) signed. */
    public Path clientFromFirstRootP12() { return dir.resolve("client-unrelated.p12"); }

    /** CA_BUNDLE only: a client keystore whose certificate a root that is not in the CA file signed. */
    public Path clientFromStrangerP12() { return dir.resolve("client-stranger.p12"); }

    public final Material material;
    public final Path dir, caCert, serverCert, serverKey, clientCert, clientKey, clientP12, trustP12;

    private Certs(Path dir, Material material) {
        this.dir = dir;
        this.material = material;
        caCert = dir.resolve(material == Material.CA_BUNDLE ? "ca-bundle.crt" : "ca.crt");
        serverCert = dir.resolve("server.crt");
        serverKey = dir.resolve("server.key");
        clientCert = dir.resolve("client.crt");
        clientKey = dir.resolve("client.key");
        clientP12 = dir.resolve("client.p12");
        trustP12 = dir.resolve("trust.p12");
    }

    /** Whether the server certificate names 127.0.0.1 in a subjectAltName (what hostname verification needs). */
    public boolean serverCertHasSan() { return material != Material.V1_EC; }

    public static Certs generate() { return generate(Material.V3); }

    public static Certs generate(Material material) {
        String openssl = Servers.which("openssl");
        Servers.require(openssl != null, "openssl CLI");
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        try {
            Path dir = Files.createTempDirectory(Servers.workdir(), "tls-" + material.name().toLowerCase() + "-");
            Certs c = new Certs(dir, material);
            boolean v1 = material == Material.V1_EC;
            if (v1) {
                // a tutorial's CA: openssl req -x509 with the config file's defaults
                run(dir, openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                        "-days", "2", "-subj", "/CN=compat v1 test CA");
                run(dir, openssl, "genrsa", "-traditional", "-out", "server.key", "2048");
                run(dir, openssl, "ecparam", "-genkey", "-name", "prime256v1", "-out", "client.key");
                for (String who : List.of("server", "client")) {
                    run(dir, openssl, "req", "-new", "-key", who + ".key", "-out", who + ".csr",
                            "-subj", "/CN=" + (who.equals("server") ? "localhost" : "compat"));
                    // no -extfile: an X.509 v1 certificate
                    run(dir, openssl, "x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                            "-out", who + ".crt", "-days", "2");
                }
                expectV1(dir, openssl, "server.crt");
                expectV1(dir, openssl, "client.crt");
            } else {
                Files.writeString(dir.resolve("server.ext"), "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                        + "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n");
                Files.writeString(dir.resolve("client.ext"), "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                        + "extendedKeyUsage=clientAuth\n");
                run(dir, openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                        "-subj", "/CN=compat test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                        "-addext", "keyUsage=critical,keyCertSign,cRLSign");
                for (String who : List.of("server", "client")) {
                    run(dir, openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", who + ".key", "-out", who + ".csr",
                            "-subj", "/CN=" + (who.equals("server") ? "localhost" : "compat"));
                    run(dir, openssl, "x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                            "-out", who + ".crt", "-days", "2", "-extfile", who + ".ext");
                }
            }
            if (material == Material.CA_BUNDLE) {
                // an unrelated root first, the real CA second, in one PEM file
                run(dir, openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "unrelated.key", "-out", "unrelated.crt",
                        "-days", "2", "-subj", "/CN=unrelated root CA");
                Files.writeString(c.caCert, Files.readString(dir.resolve("unrelated.crt")) + Files.readString(dir.resolve("ca.crt")));
                // client certificates from the first root of the file (accepted: every certificate in the
                // file is a trust anchor, as with OpenSSL) and from a root not in the file (refused)
                run(dir, openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "stranger.key", "-out", "stranger.crt",
                        "-days", "2", "-subj", "/CN=stranger root CA");
                for (String root : List.of("unrelated", "stranger")) {
                    String who = "client-" + root;
                    run(dir, openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", who + ".key", "-out", who + ".csr",
                            "-subj", "/CN=compat");
                    run(dir, openssl, "x509", "-req", "-in", who + ".csr", "-CA", root + ".crt", "-CAkey", root + ".key",
                            "-CAcreateserial", "-out", who + ".crt", "-days", "2", "-extfile", "client.ext");
                    run(dir, openssl, "pkcs12", "-export", "-in", who + ".crt", "-inkey", who + ".key", "-name", "client",
                            "-out", who + ".p12", "-passout", "pass:" + STORE_PASSWORD);
                }
            }
            run(dir, openssl, "pkcs12", "-export", "-in", "client.crt", "-inkey", "client.key", "-name", "client",
                    "-out", "client.p12", "-passout", "pass:" + STORE_PASSWORD);
            if (material == Material.V3) {
                run(dir, keytool, "-importcert", "-noprompt", "-file", "ca.crt", "-alias", "ca", "-keystore", "trust.p12",
                        "-storetype", "PKCS12", "-storepass", STORE_PASSWORD);
            } else {
                // keytool -importcert takes only the first certificate of a PEM file; a Java user with a
                // CA file of several certificates adds each one, as here
                trustStoreFrom(c.caCert, c.trustP12);
            }
            return c;
        } catch (IOException | GeneralSecurityException e) {
            throw new RuntimeException(e);
        }
    }

    /** A PKCS#12 truststore holding every certificate of a PEM CA file as a trusted entry. */
    private static void trustStoreFrom(Path pem, Path p12) throws IOException, GeneralSecurityException {
        List<Certificate> certs;
        try (InputStream in = Files.newInputStream(pem)) {
            certs = new ArrayList<>(CertificateFactory.getInstance("X.509").generateCertificates(in));
        }
        if (certs.isEmpty()) throw new IllegalStateException("no certificate in " + pem);
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        for (int i = 0; i < certs.size(); i++) ks.setCertificateEntry("ca" + i, certs.get(i));
        try (OutputStream out = Files.newOutputStream(p12)) {
            ks.store(out, STORE_PASSWORD.toCharArray());
        }
    }

    /** The material is what it claims: openssl prints "Version: 1 (0x0)" and no extensions. */
    private static void expectV1(Path dir, String openssl, String cert) throws IOException {
        Path txt = dir.resolve(cert + ".txt");
        run(dir, openssl, "x509", "-in", cert, "-noout", "-text", "-out", cert + ".txt");
        String text = Files.readString(txt);
        if (!text.contains("Version: 1 (0x0)") || text.contains("X509v3 extensions")) {
            throw new IllegalStateException(cert + " is not a v1 certificate without extensions:\n" + text);
        }
    }

    private static void run(Path dir, String... cmd) {
        try {
            Path log = dir.resolve("gen.log");
            Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("timed out: " + String.join(" ", cmd));
            }
            if (p.exitValue() != 0) throw new IllegalStateException("failed: " + String.join(" ", cmd) + "\n" + Files.readString(log));
        } catch (IOException | InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    /** redis.conf directives for a TLS listener that requires client certificates. */
    public List<String> serverArgs() {
        return List.of("--tls-cert-file", serverCert.toString(), "--tls-key-file", serverKey.toString(),
                "--tls-ca-cert-file", caCert.toString(), "--tls-auth-clients", "yes");
    }
}
