package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tumbler.junit.Tumbler;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An @Tumbler(replicas = 1) instance field: a primary and one replica per test. */
class ReplicasFieldTest {
    @Tumbler(replicas = 1)
    TumblerServer perTest;

    @Test
    void fieldWithAReplica() {
        assertEquals(2, perTest.nodeCount());
        assertEquals(1, perTest.replicaCount());
        assertEquals(0, perTest.sentinelCount());
        assertEquals("master", ((List<?>) perTest.commandOn(0, "ROLE")).get(0));
        assertEquals("slave", ((List<?>) perTest.commandOn(1, "ROLE")).get(0));
        perTest.command("SET", "k", "v");
        assertEquals("v", perTest.commandOn(1, "GET", "k"));
    }
}
