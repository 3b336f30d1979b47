package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;

import io.tumbler.compat.Certs;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.Redisson;
import org.redisson.api.RBucket;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.redisson.config.SslVerificationMode;

/**
 * TlsAclLocksTest's scenarios with a CA file of two certificates ({@link Certs.Material#CA_BUNDLE}): an
 * unrelated self-signed root first, the CA that signed the server and client certificates second, as
 * {@code tls-ca-cert-file} on both servers and as the client's truststore. Plus: a client certificate from
 * the first root is accepted too, and one from a root outside the file is refused, on both servers.
 */
class TlsCaBundleLocksTest extends TlsAclLocksTest {
    @Override protected Certs material() { return Certs.generate(Certs.Material.CA_BUNDLE); }

    private RedissonClient clientWith(Target t, Path p12) {
        Config c = Topo.tlsConfig(t.procs.get(0).tlsPorts.get(0), certs, SslVerificationMode.STRICT, p12).get();
        // a refused client otherwise retries for 3 x 5 s
        c.useSingleServer().setTimeout(1500).setRetryAttempts(0);
        return Redisson.create(c);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void clientCertificateFromFirstRootOfCaFile(Target t) {
        RedissonClient c = clientWith(t, certs.clientFromFirstRootP12());
        try {
            RBucket<String> b = c.getBucket(key("first-root"), StringCodec.INSTANCE);
            b.set("v");
            assertEquals("v", b.get());
        } finally {
            c.shutdown();
        }
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void clientCertificateFromRootOutsideCaFileRefused(Target t) {
        assertThrows(RuntimeException.class, () -> {
            RedissonClient c = clientWith(t, certs.clientFromStrangerP12());
            try {
                // TLS 1.3: the client may learn of the refusal only at its first read
                c.getBucket(key("stranger"), StringCodec.INSTANCE).set("v");
            } finally {
                c.shutdown();
            }
        });
    }
}
