// Node clients against tumbler's nodes and emulated cluster: one scenario per invocation.
//
//     node cluster.mjs <scenario> <port> [<port> ...]
//
// The server runs with --enable-test-control yes (TUMBLER.NODE / TUMBLER.CLUSTER). Each
// scenario prints "ok <scenario>"; a failure throws (non-zero exit).

import assert from "node:assert/strict";
import Redis from "ioredis";
import Redlock from "redlock";

const [scenario, ...portArgs] = process.argv.slice(2);
const ports = portArgs.map(Number);
const clients = [];
const track = (c) => {
  clients.push(c);
  return c;
};
const plain = (port) =>
  track(new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 0, retryStrategy: () => 50 }));
const cluster = () =>
  track(new Redis.Cluster([{ host: "127.0.0.1", port: ports[0] }], { redisOptions: { maxRetriesPerRequest: 1 } }));

async function ioredisCluster() {
  const c = cluster();
  const other = cluster();
  const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
  const names = Array.from({ length: 12 }, (_, i) => `{order:${i}}:lock`);
  const slots = await Promise.all(names.map((n) => c.cluster("KEYSLOT", n)));
  const owner = (s) => (s <= 5460 ? 0 : s <= 10922 ? 1 : 2);
  assert.equal(new Set(slots.map(owner)).size, 3, "locks spread over every node");
  for (const n of names) assert.equal(await c.set(n, "me", "PX", 30000, "NX"), "OK");
  for (const n of names) assert.equal(await other.set(n, "you", "PX", 30000, "NX"), null);
  for (const n of names) assert.equal(await other.eval(RELEASE, 1, n, "you"), 0);
  for (const n of names) assert.equal(await c.eval(RELEASE, 1, n, "me"), 1);
  assert.equal(c.nodes("master").length, 3);

  // The slot of a held lock moves: ioredis follows -MOVED.
  const name = "{moving}:lock";
  assert.equal(await c.set(name, "me", "PX", 30000, "NX"), "OK");
  const slot = await c.cluster("KEYSLOT", name);
  const ctl = plain(ports[0]);
  assert.equal(await ctl.call("TUMBLER.CLUSTER", "MOVESLOT", slot, (owner(slot) + 1) % 3), 1);
  assert.equal(await c.get(name), "me");
  assert.equal(await c.eval(RELEASE, 1, name, "me"), 1);

  // Keys in two slots sent as one command: the server answers CROSSSLOT.
  await assert.rejects(c.mset("{a}x", "1", "{b}y", "2"), /CROSSSLOT/);
  assert.equal(await c.mset("{a}x", "1", "{a}y", "2"), "OK");
}

async function redlockFaults() {
  const ctl = plain(ports[0]);
  const rl = new Redlock(ports.map(plain), { retryCount: 0 });
  await ctl.call("TUMBLER.NODE", "DOWN", 2);
  const lock = await rl.acquire(["lock:report"], 30000);
  await lock.release().catch(() => {});
  await ctl.call("TUMBLER.NODE", "DOWN", 1);
  await assert.rejects(rl.acquire(["lock:report"], 30000));
  await ctl.call("TUMBLER.NODE", "UP", 1);
  await ctl.call("TUMBLER.NODE", "UP", 2);
  const deadline = Date.now() + 10000;
  for (;;) {
    try {
      const l = await rl.acquire(["lock:report"], 30000);
      await l.release().catch(() => {});
      break;
    } catch (e) {
      assert.ok(Date.now() < deadline, `no quorum after the nodes came back: ${e}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const scenarios = { ioredis_cluster: ioredisCluster, redlock_faults: redlockFaults };

try {
  await scenarios[scenario]();
  console.log(`ok ${scenario}`);
} finally {
  for (const c of clients) c.disconnect();
}
