package io.tumbler.compat.redisson;

import java.util.List;

import org.redisson.config.Protocol;

class SingleResp3LocksTest extends LockScenarios {
    @Override protected List<Target> createTargets() { return Topo.single(Protocol.RESP3); }
}
