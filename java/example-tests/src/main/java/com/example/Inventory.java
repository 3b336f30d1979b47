package com.example;

import java.util.concurrent.TimeUnit;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.springframework.stereotype.Service;

/** Reserves stock under a Redisson lock with a lease: the code under test. */
@Service
public class Inventory {
    private final RedissonClient redisson;

    public Inventory(RedissonClient redisson) {
        this.redisson = redisson;
    }

    public RLock lockFor(String sku) {
        return redisson.getLock("stock:{" + sku + "}:lock");
    }

    /** Takes the SKU's lock for at most {@code leaseSeconds}; false if another holder has it. */
    public boolean reserve(String sku, long leaseSeconds) throws InterruptedException {
        return lockFor(sku).tryLock(0, leaseSeconds, TimeUnit.SECONDS);
    }

    public long decrement(String sku) {
        return redisson.getAtomicLong("stock:{" + sku + "}:count").decrementAndGet();
    }
}
