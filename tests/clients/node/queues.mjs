// BullMQ, a Node job queue, against one server: one scenario per invocation.
//
//     node queues.mjs <scenario> <port>
//
// tests/tests/clients_node_queues.rs runs each scenario against tumbler and, with the same
// assertions, against redis-server. Prints "ok <scenario>"; a failure throws (non-zero exit).
// Every wait is bounded, so a server that never delivers fails the run instead of hanging it.

import assert from "node:assert/strict";
import { Queue, QueueEvents, Worker } from "bullmq";

const [scenario, portArg] = process.argv.slice(2);
const connection = { host: "127.0.0.1", port: Number(portArg), maxRetriesPerRequest: null };
const closers = [];
// Queue, Worker and QueueEvents report background failures (a script error in the stalled
// checker, a lost connection) only as "error" events; any of them fails the scenario.
const errors = [];
const track = (x) => {
  closers.push(x);
  x.on("error", (e) => errors.push(e));
  return x;
};

/// Resolves with `promise`, or rejects after `ms` naming `what`.
function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/// A promise for the first `n` payloads of QueueEvents `event`.
function collect(events, event, n) {
  const got = [];
  return new Promise((resolve) => {
    events.on(event, (payload) => {
      got.push(payload);
      if (got.length === n) resolve(got);
    });
  });
}

async function setup(name) {
  const queue = track(new Queue(name, { connection }));
  await queue.obliterate({ force: true }).catch(() => {});
  const events = track(new QueueEvents(name, { connection }));
  await within(10000, "queue ready", Promise.all([queue.waitUntilReady(), events.waitUntilReady()]));
  return { queue, events };
}

// Plain, delayed and prioritised jobs; one Worker; completions seen through QueueEvents
// (a blocking XREAD on the events stream) and through Job.waitUntilFinished.
async function jobs() {
  const { queue, events } = await setup("orders");
  const order = [];
  const completed = collect(events, "completed", 6);

  // Added before the worker starts, so the priorities decide the order: plain jobs first
  // (FIFO), then priority 1 before priority 5; the delayed job runs once its delay passes.
  const plain1 = await queue.add("ship", { n: 1 });
  const plain2 = await queue.add("ship", { n: 2 });
  await queue.add("ship", { n: 5 }, { priority: 5 });
  await queue.add("ship", { n: 3 }, { priority: 1 });
  const delayed = await queue.add("ship", { n: 9 }, { delay: 300 });
  const gone = await queue.add("ship", { n: 4 }, { priority: 10, removeOnComplete: true });

  let counts = await queue.getJobCounts("waiting", "prioritized", "delayed", "completed");
  assert.deepEqual(counts, { waiting: 2, prioritized: 3, delayed: 1, completed: 0 });
  assert.equal((await queue.getJob(delayed.id)).opts.delay, 300);
  assert.equal(await delayed.getState(), "delayed");

  const worker = track(
    new Worker(
      "orders",
      async (job) => {
        order.push(job.data.n);
        await job.updateProgress(50);
        return { doubled: job.data.n * 2 };
      },
      { connection, concurrency: 1 },
    ),
  );
  const done = await within(20000, "six completed events", completed);
  // The delayed job joins the plain ones once due, wherever that falls on a loaded machine.
  assert.deepEqual(order.filter((n) => n !== 9), [1, 2, 3, 5, 4]);
  assert.ok(order.includes(9));
  const byId = Object.fromEntries(done.map((e) => [e.jobId, e.returnvalue]));
  assert.deepEqual(byId[plain1.id], { doubled: 2 });
  assert.deepEqual(byId[delayed.id], { doubled: 18 });
  const ran = await queue.getJob(delayed.id);
  assert.ok(ran.processedOn >= ran.timestamp + 300, "delayed job ran early");

  assert.deepEqual(await within(10000, "waitUntilFinished", plain2.waitUntilFinished(events)), {
    doubled: 4,
  });
  const finished = await queue.getJob(plain1.id);
  assert.equal(await finished.getState(), "completed");
  assert.deepEqual(finished.returnvalue, { doubled: 2 });
  assert.equal(finished.progress, 50);
  assert.equal(finished.attemptsMade, 1);
  // removeOnComplete dropped its job; the others stay completed.
  assert.equal(await queue.getJob(gone.id), undefined);
  counts = await queue.getJobCounts("waiting", "prioritized", "delayed", "completed", "active");
  assert.deepEqual(counts, { waiting: 0, prioritized: 0, delayed: 0, completed: 5, active: 0 });
  const listed = await queue.getCompleted();
  assert.deepEqual(listed.map((j) => j.data.n).sort((a, b) => a - b), [1, 2, 3, 5, 9]);
  await worker.close();
}

