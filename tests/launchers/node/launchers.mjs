// Node launchers, unchanged from npm, starting one server binary as they start redis-server.
//
//   node launchers.mjs <scenario> <server-binary>
//
// Scenarios (tests/launchers/python/test_node_launchers.py runs each against redis-server and
// tumbler and requires the same outcome):
//   redis-server-npm      npm `redis-server`: spawns `<bin> "--port P"` (one argument), waits
//                         for /ready\s+to\s+accept/ on stdout, fails on /already in use|error|
//                         denied|can't/ seen first; close() sends SIGTERM and waits for 'close'.
//   redis-server-npm-busy the same on a port another server holds: open() must reject with
//                         "Address already in use" (code -1) read from the server's stdout.
//   redis-memory-server   REDISMS_SYSTEM_BINARY=<bin> (set by the caller): `--version` (third
//                         word of line 1), `--save "" --appendonly no --bind 127.0.0.1 --port P`,
//                         waits for /Ready to accept connections/ on stdout, stop() sends SIGINT
//                         (SIGKILL after 10 s, with a warning) and stops its killer process.
//   testcontainers-log    @testcontainers/redis' own wait strategy (a log message) read from the
//                         installed package, matched line by line as its LogWaitStrategy does,
//                         against the stdout of `<bin> --port P` (no Docker: the container
//                         runtime is not what is tested, the server's output is).
// Each prints "ok <scenario> ..." and exits 0, or throws.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import net from "node:net";
import { createRequire } from "node:module";
import path from "node:path";

// The packages are installed into target/launchers/node (scripts/ci/launchers.sh), named by
// LAUNCHER_NODE_DIR; they are loaded from there as a user's project loads them.
assert.ok(process.env.LAUNCHER_NODE_DIR, "LAUNCHER_NODE_DIR names the directory holding node_modules");
const require = createRequire(path.join(path.resolve(process.env.LAUNCHER_NODE_DIR), "package.json"));
const [scenario, bin] = process.argv.slice(2);
assert.ok(scenario && bin, "usage: launchers.mjs <scenario> <server-binary>");

const Redis = require("ioredis");

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid, what) {
  for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 25));
  assert.equal(alive(pid), false, `${what} (pid ${pid}) left running`);
}

async function roundTrip(port) {
  const r = new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  assert.equal(await r.set("launcher:k", "v"), "OK");
  assert.equal(await r.get("launcher:k"), "v");
  // A lock as ioredis users write one: SET NX PX, then a compare-and-delete script.
  assert.equal(await r.set("launcher:lock", "me", "PX", 5000, "NX"), "OK");
  assert.equal(await r.set("launcher:lock", "you", "PX", 5000, "NX"), null);
  const release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
  assert.equal(await r.eval(release, 1, "launcher:lock", "me"), 1);
  assert.equal(await r.exists("launcher:lock"), 0);
  await r.quit();
}

async function redisServerNpm() {
  const RedisServer = require("redis-server");
  const port = await freePort();
  const server = new RedisServer({ bin, port });
  let out = "";
  server.on("stdout", (s) => (out += s));
  await server.open();
  const pid = server.process.pid;
  await roundTrip(port);
  await server.close();
  await gone(pid, "server");
  assert.equal(server.isRunning, false);
  console.log(`ok redis-server-npm port=${port}`);
}

async function redisServerNpmBusy() {
  const RedisServer = require("redis-server");
  const port = await freePort();
  const first = new RedisServer({ bin, port });
  await first.open();
  const second = new RedisServer({ bin, port });
  let pid;
  second.on("opening", () => setImmediate(() => (pid = second.process && second.process.pid)));
  let err = null;
  try {
    await second.open();
  } catch (e) {
    err = e;
  }
  assert.ok(err, "a second server on a port in use must fail to open");
  assert.equal(err.message, "Address already in use");
  assert.equal(err.code, -1);
  if (pid) await gone(pid, "second server");
  const firstPid = first.process.pid;
  await roundTrip(port);
  await first.close();
  await gone(firstPid, "first server");
  console.log(`ok redis-server-npm-busy port=${port}`);
}

async function redisMemoryServer() {
  assert.equal(process.env.REDISMS_SYSTEM_BINARY, bin, "the caller sets REDISMS_SYSTEM_BINARY");
  const { RedisMemoryServer } = require("redis-memory-server");
  const warnings = [];
  const warn = console.warn;
  console.warn = (...a) => warnings.push(a.join(" "));
  const server = await RedisMemoryServer.create();
  const host = await server.getHost();
  const port = await server.getPort();
  const info = server.getInstanceInfo();
  const pid = info.instance.getPid();
  const killer = info.instance.killerProcess.pid;
  await roundTrip(port);
  assert.equal(await server.stop(), true);
  console.warn = warn;
  await gone(pid, "server");
  await gone(killer, "redis-memory-server's killer process");
  // The server exited on SIGINT within 10 s; otherwise redis-memory-server warns and SIGKILLs.
  assert.deepEqual(warnings, []);
  console.log(`ok redis-memory-server ${host}:${port}`);
}

async function testcontainersLog() {
  const { RedisContainer } = require("@testcontainers/redis");
  // The wait strategy @testcontainers/redis installs (constructing a container definition
  // does not contact Docker).
  const strategy = new RedisContainer("redis:7.2").waitStrategy;
  assert.equal(strategy.constructor.name, "LogWaitStrategy");
  const { message } = strategy;
  const times = strategy.times ?? 1;
  // LogWaitStrategy: byline splits the log stream into lines; a string matches with
  // line.includes(message), a RegExp with message.test(line); `times` matches are needed.
  const matches = (line) => (message instanceof RegExp ? message.test(line) : line.includes(message));
  const port = await freePort();
  const child = spawn(bin, ["--port", String(port), "--bind", "127.0.0.1", "--save", ""], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline && out.split("\n").filter(matches).length < times) {
    await new Promise((r) => setTimeout(r, 25));
  }
  const stdoutMatches = out.split("\n").filter(matches).length;
  child.kill("SIGTERM");
  await new Promise((r) => child.once("close", r));
  await gone(child.pid, "server");
  assert.ok(
    stdoutMatches >= times,
    `no stdout line matched ${JSON.stringify(String(message))} (x${times});\nstdout:\n${out}\nstderr:\n${err}`,
  );
  console.log(`ok testcontainers-log message=${JSON.stringify(String(message))} times=${times}`);
}

const scenarios = {
  "redis-server-npm": redisServerNpm,
  "redis-server-npm-busy": redisServerNpmBusy,
  "redis-memory-server": redisMemoryServer,
  "testcontainers-log": testcontainersLog,
};
assert.ok(scenarios[scenario], `unknown scenario ${scenario}`);
await scenarios[scenario]();
process.exit(0);
