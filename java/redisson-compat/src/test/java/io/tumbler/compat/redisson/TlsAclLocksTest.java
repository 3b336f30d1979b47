package io.tumbler.compat.redisson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import io.tumbler.compat.Certs;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.redisson.api.RBucket;
import org.redisson.client.codec.StringCodec;

/**
 * rediss:// with a client certificate and an ACL user: the 14 lock scenarios, plus the ACL's key patterns.
 * Material: v3 certificates ({@link Certs.Material#V3}); subclasses run the same tests with other material.
 */
class TlsAclLocksTest extends LockScenarios {
    /** The TLS material both servers and their clients use. */
    protected Certs material() { return Certs.generate(Certs.Material.V3); }

    /** The material in use (made in @BeforeAll). */
    protected Certs certs;

    @Override protected List<Target> createTargets() {
        certs = material();
        return Topo.tls(certs);
    }

    @ParameterizedTest(name = ON) @MethodSource("targets")
    void aclUserAndKeyPatterns(Target t) {
        RBucket<String> mine = t.client().getBucket(key("acl"), StringCodec.INSTANCE);
        mine.set("v");
        assertEquals("v", mine.get());
        RBucket<String> other = t.client().getBucket("outside:" + key("acl"), StringCodec.INSTANCE);
        RuntimeException e = assertThrows(RuntimeException.class, () -> other.set("v"));
        String msg = String.valueOf(e.getMessage()) + " " + (e.getCause() == null ? "" : e.getCause().getMessage());
        assertTrue(msg.contains("NOPERM"), msg);
    }
}
