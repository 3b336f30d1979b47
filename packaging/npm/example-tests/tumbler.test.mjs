// An example suite as a user writes it: node's test runner, ioredis and redlock against
// the installed tumbler-server package.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, beforeEach, test } from "node:test";
import Redis from "ioredis";
import Redlock from "redlock";
import { startTumbler, TumblerError, binaryPath } from "tumbler-server";

let srv;
const clients = [];
const client = () => {
  const c = new Redis(srv.url, { maxRetriesPerRequest: 1 });
  clients.push(c);
  return c;
};

before(async () => {
  srv = await startTumbler({ timeControl: true });
});
beforeEach(() => srv.flushall());
after(async () => {
  await Promise.all(clients.map((c) => c.quit().catch(() => {})));
  await srv.stop();
});

test("url and port point at a running server", async () => {
  assert.equal(srv.url, `redis://127.0.0.1:${srv.port}/0`);
  assert.equal(await client().ping(), "PONG");
});

test("advance() expires a 30 s key without sleeping", async () => {
  await srv.freeze(); // only advance() moves time: exactly 30 s
  const c = client();
  await c.set("lease", "me", "PX", 30000);
  await srv.advance(29999);
  assert.equal(await c.get("lease"), "me");
  const t = await srv.advance(2);
  assert.equal(typeof t, "number");
  assert.equal(await c.get("lease"), null);
  await srv.resume();
});

test("redlock: a 30 s lease lapses through advance() and another owner takes it", async () => {
  const ra = new Redlock([client()], { retryCount: 0 });
  const rb = new Redlock([client()], { retryCount: 0 });
  const held = await ra.acquire(["lock:shipment:7"], 30000);
  await assert.rejects(rb.acquire(["lock:shipment:7"], 30000));
  await srv.advance(30001);
  const taken = await rb.acquire(["lock:shipment:7"], 30000);
  await held.release().catch(() => {}); // the stale holder cannot free the new owner's lock
  await assert.rejects(ra.acquire(["lock:shipment:7"], 30000));
  await taken.release();
});

test("freeze() stops TTLs, resume() restarts them", async () => {
  const c = client();
  await c.set("k", "v", "PX", 60000);
  await srv.freeze();
  const before = await c.pttl("k");
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(await c.pttl("k"), before);
  await srv.resume();
});

test("each test starts empty (flushall in beforeEach)", async () => {
  assert.equal(await client().dbsize(), 0);
});

test("a server without time control says how to get it", async () => {
  const plain = await startTumbler({ args: ["--databases", "2"] });
  try {
    await assert.rejects(plain.advance(1), (e) => e instanceof TumblerError && /timeControl: true/.test(e.message));
    const c = new Redis(plain.url);
    assert.equal(await c.config("GET", "databases").then((r) => r[1]), "2");
    c.disconnect();
  } finally {
    await plain.stop();
  }
});

test("a missing binary gives an error naming the fix", async () => {
  await assert.rejects(startTumbler({ binary: "/nonexistent/tumbler" }), (e) => {
    assert.ok(e instanceof TumblerError);
    assert.match(e.message, /not found at \/nonexistent\/tumbler/);
    assert.match(e.message, /TUMBLER_BINARY/);
    return true;
  });
});

test("the binary is the package's own", () => {
  const require = createRequire(import.meta.url);
  const pkgDir = require.resolve("tumbler-server").replace(/index\.js$/, "");
  assert.equal(binaryPath(), `${pkgDir}bin/tumbler`);
  assert.match(binaryPath(), /node_modules\/tumbler-server\/bin\/tumbler$/);
});
