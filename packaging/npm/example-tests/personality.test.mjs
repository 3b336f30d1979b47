// `startTumbler({ personality })`: the server announces and behaves as that release.
import assert from "node:assert/strict";
import { test } from "node:test";
import Redis from "ioredis";
import { startTumbler } from "tumbler-server";

test("a valkey-9.1 server says so in INFO and HELLO", async () => {
  const srv = await startTumbler({ personality: "valkey-9.1" });
  const c = new Redis(srv.url, { maxRetriesPerRequest: 1 });
  try {
    const info = await c.info("server");
    assert.match(info, /\r\nserver_name:valkey\r\n/);
    assert.match(info, /\r\nvalkey_version:9\.1\.2\r\n/);
    const hello = await c.call("HELLO", "2");
    assert.equal(hello[hello.indexOf("server") + 1], "valkey");
  } finally {
    c.disconnect();
    await srv.stop();
  }
});

test("redis-7.0 has no ZRANK WITHSCORE, redis-7.2 has", async () => {
  for (const [personality, has] of [["redis-7.0", false], ["redis-7.2", true]]) {
    const srv = await startTumbler({ personality });
    const c = new Redis(srv.url, { maxRetriesPerRequest: 1 });
    try {
      await c.zadd("z", 1, "a");
      const call = c.call("ZRANK", "z", "a", "WITHSCORE");
      if (has) assert.deepEqual(await call, [0, "1"]);
      else await assert.rejects(call, /wrong number of arguments/);
    } finally {
      c.disconnect();
      await srv.stop();
    }
  }
});
