package io.tumbler.compat.redisson;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * A test class whose every test runs once per target: tumbler and redis-server in the same topology,
 * both built in @BeforeAll and stopped in @AfterAll.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class TargetsBase {
    /** Test names in reports: "lockUnlock(Target) on tumbler". */
    public static final String ON = "on {0}";

    protected List<Target> targets = new ArrayList<>();
    private final AtomicInteger seq = new AtomicInteger();
    private final String run = UUID.randomUUID().toString().substring(0, 8);
    protected ExecutorService pool;

    protected abstract List<Target> createTargets();

    @BeforeAll
    void startServers() {
        pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "compat-worker");
            t.setDaemon(true);
            return t;
        });
        targets = createTargets();
    }

    @AfterAll
    void stopServers() {
        targets.forEach(Target::close);
        if (pool != null) pool.shutdownNow();
    }

    public Stream<Target> targets() { return targets.stream(); }

    /** A fresh key name. */
    protected String key(String what) {
        return "compat:" + run + ":" + what + ":" + seq.incrementAndGet();
    }

    /** Runs on another thread (Redisson locks belong to threads), bounded to 15 s. */
    protected <T> T inThread(Callable<T> body) throws Exception {
        return async(body).get(15, TimeUnit.SECONDS);
    }

    protected <T> Future<T> async(Callable<T> body) {
        return pool.submit(body);
    }
}
