package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.TumblerServer;
import dev.tumbler.junit.Tumbler;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * rediss:// with a client certificate and an ACL user limited to lock keys, as production
 * runs it: certificates are generated for the test, nothing to keep in the repository.
 */
// Redisson's unlock also names redisson_lock__channel:* and redisson_unlock_latch:* keys.
@Tumbler(tls = true, users = "worker:s3cret ~lock:* ~redisson_* &* +@all -@dangerous")
class TlsAclTest {

    @Test
    void redissonLocksOverTlsAsALimitedUser(TumblerServer srv, RedissonClient redisson) throws Exception {
        assertTrue(srv.url().startsWith("rediss://"), srv.url());
        assertEquals("worker", srv.username());

        RLock lock = redisson.getLock("lock:invoice:{9}");
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        lock.unlock();

        // The user's key patterns hold: a key outside lock:* is refused with NOPERM.
        Exception e = assertThrows(Exception.class, () -> redisson.getBucket("cache:1").set("x"));
        assertTrue(String.valueOf(e.getMessage()).contains("NOPERM"), String.valueOf(e.getMessage()));
        @SuppressWarnings("unchecked")
        List<Object> log = (List<Object>) srv.command("ACL", "LOG");
        assertTrue(!log.isEmpty(), "the refusal is in ACL LOG");
    }

    @Test
    void withoutAClientCertificateTheServerRefuses(TumblerServer srv) throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        trust.setCertificateEntry("ca", srv.tlsMaterial().caCertificate());
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext noClientCert = SSLContext.getInstance("TLS");
        noClientCert.init(null, tmf.getTrustManagers(), null); // trusts the server, presents nothing
        try (SSLSocket s = (SSLSocket) noClientCert.getSocketFactory().createSocket(srv.host(), srv.port())) {
            s.setSoTimeout(5_000);
            String reply;
            try {
                s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
                byte[] buf = new byte[64];
                int n = s.getInputStream().read(buf);
                reply = n < 0 ? "EOF" : new String(buf, 0, n, StandardCharsets.US_ASCII);
            } catch (IOException e) {
                reply = e.toString();
            }
            assertFalse(reply.startsWith("+PONG"), "a client without a certificate got: " + reply);
        }
    }
}
