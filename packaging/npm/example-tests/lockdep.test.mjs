// The lock-order checker from node: SET NX PX locks taken in opposite orders by two ioredis
// clients are reported, though they never deadlocked; one call fails the run.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import Redis from "ioredis";
import { LockOrderError, startTumbler } from "tumbler-server";

const servers = [];
const clients = [];
after(async () => {
  await Promise.all(clients.map((c) => c.quit().catch(() => {})));
  await Promise.all(servers.map((s) => s.stop()));
});

async function start(lockdep) {
  const srv = await startTumbler({ lockdep });
  servers.push(srv);
  const conn = () => {
    const c = new Redis(srv.url, { maxRetriesPerRequest: 1 });
    clients.push(c);
    return c;
  };
  return { srv, a: conn(), b: conn() };
}

const CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

async function nest(c, first, second) {
  assert.equal(await c.set(first, "tok", "PX", 30000, "NX"), "OK");
  assert.equal(await c.set(second, "tok", "PX", 30000, "NX"), "OK");
  await c.eval(CAD, 1, second, "tok");
  await c.eval(CAD, 1, first, "tok");
}

test("opposite lock orders in two clients fail assertNoLockInversions()", async () => {
  const { srv, a, b } = await start("yes");
  await nest(a, "order:1", "stock:1");
  await srv.assertNoLockInversions();
  await nest(b, "stock:2", "order:2");
  await assert.rejects(srv.assertNoLockInversions(), (e) => {
    assert.ok(e instanceof LockOrderError);
    assert.match(e.message, /(order:\* -> stock:\*|stock:\* -> order:\*)/);
    assert.equal(e.report.inversions.length, 1);
    return true;
  });
  await srv.lockdepReset();
  await srv.assertNoLockInversions();
});

test("strict mode refuses the inverting acquisition", async () => {
  const { a, b } = await start("strict");
  await nest(a, "x:1", "y:1");
  await b.set("y:2", "tok", "PX", 30000, "NX");
  await assert.rejects(b.set("x:2", "tok", "PX", 30000, "NX"), /LOCKDEP lock order inversion/);
});
