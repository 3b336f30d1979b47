package io.tumbler.compat.redisson;

import java.util.List;

import org.redisson.config.ReadMode;

/** Redis Cluster, 3 primaries + 3 replicas, readMode SLAVE (reads from replicas). */
class ClusterSlaveLocksTest extends LockScenarios {
    @Override protected List<Target> createTargets() { return Topo.cluster(ReadMode.SLAVE); }
}