// A job that fails twice and then succeeds (attempts with a fixed backoff), and one that
// fails every attempt (exponential backoff) and ends failed with its reason.
async function retries() {
  const { queue, events } = await setup("mail");
  const tries = {};
  const failedEvents = [];
  events.on("failed", (e) => failedEvents.push(e));
  const completed = collect(events, "completed", 1);
  let doomedId;
  const failed = new Promise((resolve) => {
    events.on("failed", (e) => {
      if (e.jobId === doomedId) resolve(e);
    });
  });

  const flaky = await queue.add("send", { to: "a" }, { attempts: 3, backoff: { type: "fixed", delay: 100 } });
  const doomed = await queue.add(
    "send",
    { to: "b" },
    { attempts: 2, backoff: { type: "exponential", delay: 50 } },
  );
  doomedId = doomed.id;
  const worker = track(
    new Worker(
      "mail",
      async (job) => {
        tries[job.data.to] = (tries[job.data.to] ?? 0) + 1;
        if (job.data.to === "b" || tries.a < 3) {
          throw new Error(`smtp down (${job.data.to} try ${tries[job.data.to]})`);
        }
        return "sent";
      },
      { connection },
    ),
  );
  const [ok] = await within(20000, "flaky job completes", completed);
  assert.equal(ok.jobId, flaky.id);
  assert.equal(ok.returnvalue, "sent");
  const bad = await within(20000, "doomed job fails", failed);
  assert.equal(bad.failedReason, "smtp down (b try 2)");
  assert.deepEqual(tries, { a: 3, b: 2 });
  // QueueEvents reports a failure once, when no attempt is left; retried attempts are not
  // failures of the job.
  assert.deepEqual(
    failedEvents.map((e) => [e.jobId, e.failedReason]),
    [[doomed.id, "smtp down (b try 2)"]],
  );

  const a = await queue.getJob(flaky.id);
  assert.equal(a.attemptsMade, 3);
  assert.equal(await a.getState(), "completed");
  const b = await queue.getJob(doomed.id);
  assert.equal(await b.getState(), "failed");
  assert.equal(b.attemptsMade, 2);
  assert.equal(b.failedReason, "smtp down (b try 2)");
  assert.equal(b.stacktrace.length, 2);
  const counts = await queue.getJobCounts("completed", "failed", "delayed", "waiting");
  assert.deepEqual(counts, { completed: 1, failed: 1, delayed: 0, waiting: 0 });

  // A failed job retried by hand runs again and completes.
  await worker.close();
  const again = collect(events, "completed", 1);
  await b.retry();
  const w2 = track(new Worker("mail", async (job) => `resent ${job.data.to}`, { connection }));
  const [re] = await within(20000, "retried job completes", again);
  assert.equal(re.jobId, doomed.id);
  assert.equal(re.returnvalue, "resent b");
  assert.deepEqual(await queue.getJobCounts("completed", "failed"), { completed: 2, failed: 0 });
  await w2.close();
}

