package io.tumbler.compat.redisson;

import java.util.List;

import org.redisson.config.ReadMode;

/** Redis Cluster, 3 primaries + 3 replicas, readMode MASTER. */
class ClusterMasterObjectsTest extends ObjectScenarios {
    @Override protected List<Target> createTargets() { return Topo.cluster(ReadMode.MASTER); }
}
