package dev.tumbler;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Finds the tumbler executable: an explicit path, else {@code $TUMBLER_BINARY} (or the system
 * property {@code tumbler.binary}), else the binary this jar carries, extracted once per
 * content hash to {@code $XDG_CACHE_HOME/tumbler-junit} (default {@code ~/.cache/tumbler-junit},
 * or the temp dir when the home is not writable).
 */
final class Binary {
    static final String RESOURCE = "/dev/tumbler/native/linux-x86_64/tumbler";
    private static final String HOW_TO_FIX = "Point TUMBLER_BINARY (or TumblerServer.builder().binary(path))"
            + " at a tumbler executable, e.g. one built with `cargo build --release -p tumbler`"
            + " (target/release/tumbler).";
    private static volatile Path bundled;

    private Binary() {}

    static Path resolve(Path explicit) {
        if (explicit != null) {
            return check(explicit, "the builder's binary()");
        }
        String env = System.getProperty("tumbler.binary", System.getenv("TUMBLER_BINARY"));
        if (env != null && !env.isEmpty()) {
            return check(Paths.get(env), "TUMBLER_BINARY");
        }
        Path p = bundled;
        if (p == null || !Files.isExecutable(p)) { // another JVM may have pruned it
            synchronized (Binary.class) {
                if (bundled == null || !Files.isExecutable(bundled)) {
                    bundled = extract();
                }
                p = bundled;
            }
        }
        return p;
    }

    private static Path check(Path p, String from) {
        if (!Files.isRegularFile(p)) {
            throw new TumblerException("tumbler binary not found at " + p + " (from " + from + "). " + HOW_TO_FIX);
        }
        if (!Files.isExecutable(p)) {
            throw new TumblerException("tumbler binary at " + p + " is not executable. " + HOW_TO_FIX);
        }
        return p;
    }

    private static Path extract() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new TumblerException("the bundled tumbler binary is for Linux x86-64, this is " + os + "/"
                    + arch + ". " + HOW_TO_FIX);
        }
        String hash;
        try (InputStream h = Binary.class.getResourceAsStream(RESOURCE + ".sha256")) {
            if (h == null) {
                throw new TumblerException("this tumbler-junit jar carries no binary. " + HOW_TO_FIX);
            }
            hash = new String(h.readAllBytes(), StandardCharsets.US_ASCII).trim();
        } catch (IOException e) {
            throw new TumblerException("cannot read the bundled binary's hash", e);
        }
        String name = "tumbler-" + hash.substring(0, Math.min(16, hash.length()));
        IOException last = null;
        for (Path dir : cacheDirs()) {
            Path target = dir.resolve(name);
            if (Files.isRegularFile(target) && Files.isExecutable(target)) {
                return target;
            }
            try {
                Files.createDirectories(dir);
                Path tmp = Files.createTempFile(dir, name, ".part");
                try (InputStream in = Binary.class.getResourceAsStream(RESOURCE)) {
                    Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                }
                if (!tmp.toFile().setExecutable(true, false)) {
                    throw new IOException("cannot make " + tmp + " executable");
                }
                try {
                    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
                }
                prune(dir, target);
                return target;
            } catch (IOException e) {
                last = e;
            }
        }
        throw new TumblerException("cannot extract the bundled tumbler binary: " + last, last);
    }

    /** Removes binaries of other versions unused for a day (a JVM running one keeps its inode). */
    private static void prune(Path dir, Path keep) {
        long dayAgo = System.currentTimeMillis() - 86_400_000L;
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            files.filter(f -> !f.equals(keep) && f.getFileName().toString().startsWith("tumbler-"))
                    .forEach(f -> {
                        try {
                            if (Files.getLastModifiedTime(f).toMillis() < dayAgo) {
                                Files.deleteIfExists(f);
                            }
                        } catch (IOException ignored) {
                            // another JVM's, or gone already
                        }
                    });
        } catch (IOException ignored) {
            // pruning is best effort
        }
    }

    private static Path[] cacheDirs() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path home = xdg != null && !xdg.isEmpty() ? Paths.get(xdg)
                : Paths.get(System.getProperty("user.home"), ".cache");
        Path tmp = Paths.get(System.getProperty("java.io.tmpdir"),
                "tumbler-junit-" + System.getProperty("user.name", "user"));
        return new Path[] {home.resolve("tumbler-junit"), tmp};
    }
}
