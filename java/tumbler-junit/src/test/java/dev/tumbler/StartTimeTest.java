package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.junit.Tumbler;
import dev.tumbler.junit.TumblerExtension;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The time the JUnit extension takes to start a server (TumblerExtension.start, what @Tumbler
 * runs before a class or test): process spawn to the port announced. Printed as a median
 * over 50 starts, after one warm-up start (which extracts the binary once per version).
 */
class StartTimeTest {
    @Tumbler(timeControl = true)
    private static final class Defaults {}

    @Tumbler(timeControl = true, replicas = 2, sentinels = 3)
    private static final class Sentinels {}

    @Test
    void medianStartTime() {
        measure(Defaults.class.getAnnotation(Tumbler.class), "", 250);
    }

    /**
     * A primary, 2 replicas and 3 sentinels, start to every port announced and the primary
     * counting both replicas (INFO replication), the sentinels listing both (SENTINEL REPLICAS).
     */
    @Test
    void medianStartTimeOfASentinelSet() {
        measure(Sentinels.class.getAnnotation(Tumbler.class), " (1 primary, 2 replicas, 3 sentinels)", 500);
    }

    @SuppressWarnings("unchecked")
    private static void ready(TumblerServer s) {
        if (!s.isReplicated()) {
            return;
        }
        assertTrue(String.valueOf(s.command("INFO", "replication")).contains("connected_slaves:2"));
        for (int i = 0; i < s.sentinelCount(); i++) {
            List<Object> reps = (List<Object>) s.commandOnSentinel(i, "SENTINEL", "REPLICAS", s.masterName());
            assertTrue(reps.size() == 2, "sentinel " + i + " lists " + reps);
        }
    }

    private static void measure(Tumbler t, String what, double boundMs) {
        long coldStart = System.nanoTime();
        TumblerExtension.start(t).close();
        long cold = System.nanoTime() - coldStart;
        int n = Integer.getInteger("tumbler.starts", 50);
        List<Long> times = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            TumblerServer s = TumblerExtension.start(t);
            ready(s);
            times.add(System.nanoTime() - t0);
            assertTrue(s.port() > 0);
            s.close();
        }
        Collections.sort(times);
        double median = times.get(n / 2) / 1e6;
        double p90 = times.get(n * 9 / 10) / 1e6;
        System.out.printf("tumbler-junit start time" + what + ": median %.1f ms, p90 %.1f ms, min %.1f ms over %d starts"
                + " (first start in this JVM %.1f ms)%n", median, p90, times.get(0) / 1e6, n, cold / 1e6);
        // The goal is 30 ms; the bound here leaves room for a loaded 2-core CI machine.
        assertTrue(median < boundMs, "median start " + median + " ms");
    }
}
