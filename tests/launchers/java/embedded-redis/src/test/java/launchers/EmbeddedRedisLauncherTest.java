package launchers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.SetParams;
import redis.embedded.RedisServer;

/**
 * A user's test setup with com.github.codemonstur:embedded-redis: the fork's own builder, its
 * executable provider pointed at a server binary, start(), a round trip with Jedis (SET/GET, a
 * lock taken with SET NX PX and released by a Lua compare-and-delete), stop(), and no process
 * of that binary left behind. The same test runs against redis-server and against tumbler.
 */
class EmbeddedRedisLauncherTest {

    private static final String RELEASE_SCRIPT =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    static Stream<Arguments> servers() {
        String redis = System.getProperty("redis.server.binary", "/usr/bin/redis-server");
        String tumbler = System.getenv("TUMBLER_BINARY");
        if (tumbler == null || tumbler.isEmpty()) {
            fail("TUMBLER_BINARY is not set (an absolute path to the tumbler binary)");
        }
        return Stream.of(Arguments.of("redis-server", Path.of(redis)), Arguments.of("tumbler", Path.of(tumbler)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("servers")
    void startRoundTripStopLeavesNoProcess(String name, Path binary, @TempDir Path dir) throws Exception {
        assertTrue(binary.isAbsolute(), name + ": not an absolute path: " + binary);
        assertTrue(Files.isExecutable(binary), name + ": not executable: " + binary);
        // what /proc/<pid>/exe names: /usr/bin/redis-server is a symlink on Debian
        Path executable = binary.toRealPath();
        assertEquals(Set.of(), childrenRunning(executable), name + ": already running before start()");

        int port = freePort();
        List<String> out = new CopyOnWriteArrayList<>();
        List<String> err = new CopyOnWriteArrayList<>();
        RedisServer server = RedisServer.newRedisServer()
                .executableProvider(binary::toFile)
                .port(port)
                .setting("dir " + dir)
                .soutListener(out::add)
                .serrListener(err::add)
                .build();
        ProcessHandle child = null;
        try {
            try {
                server.start();
            } catch (IOException e) {
                fail(name + ": start() failed: " + e.getMessage() + output(out, err), e);
            }
            assertTrue(server.isActive(), name + ": not active after start()" + output(out, err));
            assertEquals(List.of(port), server.ports());

            Set<ProcessHandle> children = childrenRunning(executable);
            assertEquals(1, children.size(), name + ": processes of " + executable + " started: " + children);
            child = children.iterator().next();

            try (Jedis jedis = new Jedis("127.0.0.1", port)) {
                assertEquals("PONG", jedis.ping());
                assertEquals("OK", jedis.set("greeting", "hello"));
                assertEquals("hello", jedis.get("greeting"));

                assertEquals("OK", jedis.set("lock", "v", SetParams.setParams().nx().px(30000)));
                assertNull(jedis.set("lock", "other", SetParams.setParams().nx().px(30000)), "NX on a held lock");
                long pttl = jedis.pttl("lock");
                assertTrue(pttl > 0 && pttl <= 30000, "PTTL " + pttl);
                assertEquals(0L, jedis.eval(RELEASE_SCRIPT, List.of("lock"), List.of("other")));
                assertEquals("v", jedis.get("lock"));
                assertEquals(1L, jedis.eval(RELEASE_SCRIPT, List.of("lock"), List.of("v")));
                assertNull(jedis.get("lock"));
            }

            server.stop();
            assertFalse(server.isActive(), name + ": still active after stop()");
            Optional<ProcessHandle> exited = exitedWithin(child, 5);
            assertTrue(exited.isPresent(), name + ": pid " + child.pid() + " still alive 5 s after stop()" + output(out, err));
            assertEquals(Set.of(), childrenRunning(executable), name + ": left behind after stop()");
            assertThrows(Exception.class, () -> {
                try (Jedis jedis = new Jedis("127.0.0.1", port)) {
                    jedis.ping();
                }
            }, name + ": port " + port + " still answers after stop()");
        } finally {
            // a failed assertion must not leave the server running either
            if (server.isActive()) {
                try { server.stop(); } catch (IOException ignored) { }
            }
            for (ProcessHandle p : childrenRunning(executable)) p.destroyForcibly();
        }
    }

    /** Live descendants of this JVM whose executable is the given file. */
    private static Set<ProcessHandle> childrenRunning(Path executable) {
        return ProcessHandle.current().descendants()
                .filter(ProcessHandle::isAlive)
                .filter(p -> p.info().command().map(c -> Path.of(c).equals(executable)).orElse(false))
                .collect(Collectors.toSet());
    }

    private static Optional<ProcessHandle> exitedWithin(ProcessHandle p, int seconds) throws Exception {
        try {
            return Optional.of(p.onExit().get(seconds, TimeUnit.SECONDS));
        } catch (java.util.concurrent.TimeoutException e) {
            return Optional.empty();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    private static String output(List<String> out, List<String> err) {
        return "\n--- server stdout ---\n" + String.join("\n", out) + "\n--- server stderr ---\n" + String.join("\n", err);
    }
}
