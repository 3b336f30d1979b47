package io.tumbler.compat.redisson;

import java.util.List;

import org.redisson.config.ReadMode;

/**
 * Replicated mode: a primary and 2 replicas, Redisson useReplicatedServers() with all three
 * addresses (it finds the primary by INFO replication's role), readMode SLAVE.
 */
class ReplicatedLocksTest extends LockScenarios {
    @Override protected List<Target> createTargets() {
        return Topo.replSets(0, set -> Topo.replicatedConfig(set, ReadMode.SLAVE));
    }
}
