// Fails on purpose: ci.sh runs it alone with TUMBLER_ARTIFACTS set and checks that the
// failure left <title>.rdb and .txt with this test's keys. Not part of the normal suite.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Redis from "ioredis";
import { startTumbler } from "tumbler-server";

let srv;
let seed;
let r;
before(async () => {
  srv = await startTumbler();
  r = new Redis(srv.url, { maxRetriesPerRequest: 1 });
  seed = await srv.seed("orders", () => r.set("order:42:status", "paid"));
});
after(async () => {
  await r.quit();
  await srv.stop();
});

test("shipment is delivered", (t) =>
  seed.run(t.name, async () => {
    await r.hset("shipment:42", { carrier: "post", state: "lost" });
    await r.call("LOCK.ACQUIRE", "lock:shipment:42", "courier-7", 30000);
    assert.equal(await r.hget("shipment:42", "state"), "delivered"); // the expected failure
  }));

test("a passing test leaves no artifacts", (t) =>
  seed.run(t.name, async () => {
    assert.equal(await r.get("order:42:status"), "paid");
    assert.equal(await r.exists("shipment:42"), 0, "the failed test's keys outlived its restore");
  }));
