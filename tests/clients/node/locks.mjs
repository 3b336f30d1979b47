// Node lock libraries against tumbler: one scenario per invocation.
//
//     node locks.mjs <scenario> <port> [<port> ...]
//
// Each scenario asserts mutual exclusion, lease expiry and release, and prints
// "ok <scenario>"; a failure throws (non-zero exit). The servers run with
// --enable-time-control yes, so leases lapse via TUMBLER.TIME ADVANCE instead of sleeping.

import assert from "node:assert/strict";
import Redis from "ioredis";
import Redlock from "redlock";
import { Mutex, Semaphore } from "redis-semaphore";

const [scenario, ...portArgs] = process.argv.slice(2);
const ports = portArgs.map(Number);
const clients = [];
const client = (port) => {
  const c = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1, lazyConnect: false });
  clients.push(c);
  return c;
};
const advance = (cs, ms) => Promise.all(cs.map((c) => c.call("TUMBLER.TIME", "ADVANCE", ms)));

async function ioredisBasics() {
  const c = client(ports[0]);
  assert.equal(await c.ping(), "PONG");
  assert.equal(await c.set("k", "v", "PX", 30000, "NX"), "OK");
  assert.equal(await c.set("k", "w", "PX", 30000, "NX"), null);
  const res = await c.multi().incr("n").incr("n").exec();
  assert.deepEqual(res, [[null, 1], [null, 2]]);
  await advance([c], 30001);
  assert.equal(await c.get("k"), null);
}

// redlock settles an operation as soon as a quorum has answered: the last server's request
// (after a NOSCRIPT, a second round trip) can still be on its way when the promise resolves,
// and another client's request on another connection can reach that server first. Waits
// until every server holds `value`, so the steps after an acquire do not race it.
async function heldEverywhere(cs, key, value) {
  for (let i = 0; i < 400; i++) {
    const vs = await Promise.all(cs.map((c) => c.get(key)));
    if (vs.every((v) => v === value)) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.fail(`${key} is not held by ${value} on every server`);
}

async function redlock() {
  const a = ports.map(client);
  const b = ports.map(client);
  const ra = new Redlock(a, { retryCount: 0 });
  const rb = new Redlock(b, { retryCount: 0 });
  const lock = await ra.acquire(["lock:shipment:7"], 30000);
  await heldEverywhere(a, "lock:shipment:7", lock.value);
  await assert.rejects(rb.acquire(["lock:shipment:7"], 30000), "second owner got a held lock");
  const extended = await lock.extend(30000);
  // A minority of masters lapsing does not free the lock.
  await advance([a[0]], 30001);
  await assert.rejects(rb.acquire(["lock:shipment:7"], 30000));
  await advance(a.slice(1), 30001);
  const taken = await rb.acquire(["lock:shipment:7"], 30000);
  // The stale holder's release must not free the new owner's lock.
  await extended.release().catch(() => {});
  await assert.rejects(ra.acquire(["lock:shipment:7"], 30000));
  await taken.release();
  const again = await ra.acquire(["lock:shipment:7"], 30000);
  await again.release();
  // using(): auto-extending critical section.
  await ra.using(["lock:using"], 5000, async (signal) => {
    assert.equal(signal.aborted, false);
    assert.equal(await a[0].exists("lock:using"), 1);
  });
}

async function semaphore() {
  const a = client(ports[0]);
  const b = client(ports[0]);
  const opts = { lockTimeout: 30000, acquireTimeout: 100, retryInterval: 10, refreshInterval: 0 };
  const m1 = new Mutex(a, "job", opts);
  const m2 = new Mutex(b, "job", opts);
  await m1.acquire();
  assert.equal(m1.isAcquired, true);
  assert.equal(await m2.tryAcquire(), false);
  await advance([a], 30001);
  assert.equal(await m2.tryAcquire(), true);
  await m2.release();

  const s = (c) => new Semaphore(c, "pool", 2, opts);
  const s1 = s(a), s2 = s(b), s3 = s(a);
  await s1.acquire();
  await s2.acquire();
  assert.equal(await s3.tryAcquire(), false, "a third holder of a 2-semaphore");
  await s1.release();
  assert.equal(await s3.tryAcquire(), true);
  await s2.release();
  await s3.release();
}

// Four connections each take a redlock, a Mutex and a 2-Semaphore 25 times around
// non-atomic read-modify-writes: a lost update or a third semaphore holder fails.
async function contended() {
  const cs = [0, 1, 2, 3].map(() => client(ports[0]));
  const work = async (c) => {
    const rl = new Redlock([c], { retryCount: 5000, retryDelay: 2, retryJitter: 2 });
    const retry = { retryInterval: 2, acquireTimeout: 60000 };
    for (let i = 0; i < 25; i++) {
      await rl.using(["lock:counted"], 30000, async () => {
        await c.set("counted", Number((await c.get("counted")) ?? 0) + 1);
      });
      const m = new Mutex(c, "counted2", retry);
      await m.acquire();
      await c.set("counted2", Number((await c.get("counted2")) ?? 0) + 1);
      await m.release();
      const s = new Semaphore(c, "pool2", 2, retry);
      await s.acquire();
      const holders = await c.incr("holders");
      assert.ok(holders <= 2, `${holders} holders of a 2-semaphore`);
      await c.decr("holders");
      await s.release();
    }
  };
  await Promise.all(cs.map(work));
  assert.equal(await cs[0].get("counted"), "100");
  assert.equal(await cs[0].get("counted2"), "100");
}

const scenarios = { ioredis_basics: ioredisBasics, redlock, redis_semaphore: semaphore, contended };

try {
  await scenarios[scenario]();
  console.log(`ok ${scenario}`);
} finally {
  await Promise.all(clients.map((c) => c.quit().catch(() => {})));
}
