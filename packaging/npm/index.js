"use strict";
// startTumbler(): runs the tumbler binary shipped in this package on a free loopback port
// and controls its clock, its snapshots and the dump of its state for a failed test. No
// dependencies: the few commands it sends itself (TUMBLER.TIME, TUMBLER.SNAPSHOT, FLUSHALL,
// ...) go over a plain socket in RESP.

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

/**
 * Parses one RESP reply from `buf` at `at`: `{ value, next }`, or null while it is still
 * incomplete. Bulk strings stay Buffers (an RDB file is binary); errors become TumblerErrors.
 */
function parseReply(buf, at) {
  const nl = buf.indexOf("\r\n", at);
  if (nl < 0) return null;
  const type = String.fromCharCode(buf[at]);
  const line = buf.toString("utf8", at + 1, nl);
  switch (type) {
    case "+":
      return { value: line, next: nl + 2 };
    case "-":
      return { value: new TumblerError(line), next: nl + 2 };
    case ":":
      return { value: Number(line), next: nl + 2 };
    case "$": {
      const len = Number(line);
      if (len < 0) return { value: null, next: nl + 2 };
      if (buf.length < nl + 2 + len + 2) return null;
      return { value: buf.subarray(nl + 2, nl + 2 + len), next: nl + 2 + len + 2 };
    }
    case "*": {
      const n = Number(line);
      if (n < 0) return { value: null, next: nl + 2 };
      const items = [];
      let next = nl + 2;
      for (let i = 0; i < n; i++) {
        const r = parseReply(buf, next);
        if (!r) return null;
        items.push(r.value);
        next = r.next;
      }
      return { value: items, next };
    }
    default:
      return { value: new TumblerError(`unexpected reply: ${buf.toString("utf8", at, at + 80)}`), next: buf.length };
  }
}

/** Bulk strings as text, in arrays too. */
function text(v) {
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  if (Array.isArray(v)) return v.map(text);
  return v;
}

/**
 * Sends one command on a fresh connection (after `SELECT db` when `db` is given) and
 * resolves with its reply, bulk strings as Buffers.
 */
function commandRaw(host, port, args, db) {
  const cmds = db === undefined ? [args] : [["SELECT", db], args];
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ host, port });
    let buf = Buffer.alloc(0);
    const replies = [];
    const done = (err, val) => {
      sock.destroy();
      if (err) reject(err);
      else resolve(val);
    };
    sock.setTimeout(10000, () => done(new TumblerError(`no reply to ${args[0]} in 10 s`)));
    sock.on("error", (e) => done(new TumblerError(`cannot reach tumbler at ${host}:${port}: ${e.message}`)));
    sock.on("connect", () => sock.write(cmds.map(encode).join("")));
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      let r;
      while (replies.length < cmds.length && (r = parseReply(buf, 0))) {
        replies.push(r.value);
        buf = buf.subarray(r.next);
      }
      if (replies.length < cmds.length) return;
      const err = replies.find((v) => v instanceof TumblerError);
      if (err) return done(err);
      done(null, replies[replies.length - 1]);
    });
  });
}

/** As commandRaw, with bulk strings as text. */
function command(host, port, args, db) {
  return commandRaw(host, port, args, db).then(text);
}

/**
 * `name` (a test title) as a file name: characters other than letters, digits, `.`, `-`
 * and `_` become `_`; a long name is cut and ends with a hash of the whole.
 */
