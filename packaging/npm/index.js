"use strict";
// startTumbler(): runs the tumbler binary shipped in this package on a free loopback port
// and controls its clock. No dependencies: the few commands it sends itself (TUMBLER.TIME,
// FLUSHALL) go over a plain socket in RESP.

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");

const HOW_TO_FIX =
  "Reinstall the package (npm install tumbler-server), or point TUMBLER_BINARY (or the " +
  "`binary` option) at a tumbler executable, e.g. one built with " +
  "`cargo build --release -p tumbler` (target/release/tumbler).";

class TumblerError extends Error {
  constructor(message) {
    super(message);
    this.name = "TumblerError";
  }
}

/** The executable to run: `binary`, else $TUMBLER_BINARY, else the bundled one. */
function binaryPath(binary) {
  const p = binary || process.env.TUMBLER_BINARY || path.join(__dirname, "bin", "tumbler");
  if (!fs.existsSync(p) || !fs.statSync(p).isFile()) {
    throw new TumblerError(`tumbler binary not found at ${p}. ${HOW_TO_FIX}`);
  }
  try {
    fs.accessSync(p, fs.constants.X_OK);
  } catch {
    throw new TumblerError(`tumbler binary at ${p} is not executable. ${HOW_TO_FIX}`);
  }
  return p;
}

function encode(args) {
  let out = `*${args.length}\r\n`;
  for (const a of args) {
    const s = String(a);
    out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  }
  return out;
}

/** Sends one command on a fresh connection and resolves with its (simple) reply. */
function command(host, port, args) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ host, port });
    let buf = "";
    const done = (err, val) => {
      sock.destroy();
      if (err) reject(err);
      else resolve(val);
    };
    sock.setTimeout(10000, () => done(new TumblerError(`no reply to ${args[0]} in 10 s`)));
    sock.on("error", (e) => done(new TumblerError(`cannot reach tumbler at ${host}:${port}: ${e.message}`)));
    sock.on("connect", () => sock.write(encode(args)));
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      const nl = buf.indexOf("\r\n");
      if (nl < 0) return;
      const line = buf.slice(1, nl);
      if (buf[0] === "$") {
        // A bulk string (TUMBLER.LOCKDEP REPORT): wait for all of it (the length is in bytes).
        const len = Number(line);
        const body = Buffer.from(buf.slice(nl + 2), "utf8");
        if (len < 0) return done(null, null);
        if (body.length < len + 2) return;
        return done(null, body.subarray(0, len).toString("utf8"));
      }
      switch (buf[0]) {
        case "+":
          return done(null, line);
        case "-":
          return done(new TumblerError(line));
        case ":":
          return done(null, Number(line));
        default:
          return done(new TumblerError(`unexpected reply to ${args[0]}: ${buf.slice(0, 80)}`));
      }
    });
  });
}

// Servers still running when the test process exits are killed with it.
const live = new Set();
let exitHook = false;
function track(child) {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => {
      for (const c of live) c.kill("SIGKILL");
    });
  }
}

/** The lock-order checker found inversions or deadlocks; `report` is the whole document. */
class LockOrderError extends Error {
  constructor(message, report) {
    super(message);
    this.name = "LockOrderError";
    this.report = report;
  }
}

function describeFindings(report) {
  const lines = [];
  for (const kind of ["inversions", "deadlocks"]) {
    for (const f of report[kind] || []) {
      lines.push(`${kind.slice(0, -1)}: ${[...f.cycle, f.cycle[0]].join(" -> ")}`);
      for (const e of f.edges) {
        lines.push(`    ${e.owner} held ${e.held ?? e.holds} and took ${e.lock} at ${e.time} (${e.command})`);
      }
    }
  }
  return lines.join("\n");
}

class Tumbler {
  constructor(child, host, port, timeControl, log) {
    this.process = child;
    this.host = host;
    this.port = port;
    this.timeControl = timeControl;
    this.url = `redis://${host}:${port}/0`;
    this._log = log;
  }

  get pid() {
    return this.process.pid;
  }

  _time(...args) {
    if (!this.timeControl) {
      return Promise.reject(
        new TumblerError("time control is off: start the server with startTumbler({ timeControl: true })"),
      );
    }
    return command(this.host, this.port, ["TUMBLER.TIME", ...args]);
  }

