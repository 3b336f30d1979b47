package dev.tumbler.spring;

import dev.tumbler.TumblerServer;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.autoconfigure.service.connection.ConnectionDetailsFactory;

/** Boot's connection-details factory for a {@link TumblerServer} source (registered in spring.factories). */
public class TumblerConnectionDetailsFactory implements ConnectionDetailsFactory<TumblerServer, RedisConnectionDetails> {
    @Override
    public RedisConnectionDetails getConnectionDetails(TumblerServer source) {
        return new TumblerRedisConnectionDetails(source);
    }
}
