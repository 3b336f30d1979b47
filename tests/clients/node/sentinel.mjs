// ioredis' Sentinel client against a primary, two replicas and three sentinels: one scenario
// per invocation, the same code and assertions against tumbler and redis-server.
//
//     node sentinel.mjs <scenario> <side> <sentinel ports> <data ports> <data pids>
//
// <side> is `tumbler` (faults are TUMBLER.NODE commands, the clock moves with TUMBLER.TIME
// ADVANCE) or `real` (redis-server processes: the primary going down is SIGKILL of its own
// process). Ports and PIDs are comma-separated, the primary first. Prints "ok <scenario>" on
// success; any failure exits non-zero. Lines starting "obs " are what the clients observed,
// ports replaced by names (node<i>, promoted); tests/tests/clients_sentinel.rs runs both
// sides and asserts they observed the same.

import Redis from "ioredis";
import Redlock from "redlock";
import assert from "node:assert/strict";

const NAME = "mymaster";
const HOST = "127.0.0.1";
const [scenario, side, sentinelCsv, dataCsv, pidCsv] = process.argv.slice(2);
const SENTINELS = sentinelCsv.split(",").map(Number);
const DATA = dataCsv.split(",").map(Number);
const PIDS = pidCsv.split(",").map(Number);
const TUMBLER = side === "tumbler";
assert.ok(side === "tumbler" || side === "real", side);

let PROMOTED = null;
// A port's name in observations: the same on both sides.
function sym(port) {
  port = Number(port);
  if (port === PROMOTED) return "promoted";
  // Which replica is promoted may differ between runs.
  if (PROMOTED !== null && DATA.slice(1).includes(port)) return "other-replica";
  if (DATA.includes(port)) return `node${DATA.indexOf(port)}`;
  if (SENTINELS.includes(port)) return `sentinel${SENTINELS.indexOf(port)}`;
  return `unknown-port-${port}`;
}
const obs = (...parts) => console.log("obs", ...parts);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const clients = [];
function client(opts) {
  const c = new Redis({ connectTimeout: 2000, maxRetriesPerRequest: 1, ...opts });
  c.on("error", () => {}); // reconnects are part of the scenario
  clients.push(c);
  return c;
}

// TUMBLER.* commands go to the last data node, which no scenario takes down.
let ctl = null;
async function advance(ms) {
  if (!TUMBLER) return;
  ctl ??= client({ host: HOST, port: DATA[DATA.length - 1] });
  await ctl.call("TUMBLER.TIME", "ADVANCE", ms);
}

// fn() until it returns a true value, retrying errors (a client following a failover);
// moves Tumbler's clock between tries. Bounded.
async function eventually(what, fn, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  let last;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    await advance(100);
    await sleep(50);
  }
  throw new Error(`${what}: not within ${seconds}s (last: ${last})`);
}

// fn() while time passes: on tumbler the clock moves 50 ms every 10 ms (a WAIT timeout is
// on Tumbler's clock there); on the real side the wall clock does.
async function whileTimePasses(fn) {
  if (!TUMBLER) return fn();
  const ticker = client({ host: HOST, port: DATA[DATA.length - 1] });
  const timer = setInterval(() => ticker.call("TUMBLER.TIME", "ADVANCE", 50).catch(() => {}), 10);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
    ticker.disconnect();
  }
}

const sentinelOpts = {
  sentinels: SENTINELS.map((port) => ({ host: HOST, port })),
  name: NAME,
  sentinelRetryStrategy: () => 50,
  retryStrategy: () => 50,
};