function artifactName(name) {
  let safe = String(name).replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._]+|[._]+$/g, "") || "test";
  if (safe.length > 120) {
    const digest = require("node:crypto").createHash("sha1").update(String(name)).digest("hex").slice(0, 10);
    safe = `${safe.slice(0, 109)}-${digest}`;
  }
  return safe;
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

  /** Empties database `db` (default 0) only. */
  flushdb({ db = 0 } = {}) {
    return command(this.host, this.port, ["FLUSHDB"], db).then(() => undefined);
  }

  /**
   * TUMBLER.SNAPSHOT SAVE: keeps database `db` (default 0) as it is now (keys, values,
   * TTLs) under `name`, replacing a snapshot of that name. Resolves with a Snapshot whose
   * restore() brings it back.
   */
  async snapshot(name, { db = 0 } = {}) {
    await command(this.host, this.port, ["TUMBLER.SNAPSHOT", "SAVE", name], db);
    return new Snapshot(this, name, db);
  }

  /**
   * TUMBLER.SNAPSHOT RESTORE: database `db` becomes exactly what it was when `name` was
   * saved; the other databases are untouched. Rejects for an unknown name.
   */
  restore(name, { db = 0 } = {}) {
    return command(this.host, this.port, ["TUMBLER.SNAPSHOT", "RESTORE", name], db).then(() => undefined);
  }

  /** The names of the snapshots the server keeps. */
  snapshots() {
    return command(this.host, this.port, ["TUMBLER.SNAPSHOT", "LIST"]);
  }

  /** Forgets a snapshot; false if there was none of that name. */
  dropSnapshot(name) {
    return command(this.host, this.port, ["TUMBLER.SNAPSHOT", "DROP", name]).then((n) => n === 1);
  }

  /**
   * Empties database `db`, runs `fill` (which writes the data every test starts from) and
   * takes snapshot `name` of the result.
   */
  async seed(name, fill, { db = 0 } = {}) {
    await this.flushdb({ db });
    if (fill) await fill();
    return this.snapshot(name, { db });
  }

  /** TUMBLER.STATE: every database as readable text (keys, types, TTLs, values, native-lock holders and waiters, the lock-order report). */
  state() {
    return command(this.host, this.port, ["TUMBLER.STATE"]);
  }

  /** TUMBLER.RDB SAVE: an RDB file of every database (the server writes nothing to disk). */
  rdb() {
    return commandRaw(this.host, this.port, ["TUMBLER.RDB", "SAVE"]);
  }

  /**
   * Writes the server's state for a failed test: `<dir>/<name>.rdb` (rdb()) and
   * `<dir>/<name>.txt` (`header`, then state()); `name` is made safe for a file name.
   * Both are tried; rejects with the first error after that. Resolves with the paths.
   */
  async writeState(dir, name, { header } = {}) {
    await fs.promises.mkdir(dir, { recursive: true });
    const base = path.join(dir, artifactName(name));
    const head = header ?? `# test: ${name}\n# server: ${this.host}:${this.port}\n\n`;
    const [txt, rdb] = await Promise.allSettled([
      this.state().then((s) => fs.promises.writeFile(`${base}.txt`, head + s)).then(() => `${base}.txt`),
      this.rdb().then((b) => fs.promises.writeFile(`${base}.rdb`, b)).then(() => `${base}.rdb`),
    ]);
    const failed = [txt, rdb].find((r) => r.status === "rejected");
    if (failed) {
      const wrote = [txt, rdb].filter((r) => r.status === "fulfilled").map((r) => r.value);
      throw new TumblerError(`could not write every artifact of "${name}" (wrote ${JSON.stringify(wrote)}): ${failed.reason.message}`);
    }
    return { txt: txt.value, rdb: rdb.value };
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
 * A snapshot of one database, for the one call after each test: `afterEach(() =>
 * snap.restore())` in node:test, jest or mocha alike; or `snap.run(title, fn)` around the
 * test's body, which also keeps the server's state of a failed test.
 */
class Snapshot {
  constructor(server, name, db) {
    this.server = server;
    this.name = name;
    this.db = db;
  }

  /** The database becomes what it was at the snapshot (TUMBLER.SNAPSHOT RESTORE). */
  restore() {
    return this.server.restore(this.name, { db: this.db });
  }

  drop() {
    return this.server.dropSnapshot(this.name);
  }

  /**
   * Runs `fn` (a test's body). If it throws and `artifacts` (default
   * `$TUMBLER_ARTIFACTS`) names a directory, writes the server's state there as
   * `<title>.rdb` and `<title>.txt` first. Then restores the snapshot, and rethrows.
   */
  async run(title, fn, { artifacts = process.env.TUMBLER_ARTIFACTS } = {}) {
    let failed = false;
    try {
      return await fn();
    } catch (e) {
      failed = true;
      if (artifacts) {
        const header = `# test: ${title}\n# database: ${this.db}\n# server: ${this.server.host}:${this.server.port}\n\n`;
        try {
          const files = await this.server.writeState(artifacts, title, { header });
          if (e && typeof e === "object") e.tumblerArtifacts = files;
        } catch (w) {
          if (e && typeof e === "object") e.tumblerArtifactsError = w;
        }
      }
      throw e;
    } finally {
      // After a failure, the test's own error is the one to see, not a failed restore's.
      if (failed) await this.restore().catch(() => {});
      else await this.restore();
    }
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
    personality,
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
  if (personality) argv.push("--personality", personality);
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

module.exports = { startTumbler, Tumbler, Snapshot, TumblerError, LockOrderError, binaryPath, artifactName };
