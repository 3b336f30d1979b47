// Seed once, restore after each test: one TUMBLER.SNAPSHOT RESTORE puts back whatever a
// test changed. node:test here; jest and mocha take the same afterEach(() => seed.restore()).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";
import Redis from "ioredis";
import { artifactName, startTumbler, TumblerError } from "tumbler-server";

let srv;
let seed;
let r;

before(async () => {
  srv = await startTumbler();
  r = new Redis(srv.url, { maxRetriesPerRequest: 1 });
  seed = await srv.seed("catalog", async () => {
    await r.set("stock:apple", 10);
    await r.hset("user:1", { name: "ada", plan: "free" });
    await r.rpush("queue", "a", "b");
    await r.set("session:1", "token", "EX", 3600);
  });
});
afterEach(() => seed.restore());
after(async () => {
  await r.quit();
  await srv.stop();
});

async function assertSeeded() {
  assert.equal(await r.get("stock:apple"), "10");
  assert.deepEqual(await r.hgetall("user:1"), { name: "ada", plan: "free" });
  assert.deepEqual(await r.lrange("queue", 0, -1), ["a", "b"]);
  const ttl = await r.ttl("session:1");
  assert.ok(ttl > 0 && ttl <= 3600, `ttl ${ttl}`);
  assert.equal(await r.dbsize(), 4);
}

for (const n of [1, 2, 3]) {
  test(`test ${n} starts from the seed, whatever the one before changed`, async () => {
    await assertSeeded();
    await r.set("stock:apple", n);
    await r.del("user:1");
    await r.rpush("queue", `t${n}`);
    await r.persist("session:1");
    await r.set(`scratch:${n}`, "x");
  });
}

test("a restore leaves the other databases alone", async () => {
  const other = new Redis(`redis://${srv.host}:${srv.port}/1`, { maxRetriesPerRequest: 1 });
  try {
    await other.set("elsewhere", "before");
    const mine = await srv.snapshot("mine");
    assert.ok((await srv.snapshots()).includes("mine"));
    await r.set("stock:apple", 0);
    await other.set("elsewhere", "after");
    await mine.restore();
    assert.equal(await r.get("stock:apple"), "10");
    assert.equal(await other.get("elsewhere"), "after");
    assert.equal(await mine.drop(), true);
    assert.equal(await srv.dropSnapshot("mine"), false);
    await assert.rejects(srv.restore("mine"), (e) => e instanceof TumblerError && /no such snapshot/.test(e.message));
    await other.flushdb();
  } finally {
    other.disconnect();
  }
});

test("seed.run() keeps the state of a failed body, restores, and rethrows its error", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tumbler-artifacts-"));
  const boom = new Error("the order never shipped");
  await assert.rejects(
    seed.run("orders > ships order 42", async () => {
      await r.hset("shipment:42", { carrier: "post", state: "lost" });
      throw boom;
    }, { artifacts: dir }),
    (e) => e === boom,
  );
  assert.deepEqual(boom.tumblerArtifacts, {
    txt: path.join(dir, "orders_ships_order_42.txt"),
    rdb: path.join(dir, "orders_ships_order_42.rdb"),
  });
  const txt = fs.readFileSync(boom.tumblerArtifacts.txt, "utf8");
  assert.match(txt, /^# test: orders > ships order 42\n/);
  assert.match(txt, /shipment:42/);
  assert.match(txt, /stock:apple/);
  assert.equal(fs.readFileSync(boom.tumblerArtifacts.rdb).subarray(0, 5).toString(), "REDIS");
  assert.equal(await r.exists("shipment:42"), 0, "run() restored after the failure");
  // A body that passes writes nothing.
  assert.equal(await seed.run("passes", () => 7, { artifacts: dir }), 7);
  assert.deepEqual(fs.readdirSync(dir).sort(), ["orders_ships_order_42.rdb", "orders_ships_order_42.txt"]);
  fs.rmSync(dir, { recursive: true });
});

test("artifact names are safe file names", () => {
  assert.equal(artifactName("cart > adds an item (2/3)"), "cart_adds_an_item_2_3");
  const long = artifactName("x".repeat(300));
  assert.equal(long.length, 120);
  assert.notEqual(long, artifactName("x".repeat(301)));
});
