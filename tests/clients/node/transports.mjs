// ioredis over TLS (`tls: {...}`) and over a Unix socket (`path`), against tumbler.
//
//     node transports.mjs tls <tls-port> <ca.crt> <client.crt> <client.key>
//     node transports.mjs unix <socket-path>
//
// Prints "ok <scenario>"; a failure throws (non-zero exit).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import Redis from "ioredis";

const [scenario, ...args] = process.argv.slice(2);
const clients = [];

async function exercise(make) {
  const a = make();
  const b = make();
  const sub = make();
  clients.push(a, b, sub);
  assert.equal(await a.ping(), "PONG");
  assert.equal(await a.set("node:k", "v"), "OK");
  assert.equal(await b.get("node:k"), "v");
  assert.deepEqual(await a.multi().incr("node:n").incr("node:n").exec(), [[null, 1], [null, 2]]);
  // Pub/sub.
  const got = new Promise((resolve) => sub.on("message", (_ch, msg) => resolve(msg)));
  await sub.subscribe("node:ch");
  assert.equal(await a.publish("node:ch", "hello"), 1);
  assert.equal(await got, "hello");
  // A blocking pop woken by the other connection.
  const popped = b.blpop("node:q", 10);
  for (let i = 0; i < 500; i++) {
    if ((await a.client("LIST")).includes("cmd=blpop")) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  await a.lpush("node:q", "job");
  assert.deepEqual(await popped, ["node:q", "job"]);
}

async function tls() {
  const [port, ca, cert, key] = args;
  const tlsOpts = { ca: readFileSync(ca), cert: readFileSync(cert), key: readFileSync(key), servername: "localhost" };
  await exercise(() => new Redis({ host: "127.0.0.1", port: Number(port), tls: tlsOpts, maxRetriesPerRequest: 1 }));
  // Without a client certificate: refused with an error, not a hang.
  const bare = new Redis({
    host: "127.0.0.1",
    port: Number(port),
    tls: { ca: readFileSync(ca), servername: "localhost" },
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  bare.on("error", () => {});
  await assert.rejects(async () => {
    await bare.connect();
    await bare.ping();
  });
  bare.disconnect();
}

async function unix() {
  const [path] = args;
  await exercise(() => new Redis({ path, maxRetriesPerRequest: 1 }));
}

const scenarios = { tls, unix };
try {
  await scenarios[scenario]();
  console.log(`ok ${scenario}`);
} finally {
  for (const c of clients) c.disconnect();
}
