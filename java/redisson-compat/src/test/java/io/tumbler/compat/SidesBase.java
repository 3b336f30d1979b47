package io.tumbler.compat;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/** Every test runs once on tumbler and once on redis-server (single server each). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SidesBase {
    public static final String ON = "on {0}";
    protected List<Side> sides = new ArrayList<>();
    protected final String run = UUID.randomUUID().toString().substring(0, 8);

    @BeforeAll
    void startServers() { sides = Side.single(); }

    @AfterAll
    void stopServers() { sides.forEach(Side::stop); }

    public Stream<Side> sides() { return sides.stream(); }
}
