package io.tumbler.compat.redisson;

import java.util.List;

import org.redisson.config.Protocol;

class SingleResp2ObjectsTest extends ObjectScenarios {
    @Override protected List<Target> createTargets() { return Topo.single(Protocol.RESP2); }
}