async function failover(byCommand) {
  const admin = client({ host: HOST, port: SENTINELS[0] });
  assert.deepEqual(await admin.sentinel("get-master-addr-by-name", NAME), [HOST, String(DATA[0])]);

  // failoverDetector: ioredis subscribes to +switch-master on the sentinels and reconnects
  // (needed when the old primary stays up). When the primary is gone the client is already
  // reconnecting through the sentinels, and ioredis 6.0.0's detector firing during a
  // reconnect ends the client for good (SentinelConnector.connect throws "Connection is
  // closed." once disconnect() cleared `connecting`): without it, the reconnects follow.
  const master = client({ ...sentinelOpts, failoverDetector: byCommand });
  const replica = client({ ...sentinelOpts, role: "slave" });
  await master.ping();
  await replica.ping();
  assert.equal(master.stream.remotePort, DATA[0]);
  assert.ok(DATA.slice(1).includes(replica.stream.remotePort), String(replica.stream.remotePort));
  const mrole = await master.call("ROLE");
  assert.equal(mrole[0], "master");
  obs("master ROLE", mrole[0], mrole[2].map((r) => sym(r[1])).sort().join(","));
  const rrole = await replica.call("ROLE");
  assert.equal(rrole[0], "slave");
  obs("replica ROLE", rrole[0], rrole[1], sym(rrole[2]), rrole[3]);

  // The read-write split and WAIT.
  assert.equal(await master.set("order:1", "paid"), "OK");
  assert.equal(await master.wait(2, 1000), 2);
  assert.equal(await replica.get("order:1"), "paid");
  await assert.rejects(replica.set("order:1", "refunded"), (e) => {
    assert.match(e.message, /READONLY You can't write against a read only replica/);
    obs("replica SET", e.name, e.message);
    return true;
  });

  // A lock (node redlock over the one sentinel-managed client), replicated before the
  // failover.
  const redlock = new Redlock([master], { retryCount: 0 });
  const lock = await redlock.acquire(["lock:order:1"], 600000);
  await assert.rejects(redlock.acquire(["lock:order:1"], 600000), "second owner got a held lock");
  assert.equal(await master.wait(2, 1000), 2);

  // Our own subscriber sees the event the failover detector acts on.
  const sub = client({ host: HOST, port: SENTINELS[1] });
  const switches = [];
  sub.on("message", (channel, message) => {
    if (channel === "+switch-master") switches.push(message);
  });
  await sub.subscribe("+switch-master");
  // Every event of every sentinel (PSUBSCRIBE *), for the failover's core events below.
  const events = new Map();
  for (const port of SENTINELS) {
    const all = client({ host: HOST, port });
    all.on("pmessage", (_pattern, channel, message) => {
      if (!events.has(channel)) events.set(channel, message);
    });
    await all.psubscribe("*");
  }

  if (byCommand) {
    assert.equal(await admin.sentinel("failover", NAME), "OK");
  } else if (TUMBLER) {
    ctl ??= client({ host: HOST, port: DATA[DATA.length - 1] });
    assert.equal(await ctl.call("TUMBLER.NODE", "DOWN", 0), "OK");
  } else {
    process.kill(PIDS[0], "SIGKILL");
  }

  await eventually("+switch-master", () => switches.length > 0);
  const [name, oldHost, oldPort, newHost, newPort] = switches[0].split(" ");
  assert.equal(name, NAME);
  assert.equal(oldHost, HOST);
  assert.equal(Number(oldPort), DATA[0]);
  assert.equal(newHost, HOST);
  const promoted = Number(newPort);
  assert.ok(DATA.slice(1).includes(promoted), switches[0]);
  PROMOTED = promoted;
  obs("+switch-master", name, oldHost, sym(oldPort), newHost, sym(newPort));
  assert.deepEqual(await admin.sentinel("get-master-addr-by-name", NAME), [HOST, String(promoted)]);

  // The same client object writes to the new master.
  await eventually("a write on the new master", async () =>
    (await master.set("order:2", "paid")) === "OK" && master.stream.remotePort === promoted);
  assert.equal((await master.call("ROLE"))[0], "master");
  assert.equal(await master.get("order:1"), "paid", "an acknowledged write survives the failover");
  // The lock held across the failover is still ours on the new master: it extends, a
  // second owner is refused, it releases.
  assert.equal(await master.get("lock:order:1"), lock.value);
  const extended = await lock.extend(600000);
  await assert.rejects(redlock.acquire(["lock:order:1"], 600000), "second owner got a held lock");
  await extended.release();
  assert.equal(await master.exists("lock:order:1"), 0);
  const again = await redlock.acquire(["lock:order:1"], 600000);
  await again.release();
  obs("redlock across the failover", "extended, refused a second owner, released, reacquired");
  // The other replica follows the new master.
  await eventually("WAIT 1 on the new master", async () =>
    (await whileTimePasses(() => master.wait(1, 200))) >= 1);
  if (byCommand) {
    await eventually("the old primary replicating from the new master", async () => {
      const old = client({ host: HOST, port: DATA[0], retryStrategy: null });
      try {
        const role = await old.call("ROLE");
        const ok = role[0] === "slave" && role[2] === promoted && (await old.get("order:2")) === "paid";
        if (ok) obs("old primary ROLE", role[0], role[1], sym(role[2]));
        return ok;
      } finally {
        old.disconnect();
      }
    });
  }

  // The events every failover publishes (on the leader, at least), with their text; ports
  // named by role. (Others, such as +sdown of the old primary or +odown's vote count, depend
  // on timing.)
  const core = byCommand
    ? ["+new-epoch", "+try-failover", "+elected-leader", "+failover-state-select-slave",
      "+selected-slave", "+failover-state-send-slaveof-noone", "+failover-state-wait-promotion",
      "+promoted-slave", "+failover-state-reconf-slaves", "+slave-reconf-sent",
      "+failover-end", "+switch-master"]
    : ["+sdown", "+odown", "+new-epoch", "+try-failover", "+vote-for-leader", "+elected-leader",
      "+failover-state-select-slave", "+selected-slave", "+failover-state-send-slaveof-noone",
      "+failover-state-wait-promotion", "+promoted-slave", "+failover-state-reconf-slaves",
      "+slave-reconf-sent", "+failover-end", "+switch-master"];
  await eventually("the failover's events", () => core.every((c) => events.has(c)), 10).catch((e) => {
    throw new Error(`${e.message}; seen: ${JSON.stringify([...events])}`);
  });
  const timing = new Set(["+odown", "+new-epoch", "+vote-for-leader"]);
  for (const c of core) {
    const text = events.get(c).replace(/\b\d{4,5}\b/g, (p) =>
      DATA.includes(Number(p)) || SENTINELS.includes(Number(p)) ? sym(p) : p);
    // +odown's vote count, the epoch and the vote's run id vary: the event's presence counts.
    obs("event", c, timing.has(c) ? "" : text);
  }
}

// Sentinels with their own requirepass (SENTINEL_PASSWORD): ioredis' sentinelPassword.
async function sentinelAuth() {
  const password = process.env.SENTINEL_PASSWORD;
  const without = client({ ...sentinelOpts, sentinelRetryStrategy: null, retryStrategy: null,
    lazyConnect: true });
  await assert.rejects(without.connect(), (e) => {
    obs("without sentinelPassword", e.message);
    return true;
  });
  const master = client({ ...sentinelOpts, sentinelPassword: password });
  const replica = client({ ...sentinelOpts, sentinelPassword: password, role: "slave" });
  assert.equal(await master.set("order:1", "paid"), "OK");
  obs("master", sym(master.stream.remotePort), "WAIT", await master.wait(2, 1000));
  obs("replica", DATA.slice(1).includes(replica.stream.remotePort), await replica.get("order:1"));
}

async function main() {
  if (scenario === "ioredis_sentinel_auth") {
    await sentinelAuth();
    console.log(`ok ${scenario}`);
    return;
  }
  if (scenario === "ioredis_sentinel_failover_command") await failover(true);
  else if (scenario === "ioredis_sentinel_primary_down") await failover(false);
  else throw new Error(`unknown scenario ${scenario}`);
  console.log(`ok ${scenario}`);
}

main()
  .then(() => {
    for (const c of clients) c.disconnect();
    process.exit(0);
  })
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
