package io.tumbler.compat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * TLS material made on the fly with the openssl CLI and the JDK's keytool: a CA, a v3 server
 * certificate for 127.0.0.1/localhost, a v3 client certificate, a PKCS#12 client keystore and a
 * PKCS#12 truststore holding the CA.
 */
public final class Certs {
    public static final String STORE_PASSWORD = "changeit";
    public final Path dir, caCert, serverCert, serverKey, clientCert, clientKey, clientP12, trustP12;

    private Certs(Path dir) {
        this.dir = dir;
        caCert = dir.resolve("ca.crt");
        serverCert = dir.resolve("server.crt");
        serverKey = dir.resolve("server.key");
        clientCert = dir.resolve("client.crt");
        clientKey = dir.resolve("client.key");
        clientP12 = dir.resolve("client.p12");
        trustP12 = dir.resolve("trust.p12");
    }

    public static Certs generate() {
        String openssl = Servers.which("openssl");
        Servers.require(openssl != null, "openssl CLI");
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        try {
            Path dir = Files.createTempDirectory(Servers.workdir(), "tls-");
            Certs c = new Certs(dir);
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
            run(dir, openssl, "pkcs12", "-export", "-in", "client.crt", "-inkey", "client.key", "-name", "client",
                    "-out", "client.p12", "-passout", "pass:" + STORE_PASSWORD);
            run(dir, keytool, "-importcert", "-noprompt", "-file", "ca.crt", "-alias", "ca", "-keystore", "trust.p12",
                    "-storetype", "PKCS12", "-storepass", STORE_PASSWORD);
            return c;
        } catch (IOException e) {
            throw new RuntimeException(e);
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
