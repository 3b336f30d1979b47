package io.tumbler.compat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/** One server process this JVM started: stopped by its own handle, never by name. */
public final class ServerProc implements AutoCloseable {
    private static final Set<ServerProc> LIVE = ConcurrentHashMap.newKeySet();
    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(ServerProc::close)));
    }

    public final String name;
    public final Process process;
    public final List<Integer> ports;
    public final List<Integer> tlsPorts;
    public final Path log;

    ServerProc(String name, Process process, List<Integer> ports, List<Integer> tlsPorts, Path log) {
        this.name = name;
        this.process = process;
        this.ports = ports;
        this.tlsPorts = tlsPorts;
        this.log = log;
        LIVE.add(this);
    }

    public int port() { return ports.get(0); }

    public String logTail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override public void close() {
        if (!LIVE.remove(this)) return;
        if (Boolean.getBoolean("compat.debug")) new Throwable("stopping " + this).printStackTrace();
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    @Override public String toString() { return name + ports; }
}
