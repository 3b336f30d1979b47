package io.tumbler.compat.redisson;

import java.util.List;

import org.redisson.config.ReadMode;

/** Master-slave mode: a primary and 2 replicas, Redisson useMasterSlaveServers() with readMode SLAVE. */
class MasterSlaveLocksTest extends LockScenarios {
    @Override protected List<Target> createTargets() {
        return Topo.replSets(0, set -> Topo.masterSlaveConfig(set, ReadMode.SLAVE));
    }
}
