package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tumbler.compat.Certs;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.SslVerificationMode;

/**
 * TlsAclLocksTest's scenarios with material as tutorials make it ({@link Certs.Material#V1_EC}): X.509 v1
 * server and client certificates from {@code openssl x509 -req -CA} without an extension file (so no
 * subjectAltName), a PKCS#1 RSA server key, an EC prime256v1 client key in the client's PKCS#12.
 * Redisson connects with SslVerificationMode.CA_ONLY (see Topo.tlsConfig), on both servers.
 */
class TlsV1EcLocksTest extends TlsAclLocksTest {
    @Override protected Certs material() { return Certs.generate(Certs.Material.V1_EC); }

    /** Why CA_ONLY: Redisson's default STRICT rejects a server certificate without SAN, on either server alike. */
    @ParameterizedTest(name = ON) @MethodSource("targets")
    void strictHostnameVerificationRejectsNoSan(Target t) {
        int tlsPort = t.procs.get(0).tlsPorts.get(0);
        RuntimeException e = assertThrows(RuntimeException.class, () -> {
            RedissonClient c = Redisson.create(Topo.tlsConfig(tlsPort, certs, SslVerificationMode.STRICT).get());
            c.shutdown();
        });
        StringBuilder chain = new StringBuilder();
        for (Throwable x = e; x != null && chain.length() < 10_000; x = x.getCause()) chain.append(x).append("\n");
        // the JDK's HostnameChecker: "No subject alternative names present"
        assertTrue(chain.toString().contains("No subject alternative names"), chain.toString());
    }
}
