package io.tumbler.compat.redisson;

import java.util.List;

import org.redisson.config.ReadMode;

/**
 * Sentinel mode: a primary, 2 replicas and 3 sentinels (tumbler --replicas 2 --sentinels 3 in one
 * process; six real redis-server processes), Redisson useSentinelServers() with readMode SLAVE.
 */
class SentinelLocksTest extends LockScenarios {
    @Override protected List<Target> createTargets() {
        return Topo.replSets(3, set -> Topo.sentinelConfig(set, ReadMode.SLAVE));
    }
}
