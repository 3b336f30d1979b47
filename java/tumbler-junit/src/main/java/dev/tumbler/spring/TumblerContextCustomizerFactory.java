package dev.tumbler.spring;

import dev.tumbler.TumblerServer;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;
import org.springframework.util.ClassUtils;

/** Finds {@link TumblerServiceConnection} fields of a Spring test class (spring.factories). */
public class TumblerContextCustomizerFactory implements ContextCustomizerFactory {

    @Override
    public ContextCustomizer createContextCustomizer(Class<?> testClass, List<ContextConfigurationAttributes> attrs) {
        List<Field> fields = new ArrayList<>();
        for (Class<?> c = testClass; c != null; c = c.getEnclosingClass()) {
            for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass()) {
                for (Field f : k.getDeclaredFields()) {
                    if (f.isAnnotationPresent(TumblerServiceConnection.class)) {
                        if (!Modifier.isStatic(f.getModifiers()) || f.getType() != TumblerServer.class) {
                            throw new IllegalStateException("@TumblerServiceConnection field " + f
                                    + " must be a static TumblerServer");
                        }
                        fields.add(f);
                    }
                }
            }
        }
        return fields.isEmpty() ? null : new Customizer(fields);
    }

    /** Reads the fields when the context loads, so {@code @Tumbler} on the same field has set them. */
    static final class Customizer implements ContextCustomizer {
        private final List<Field> fields;

        Customizer(List<Field> fields) {
            this.fields = fields;
        }

        @Override
        public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration config) {
            ClassLoader cl = context.getClassLoader();
            boolean boot = ClassUtils.isPresent(
                    "org.springframework.boot.autoconfigure.service.connection.ConnectionDetailsFactories", cl);
            boolean redisson = ClassUtils.isPresent("org.redisson.config.Config", cl);
            int n = 0;
            for (Field f : fields) {
                TumblerServer server;
                try {
                    f.setAccessible(true);
                    server = (TumblerServer) f.get(null);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException("cannot read " + f, e);
                }
                if (server == null) {
                    throw new IllegalStateException("@TumblerServiceConnection field " + f + " is null: start the"
                            + " server in its initializer (= TumblerServer.builder()...start()) or add @Tumbler");
                }
                String suffix = n == 0 ? "" : Integer.toString(n);
                context.getBeanFactory().registerSingleton("tumblerServer" + suffix, server);
                if (boot) {
                    BootSupport.register(context, server, suffix);
                }
                if (redisson && f.getAnnotation(TumblerServiceConnection.class).redissonConfig() && n == 0) {
                    Map<String, Object> props = new LinkedHashMap<>();
                    props.put("spring.redis.redisson.config", server.redissonYaml());
                    context.getEnvironment().getPropertySources()
                            .addFirst(new MapPropertySource("tumbler", props));
                }
                n++;
            }
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Customizer && ((Customizer) o).fields.equals(fields);
        }

        @Override
        public int hashCode() {
            return Objects.hash(fields);
        }
    }

    static final class BootSupport {
        private BootSupport() {}

        static void register(ConfigurableApplicationContext context, TumblerServer server, String suffix) {
            Map<Class<?>, ?> details = new org.springframework.boot.autoconfigure.service.connection
                    .ConnectionDetailsFactories(context.getClassLoader()).getConnectionDetails(server, false);
            for (Map.Entry<Class<?>, ?> e : details.entrySet()) {
                context.getBeanFactory().registerSingleton(
                        "tumbler" + e.getKey().getSimpleName() + suffix, e.getValue());
            }
        }
    }
}