  /** Moves the server clock forward: TTLs, lock leases and timeouts due fire at once. */
  advance(ms) {
    return this._time("ADVANCE", Math.trunc(ms));
  }

  freeze() {
    return this._time("FREEZE").then(() => undefined);
  }

  resume() {
    return this._time("RESUME").then(() => undefined);
  }

  now() {
    return this._time("NOW");
  }

  /** The lock-order checker's findings: `{ mode, inversions, deadlocks }` (docs/lockdep.md). */
  async lockdepReport() {
    return JSON.parse(await command(this.host, this.port, ["TUMBLER.LOCKDEP", "REPORT"]));
  }

  /** Forgets the checker's order graph and findings. */
  lockdepReset() {
    return command(this.host, this.port, ["TUMBLER.LOCKDEP", "RESET"]).then(() => undefined);
  }

  /**
   * Rejects with a LockOrderError naming every lock order inversion and deadlock found; the
   * server must run with `lockdep`. `after(() => srv.assertNoLockInversions())` fails a run.
   */
  async assertNoLockInversions() {
    const report = await this.lockdepReport();
    if (report.mode === "no") {
      throw new TumblerError("lockdep is off: start the server with startTumbler({ lockdep: \"yes\" })");
    }
    if (report.inversions.length || report.deadlocks.length) {
      throw new LockOrderError(`the lock-order checker found:\n${describeFindings(report)}`, report);
    }
  }

  flushall() {
    return command(this.host, this.port, ["FLUSHALL"]).then(() => undefined);
  }

  /** Stops the server: SIGTERM, then SIGKILL after 5 s. */
  stop() {
    const child = this.process;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const kill = setTimeout(() => child.kill("SIGKILL"), 5000);
      child.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill("SIGTERM");
    });
  }
}

/**
 * Starts a tumbler server on a free loopback port and resolves once it accepts connections.
 * @param {import("./index").TumblerOptions} [options]
 */
function startTumbler(options = {}) {
  const {
    timeControl = false,
    args = [],
    binary,
    host = "127.0.0.1",
    port = 0,
    startupTimeoutMs = 10000,
    lockdep,
  } = options;
  let exe;
  try {
    exe = binaryPath(binary);
  } catch (e) {
    return Promise.reject(e);
  }
  const argv = ["--port", String(port), "--bind", host];
  if (timeControl) argv.push("--enable-time-control", "yes");
  if (lockdep) argv.push("--lockdep", lockdep);
  // The server exits when its stdin pipe closes, so it dies with this process even when
  // the process is killed (nothing is ever written to it).
  argv.push("--watch-stdin", "yes");
  argv.push(...args);
  return new Promise((resolve, reject) => {
    const child = spawn(exe, argv, { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let log = "";
    let settled = false;
    const fail = (msg) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new TumblerError(msg));
    };
    const timer = setTimeout(
      () => fail(`${exe} did not report its port within ${startupTimeoutMs} ms; log: ${log.trim()}`),
      startupTimeoutMs,
    );
    child.stderr.on("data", (d) => {
      log = (log + d.toString("utf8")).slice(-4000);
    });
    child.on("error", (e) => fail(`cannot run ${exe}: ${e.message}. ${HOW_TO_FIX}`));
    child.on("exit", (code, signal) =>
      fail(`${exe} exited (${signal || `status ${code}`}) before listening; log: ${log.trim()}. ${HOW_TO_FIX}`),
    );
    child.stdout.on("data", (d) => {
      // The server logs to stdout, as redis-server does.
      log = (log + d.toString("utf8")).slice(-4000);
      if (settled) return;
      out += d.toString("utf8");
      const m = /tumbler listening on \S+ port=(\d+)/.exec(out);
      if (!m) return;
      settled = true;
      clearTimeout(timer);
      // A forgotten stop() must not keep the test process alive, nor leave the server.
      child.unref();
      child.stdin.unref?.();
      child.stdout.unref?.();
      child.stderr.unref?.();
      track(child);
      resolve(new Tumbler(child, host, Number(m[1]), timeControl, () => log));
    });
  });
}

module.exports = { startTumbler, Tumbler, TumblerError, LockOrderError, binaryPath };