// A job scheduler (repeatable job) every 150 ms, capped at three runs.
async function repeat() {
  const { queue, events } = await setup("ticks");
  const completed = collect(events, "completed", 3);
  const runs = [];
  const worker = track(new Worker("ticks", async (job) => runs.push(job.data.tick), { connection }));
  await queue.upsertJobScheduler("tick", { every: 150, limit: 3 }, { name: "tick", data: { tick: "t" } });
  const schedulers = await queue.getJobSchedulers();
  assert.equal(schedulers.length, 1);
  assert.equal(schedulers[0].key, "tick");
  assert.equal(schedulers[0].every, 150);
  await within(20000, "three scheduled runs", completed);
  assert.deepEqual(runs.slice(0, 3), ["t", "t", "t"]);
  assert.equal(await queue.removeJobScheduler("tick"), true);
  assert.deepEqual(await queue.getJobSchedulers(), []);
  await worker.close();
}

// Three workers on their own connections, five jobs at a time each, take 300 jobs added in
// bulk: each job runs exactly once (BullMQ moves a job to active with a Lua script; two
// workers winning the same job would show here). Then a worker "crashes" mid-job (closed
// without finishing, so its job lock lapses) and the stalled checker of a second worker
// moves the job back to wait and runs it.
async function workers() {
  const { queue, events } = await setup("bulk");
  const total = 300;
  const completed = collect(events, "completed", total);
  await queue.addBulk(Array.from({ length: total }, (_, i) => ({ name: "job", data: { i } })));
  assert.equal(await queue.count(), total);
  const runs = new Map();
  const byWorker = [0, 0, 0];
  const ws = [0, 1, 2].map((w) =>
    track(
      new Worker(
        "bulk",
        async (job) => {
          runs.set(job.data.i, (runs.get(job.data.i) ?? 0) + 1);
          byWorker[w] += 1;
          await new Promise((r) => setTimeout(r, 1));
          return job.data.i;
        },
        { connection, concurrency: 5 },
      ),
    ),
  );
  const done = await within(40000, `${total} completed events`, completed);
  assert.equal(new Set(done.map((e) => e.jobId)).size, total);
  assert.equal(runs.size, total);
  assert.ok([...runs.values()].every((n) => n === 1), "a job ran twice");
  assert.equal(byWorker.reduce((a, b) => a + b), total);
  assert.deepEqual(await queue.getJobCounts("completed", "active", "waiting"), {
    completed: total,
    active: 0,
    waiting: 0,
  });
  await Promise.all(ws.map((w) => w.close()));

  const stalledQ = await setup("stall");
  let started;
  const startedP = new Promise((r) => (started = r));
  const stuck = await stalledQ.queue.add("crash", { n: 1 });
  const crasher = track(new Worker(
    "stall",
    async () => {
      started();
      await new Promise(() => {}); // never finishes
    },
    // Its own stalled check would hold the stalled-check key for the default 30 s.
    { connection, lockDuration: 1000, skipStalledCheck: true },
  ));
  await within(10000, "crashing worker takes the job", startedP);
  assert.equal(await stuck.getState(), "active");
  await crasher.close(true); // no more lock renewals: the lock lapses after lockDuration
  const stalled = new Promise((r) => stalledQ.events.on("stalled", r));
  const recovered = collect(stalledQ.events, "completed", 1);
  track(
    new Worker("stall", async (job) => `recovered ${job.data.n}`, {
      connection,
      stalledInterval: 300,
    }),
  );
  assert.equal((await within(20000, "stalled event", stalled)).jobId, stuck.id);
  const [ok] = await within(20000, "recovered job completes", recovered);
  assert.equal(ok.returnvalue, "recovered 1");
  assert.equal(await stuck.getState(), "completed");
}

const scenarios = { jobs, retries, repeat, workers };

try {
  await scenarios[scenario]();
  assert.deepEqual(errors, [], "client objects emitted errors");
  console.log(`ok ${scenario}`);
} finally {
  for (const c of closers.reverse()) {
    await within(5000, "close", c.close()).catch(() => {});
  }
}
