package dev.tumbler.junit;

import dev.tumbler.TumblerServer;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.AfterTestExecutionCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.opentest4j.TestAbortedException;

/** The extension behind {@link Tumbler}; see there. */
public class TumblerExtension implements BeforeAllCallback, BeforeEachCallback, AfterTestExecutionCallback,
        AfterEachCallback, AfterAllCallback, ParameterResolver {

    private static final String REDISSON_CLIENT = "org.redisson.api.RedissonClient";

    /** The snapshot {@code restoreAfterEach} saves and restores. */
    public static final String SNAPSHOT = "tumbler-junit:before-each";

    /** The system property and the environment variable that turn failure artifacts on, naming their directory. */
    public static final String ARTIFACTS_PROPERTY = "tumbler.artifacts";
    public static final String ARTIFACTS_ENV = "TUMBLER_ARTIFACTS";
    static final String DEFAULT_ARTIFACTS_DIR = "target/tumbler-artifacts";

    private static final Pattern INVOCATION = Pattern.compile("\\[test-template-invocation:#(\\d+)]$");

    /** The servers one scope (a class or a test) owns, closed with it, clients first. */
    static final class Scope implements ExtensionContext.Store.CloseableResource {
        final List<Handle> handles = new ArrayList<>();

        @Override
        public void close() {
            RuntimeException first = null;
            for (int i = handles.size() - 1; i >= 0; i--) {
                try {
                    handles.get(i).close();
                } catch (RuntimeException e) {
                    first = first == null ? e : first;
                }
            }
            if (first != null) {
                throw first;
            }
        }
    }

    static final class Handle {
        final TumblerServer server;
        final boolean failOnLockInversions;
        final boolean restoreAfterEach;
        /** Where failure artifacts go; null when they are off. */
        final Path artifacts;
        /** "" for the class annotation's server, else the field's name (artifact file names). */
        final String label;
        boolean snapshotTaken;
        Object redisson;

        Handle(TumblerServer server, Tumbler t, String label) {
            this.server = server;
            this.failOnLockInversions = t.failOnLockInversions();
            this.restoreAfterEach = t.restoreAfterEach();
            this.artifacts = artifactsDir(t);
            this.label = label;
        }

        synchronized Object redisson() {
            if (redisson == null) {
                redisson = RedissonGlue.client(server);
            }
            return redisson;
        }

        synchronized void close() {
            try {
                if (redisson != null) {
                    RedissonGlue.shutdown(redisson);
                    redisson = null;
                }
            } finally {
                server.close();
            }
        }
    }

    private static ExtensionContext.Store store(ExtensionContext ctx) {
        return ctx.getStore(ExtensionContext.Namespace.create(TumblerExtension.class, ctx.getUniqueId()));
    }

    private static Scope scope(ExtensionContext ctx) {
        return store(ctx).getOrComputeIfAbsent("scope", k -> new Scope(), Scope.class);
    }

    private static Scope existingScope(ExtensionContext ctx) {
        return store(ctx).get("scope", Scope.class);
    }

    /** Starts a server for an annotation; lockdep is turned on when failOnLockInversions asks for it. */
    public static TumblerServer start(Tumbler t) {
        TumblerServer.Builder b = TumblerServer.builder().timeControl(t.timeControl());
        if (t.clusterPrimaries() > 0) {
            b.cluster(t.clusterPrimaries(), t.clusterReplicas());
        } else if (t.replicas() > 0 || t.sentinels() > 0) {
            b.replicas(t.replicas()).sentinels(t.sentinels()).masterName(t.masterName());
            if (t.sentinelDownAfterMillis() > 0) {
                b.sentinelDownAfter(java.time.Duration.ofMillis(t.sentinelDownAfterMillis()));
            }
        } else {
            b.nodes(t.nodes());
        }
        if (!t.personality().isEmpty()) {
            b.personality(t.personality());
        }
        String lockdep = t.lockdep().isEmpty() && t.failOnLockInversions() ? "yes" : t.lockdep();
        if (!lockdep.isEmpty()) {
            b.lockdep(lockdep);
        }
        if (t.tls()) {
            b.tls();
        }
        if (!t.password().isEmpty()) {
            b.password(t.password());
        }
        for (String u : t.users()) {
            String[] nameAndRest = u.split(":", 2);
            if (nameAndRest.length != 2) {
                throw new ExtensionConfigurationException("@Tumbler users: expected \"name:password [rules]\", got " + u);
            }
            String[] pwAndRules = nameAndRest[1].split(" ", 2);
            if (pwAndRules.length == 2) {
                b.user(nameAndRest[0], pwAndRules[0], pwAndRules[1]);
            } else {
                b.user(nameAndRest[0], pwAndRules[0]);
            }
        }
        b.args(t.args());
        return b.start();
    }

    private static Handle open(ExtensionContext ctx, Tumbler t, String label) {
        Handle h = new Handle(start(t), t, label);
        scope(ctx).handles.add(h);
        return h;
    }

    /**
     * The directory failure artifacts of a server annotated {@code t} go to, or null when they
     * are off: on with {@code failureArtifacts}, a non-empty {@code artifactsDir}, or the
     * {@code tumbler.artifacts} property or {@code TUMBLER_ARTIFACTS} variable (either names
     * the directory when the annotation does not).
     */
    static Path artifactsDir(Tumbler t) {
        String prop = System.getProperty(ARTIFACTS_PROPERTY, "");
        String env = Optional.ofNullable(System.getenv(ARTIFACTS_ENV)).orElse("");
        if (!t.failureArtifacts() && t.artifactsDir().isEmpty() && prop.isEmpty() && env.isEmpty()) {
            return null;
        }
        String dir = !t.artifactsDir().isEmpty() ? t.artifactsDir()
                : !prop.isEmpty() ? prop : !env.isEmpty() ? env : DEFAULT_ARTIFACTS_DIR;
        return Path.of(dir).toAbsolutePath();
    }

    private static List<Field> annotatedFields(Class<?> c, boolean statics) {
        List<Field> out = new ArrayList<>();
        for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass()) {
            for (Field f : k.getDeclaredFields()) {
                if (f.isAnnotationPresent(Tumbler.class) && Modifier.isStatic(f.getModifiers()) == statics) {
                    if (f.getType() != TumblerServer.class) {
                        throw new ExtensionConfigurationException("@Tumbler field " + f + " must be a TumblerServer");
                    }
                    out.add(f);
                }
            }
        }
        return out;
    }

    private static void set(Field f, Object target, Object value) {
        try {
            f.setAccessible(true);
            f.set(target, value);
        } catch (ReflectiveOperationException e) {
            throw new ExtensionConfigurationException("cannot set " + f, e);
        }
    }

    private static Optional<Tumbler> classAnnotation(ExtensionContext ctx) {
        for (Optional<Class<?>> c = ctx.getTestClass(); c.isPresent(); c = Optional.ofNullable(c.get().getEnclosingClass())) {
            Tumbler t = c.get().getAnnotation(Tumbler.class);
            if (t != null) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }

    @Override
    public void beforeAll(ExtensionContext ctx) {
        Class<?> testClass = ctx.getRequiredTestClass();
        Tumbler own = testClass.getAnnotation(Tumbler.class);
        if (own != null && own.lifecycle() == Tumbler.Lifecycle.PER_CLASS) {
            open(ctx, own, "");
        }
        for (Field f : annotatedFields(testClass, true)) {
            set(f, null, open(ctx, f.getAnnotation(Tumbler.class), f.getName()).server);
        }
    }

    @Override
    public void beforeEach(ExtensionContext ctx) {
        Optional<Tumbler> t = classAnnotation(ctx);
        // The class's servers: the first test's turn comes after @BeforeAll, so the snapshot
        // holds what @BeforeAll seeded.
        for (Handle h : handles(ctx.getParent())) {
            if (h.restoreAfterEach && !h.snapshotTaken) {
                h.server.snapshot(SNAPSHOT);
                h.snapshotTaken = true;
            }
        }
        if (t.isPresent() && t.get().lifecycle() == Tumbler.Lifecycle.PER_METHOD) {
            open(ctx, t.get(), "");
        }
        for (Object instance : ctx.getRequiredTestInstances().getAllInstances()) {
            for (Field f : annotatedFields(instance.getClass(), false)) {
                set(f, instance, open(ctx, f.getAnnotation(Tumbler.class), f.getName()).server);
            }
        }
    }

    /** Every server of the scope of ctx and of its ancestors (a test's own first, then its class's). */
    private static List<Handle> handles(Optional<ExtensionContext> ctx) {
        List<Handle> out = new ArrayList<>();
        for (Optional<ExtensionContext> c = ctx; c.isPresent(); c = c.get().getParent()) {
            Scope s = existingScope(c.get());
            if (s != null) {
                out.addAll(s.handles);
            }
        }
        return out;
    }

    private static boolean failed(ExtensionContext ctx) {
        return ctx.getExecutionException().filter(e -> !(e instanceof TestAbortedException)).isPresent();
    }

    /** {@code <class>.<method>}, with {@code [n]} for the n-th invocation of a parameterized or repeated test. */
    static String artifactName(ExtensionContext ctx) {
        String name = ctx.getRequiredTestClass().getName() + "." + ctx.getRequiredTestMethod().getName();
        Matcher m = INVOCATION.matcher(ctx.getUniqueId());
        return m.find() ? name + "[" + m.group(1) + "]" : name;
    }

    /**
     * Writes the artifacts of every server in reach of a failed test, once per test: when the
     * test method ends (the state it failed in), else at afterEach (a failure in a
     * {@code @BeforeEach} or {@code @AfterEach} method).
     */
    private static void saveArtifacts(ExtensionContext ctx) {
        if (!failed(ctx) || store(ctx).get("artifacts-written") != null) {
            return;
        }
        store(ctx).put("artifacts-written", Boolean.TRUE);
        Throwable failure = ctx.getExecutionException().get();
        String first = String.valueOf(failure).lines().findFirst().orElse("");
        for (Handle h : handles(Optional.of(ctx))) {
            if (h.artifacts == null || !h.server.isAlive()) {
                continue;
            }
            String name = artifactName(ctx) + (h.label.isEmpty() ? "" : "." + h.label);
            try {
                List<Path> files = h.server.writeArtifacts(h.artifacts, name,
                        "tumbler state when " + ctx.getUniqueId() + " failed", first);
                System.err.println("tumbler: " + ctx.getDisplayName() + " failed; server state in " + files);
            } catch (RuntimeException e) {
                // The test's own failure is what JUnit reports; this one is only logged.
                System.err.println("tumbler: could not save the state of " + h.server + " after "
                        + ctx.getDisplayName() + " failed: " + e);
            }
        }
    }

    @Override
    public void afterTestExecution(ExtensionContext ctx) {
        saveArtifacts(ctx);
    }

    private static void check(ExtensionContext ctx) {
        Scope s = existingScope(ctx);
        if (s == null) {
            return;
        }
        for (Handle h : s.handles) {
            if (h.failOnLockInversions && h.server.isAlive()) {
                h.server.assertNoLockInversions();
            }
        }
    }

    @Override
    public void afterEach(ExtensionContext ctx) {
        saveArtifacts(ctx);
        try {
            check(ctx);
        } finally {
            for (Handle h : handles(ctx.getParent())) {
                if (h.restoreAfterEach && h.snapshotTaken && h.server.isAlive()) {
                    h.server.restore(SNAPSHOT);
                }
            }
        }
    }

    @Override
    public void afterAll(ExtensionContext ctx) {
        check(ctx);
    }

    /** The server of the nearest scope: this test's, else the class's (or an enclosing class's). */
    private static Handle nearest(ExtensionContext ctx) {
        for (Optional<ExtensionContext> c = Optional.of(ctx); c.isPresent(); c = c.get().getParent()) {
            Scope s = existingScope(c.get());
            if (s != null && !s.handles.isEmpty()) {
                return s.handles.get(0);
            }
        }
        return null;
    }

    @Override
    public boolean supportsParameter(ParameterContext pc, ExtensionContext ctx) {
        Class<?> type = pc.getParameter().getType();
        return type == TumblerServer.class || type.getName().equals(REDISSON_CLIENT);
    }

    @Override
    public Object resolveParameter(ParameterContext pc, ExtensionContext ctx) {
        Handle h = nearest(ctx);
        if (h == null) {
            throw new ParameterResolutionException("no tumbler server in scope for " + pc.getParameter()
                    + ": annotate the class with @Tumbler (a PER_METHOD server exists only in test and"
                    + " @BeforeEach/@AfterEach methods)");
        }
        if (pc.getParameter().getType() == TumblerServer.class) {
            return h.server;
        }
        return h.redisson();
    }

    /** Keeps Redisson types out of this class's signatures. */
    static final class RedissonGlue {
        private RedissonGlue() {}

        static Object client(TumblerServer srv) {
            return org.redisson.Redisson.create(srv.redissonConfig());
        }

        static void shutdown(Object client) {
            ((org.redisson.api.RedissonClient) client).shutdown();
        }
    }
}
