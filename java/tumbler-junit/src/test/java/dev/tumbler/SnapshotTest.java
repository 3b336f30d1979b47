package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TumblerServer's snapshot, state and RDB calls against a real server. */
class SnapshotTest {

    /** Runs the commands in database db on node 0 and returns the last reply. */
    private static Object inDb(TumblerServer srv, int db, String... cmd) {
        List<Object> r = Resp.pipeline(srv.host(), srv.port(), null, null, null, 10_000, false,
                List.of(new String[] {"SELECT", Integer.toString(db)}, cmd));
        return r.get(1);
    }

    @Test
    void restoreBringsBackEveryDatabase() {
        try (TumblerServer srv = TumblerServer.builder().timeControl(true).start()) {
            srv.command("SET", "a", "1");
            srv.command("RPUSH", "list", "x", "y");
            srv.command("SET", "ttl", "t", "PX", "60000");
            inDb(srv, 5, "SET", "five", "5");
            srv.snapshot("seed");
            assertEquals(List.of("seed"), srv.snapshots(), "one name, whatever the databases");
            assertTrue(((List<?>) srv.command("TUMBLER.SNAPSHOT", "LIST")).contains("seed@db5"),
                    "database 5 has its own snapshot on the server");

            srv.command("SET", "a", "changed");
            srv.command("DEL", "list");
            srv.command("SET", "new", "n");
            srv.command("PERSIST", "ttl");
            inDb(srv, 5, "DEL", "five");
            inDb(srv, 5, "SET", "extra", "e");

            srv.restore("seed");
            assertEquals("1", srv.command("GET", "a"));
            assertEquals(List.of("x", "y"), srv.command("LRANGE", "list", "0", "-1"));
            assertEquals(0L, srv.command("EXISTS", "new"));
            long pttl = (Long) srv.command("PTTL", "ttl");
            assertTrue(pttl > 0 && pttl <= 60_000, "the TTL came back: " + pttl);
            assertEquals("5", inDb(srv, 5, "GET", "five"));
            assertEquals(0L, inDb(srv, 5, "EXISTS", "extra"));

            // The snapshot stays: a second round restores it again.
            srv.command("FLUSHALL");
            srv.restore("seed");
            assertEquals("1", srv.command("GET", "a"));
            assertEquals("5", inDb(srv, 5, "GET", "five"));

            assertTrue(srv.dropSnapshot("seed"));
            assertFalse(srv.dropSnapshot("seed"));
            assertFalse(srv.snapshots().contains("seed"));
            TumblerException e = assertThrows(TumblerException.class, () -> srv.restore("seed"));
            assertTrue(e.getMessage().contains("no such snapshot"), e.getMessage());
        }
    }

    @Test
    void oneDatabaseAloneLeavesTheOthers() {
        try (TumblerServer srv = TumblerServer.start()) {
            inDb(srv, 3, "SET", "mine", "1");
            srv.snapshot(3, "worker3");
            inDb(srv, 3, "SET", "mine", "2");
            srv.command("SET", "other-worker", "x");
            srv.restore(3, "worker3");
            assertEquals("1", inDb(srv, 3, "GET", "mine"));
            assertEquals("x", srv.command("GET", "other-worker"), "database 0 is not restored");
            assertEquals(List.of("worker3"), srv.snapshots());
        }
    }

    @Test
    void snapshotCoversEveryNode() {
        try (TumblerServer srv = TumblerServer.builder().nodes(2).start()) {
            srv.commandOn(0, "SET", "zero", "0");
            srv.commandOn(1, "SET", "one", "1");
            srv.snapshot("s");
            srv.commandOn(0, "DEL", "zero");
            srv.commandOn(1, "SET", "one", "changed");
            srv.restore("s");
            assertEquals("0", srv.commandOn(0, "GET", "zero"));
            assertEquals("1", srv.commandOn(1, "GET", "one"));
            assertNull(srv.commandOn(0, "GET", "one"));
        }
    }

    @Test
    void stateAndRdbDescribeTheData(@TempDir Path dir) throws Exception {
        try (TumblerServer srv = TumblerServer.start()) {
            srv.command("SET", "user:1", "ada");
            srv.command("HSET", "cart:9", "sku", "42");
            inDb(srv, 3, "SET", "in-three", "x");

            String state = srv.state();
            for (String k : new String[] {"user:1", "ada", "cart:9", "sku", "in-three"}) {
                assertTrue(state.contains(k), "TUMBLER.STATE names " + k + ":\n" + state);
            }
            byte[] rdb = srv.rdb();
            assertEquals("REDIS", new String(rdb, 0, 5, StandardCharsets.US_ASCII));
            assertTrue(indexOf(rdb, "user:1") > 0 && indexOf(rdb, "in-three") > 0,
                    "the RDB carries the keys of every database");

            List<Path> files = srv.writeArtifacts(dir.resolve("out"), "case", "why: a note");
            Path txt = dir.resolve("out/case.txt");
            Path rdbFile = dir.resolve("out/case.rdb");
            assertEquals(List.of(txt, rdbFile), files);
            String text = Files.readString(txt);
            assertTrue(text.startsWith("# why: a note\n"), text);
            assertTrue(text.contains("cart:9"), text);
            byte[] saved = Files.readAllBytes(rdbFile);
            assertEquals("REDIS", new String(saved, 0, 5, StandardCharsets.US_ASCII));
        }
    }

    static int indexOf(byte[] hay, String needle) {
        byte[] n = needle.getBytes(StandardCharsets.UTF_8);
        outer:
        for (int i = 0; i + n.length <= hay.length; i++) {
            for (int j = 0; j < n.length; j++) {
                if (hay[i + j] != n[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Test
    void pipelineReturnsRawBulkStrings() {
        try (TumblerServer srv = TumblerServer.start()) {
            srv.command("SET", "k", "v");
            List<Object> r = Resp.pipeline(srv.host(), srv.port(), null, null, null, 10_000, true,
                    List.of(new String[] {"GET", "k"}, new String[] {"PING"}));
            assertTrue(Arrays.equals("v".getBytes(StandardCharsets.UTF_8), (byte[]) r.get(0)));
            assertEquals("PONG", r.get(1));
        }
    }
}
