// ioredis against tumbler's streams, the way BullMQ-style queues use them: jobs are added
// by a Lua script that also appends an event with `XADD ... MAXLEN ~` (BullMQ's events
// stream), a listener follows the events with `XREAD BLOCK` from `$` (like QueueEvents),
// and workers consume a job stream through a consumer group with `XREADGROUP BLOCK`.
//
//     node streams.mjs <scenario> <port>
//
// Prints "ok <scenario>"; any failure throws (non-zero exit).

import assert from "node:assert/strict";
import Redis from "ioredis";

const [scenario, ...portArgs] = process.argv.slice(2);
const port = Number(portArgs[0]);
const clients = [];
const client = () => {
  const c = new Redis({ port, lazyConnect: false, maxRetriesPerRequest: 1 });
  clients.push(c);
  return c;
};

const ADD_JOB = `
  local id = redis.call('XADD', KEYS[1], '*', 'name', ARGV[1], 'data', ARGV[2])
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'event', 'added', 'jobId', id)
  return id
`;

async function queue() {
  const producer = client();
  await producer.del("q:jobs", "q:events");
  await producer.xgroup("CREATE", "q:jobs", "workers", "$", "MKSTREAM");
  producer.defineCommand("addJob", { numberOfKeys: 2, lua: ADD_JOB });

  // The events listener blocks from "$" and follows the stream with the last ID it saw.
  const blocked = async () => Number((await producer.info("clients")).match(/blocked_clients:(\d+)/)[1]);
  const before = await blocked();
  const listener = client();
  const seenEvents = [];
  const listening = (async () => {
    let last = "$";
    while (seenEvents.length < 100) {
      const reply = await listener.xread("BLOCK", 10000, "STREAMS", "q:events", last);
      assert.ok(reply, "XREAD BLOCK timed out");
      for (const [id, fields] of reply[0][1]) {
        last = id;
        seenEvents.push(fields[3]);
      }
    }
  })();
  while ((await blocked()) <= before) {}

  const done = new Set();
  const worker = async (name) => {
    const c = client();
    for (;;) {
      // One entry per read: a worker that took two of the three "stop" entries in one
      // batch would leave another worker waiting for a stop that never comes.
      const reply = await c.xreadgroup(
        "GROUP", "workers", name, "COUNT", 1, "BLOCK", 10000, "STREAMS", "q:jobs", ">");
      assert.ok(reply, `${name} timed out`);
      for (const [id, fields] of reply[0][1]) {
        await c.xack("q:jobs", "workers", id);
        if (fields[1] === "stop") return;
        assert.ok(!done.has(fields[3]), `job ${fields[3]} delivered twice`);
        done.add(fields[3]);
      }
    }
  };
  const workers = [worker("w1"), worker("w2"), worker("w3")];

  const ids = [];
  for (let i = 0; i < 100; i++) ids.push(await producer.addJob("q:jobs", "q:events", "send", String(i), 1000));
  for (let i = 0; i < 3; i++) await producer.xadd("q:jobs", "*", "name", "stop");
  await Promise.all(workers);
  await listening;

  assert.equal(done.size, 100);
  assert.deepEqual(seenEvents, ids, "the listener saw every added job, in order");
  const [count] = await producer.xpending("q:jobs", "workers");
  assert.equal(count, 0);
  const groups = await producer.xinfo("GROUPS", "q:jobs");
  assert.equal(groups[0][1], "workers");
  assert.equal(groups[0][11], 0, "lag");
  assert.equal(await producer.xlen("q:events"), 100);
}

const scenarios = { queue };

try {
  await scenarios[scenario]();
  console.log(`ok ${scenario}`);
} finally {
  await Promise.all(clients.map((c) => c.quit().catch(() => {})));
}
