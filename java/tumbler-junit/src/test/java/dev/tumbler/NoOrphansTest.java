package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The server dies with the JVM that started it, however that JVM ends. */
class NoOrphansTest {

    private static Process child(String mode) throws Exception {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        return new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), OrphanChild.class.getName(), mode)
                .redirectErrorStream(true)
                .start();
    }

    private static long serverPid(Process child) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        StringBuilder seen = new StringBuilder();
        for (String line; (line = r.readLine()) != null; ) {
            seen.append(line).append('\n');
            if (line.startsWith("server-pid=")) {
                return Long.parseLong(line.substring("server-pid=".length()));
            }
        }
        fail("the child JVM printed no server pid:\n" + seen);
        return -1;
    }

    /** Waits up to 5 s for the pid to go away; kills it (and fails) if it does not. */
    private static void assertGone(long pid, String how) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < deadline) {
            Optional<ProcessHandle> h = ProcessHandle.of(pid);
            if (h.isEmpty() || !h.get().isAlive()) {
                return;
            }
            Thread.sleep(20);
        }
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        fail("the tumbler server (pid " + pid + ") outlived its JVM after " + how);
    }

    @Test
    void killDashNineOfTheJvmTakesTheServerWithIt() throws Exception {
        Process jvm = child("wait");
        try {
            long pid = serverPid(jvm);
            assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "server running");
            jvm.destroyForcibly(); // SIGKILL: no shutdown hook runs
            assertTrue(jvm.waitFor(10, TimeUnit.SECONDS));
            assertEquals(137, jvm.exitValue());
            assertGone(pid, "kill -9");
        } finally {
            jvm.destroyForcibly();
        }
    }

    @Test
    void aJvmThatExitsWithoutClosingStopsTheServer() throws Exception {
        Process jvm = child("exit");
        try {
            long pid = serverPid(jvm);
            assertTrue(jvm.waitFor(20, TimeUnit.SECONDS), "the child JVM exits");
            assertFalse(jvm.isAlive());
            assertGone(pid, "a normal exit without close()");
        } finally {
            jvm.destroyForcibly();
        }
    }
}
