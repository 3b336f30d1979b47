/** Options for {@link startTumbler}. */
export interface TumblerOptions {
  /** Enable `advance()`, `freeze()` and `resume()` (the server's `--enable-time-control yes`). Default false. */
  timeControl?: boolean;
  /** Extra server arguments, any redis.conf directive as `--name value`, e.g. `["--requirepass", "s3cret"]`. */
  args?: string[];
  /** The executable to run; default `$TUMBLER_BINARY`, else the binary in this package. */
  binary?: string;
  /** Address to listen on. Default `"127.0.0.1"`. */
  host?: string;
  /** Port; 0 (the default) picks a free one. */
  port?: number;
  /** How long to wait for the server to listen. Default 10000. */
  startupTimeoutMs?: number;
  /** Run the lock-order checker (`--lockdep`; docs/lockdep.md). Default off. */
  lockdep?: "yes" | "strict";
  /** The server release tumbler imitates (`--personality`; docs/personalities.md). Default `"redis-7.2"`. */
  personality?:
    | "redis-7.0"
    | "redis-7.2"
    | "redis-7.4"
    | "redis-8.0"
    | "valkey-8.1"
    | "valkey-9.0"
    | "valkey-9.1";
}

/** One edge of a finding: who held what and took what, when, with which command or script. */
export interface LockdepEdge {
  owner: string;
  lock: string;
  time: number;
  command: string;
  /** Inversions: the lock held while taking `lock`, and both classes. */
  held?: string;
  from?: string;
  to?: string;
  /** Deadlocks: the lock this owner holds while it waits for `lock`. */
  holds?: string;
}

/** One inversion (`cycle` of lock classes) or deadlock (`cycle` of lock names). */
export interface LockdepFinding {
  cycle: string[];
  edges: LockdepEdge[];
}

/** `TUMBLER.LOCKDEP REPORT`. */
export interface LockdepReport {
  mode: "no" | "yes" | "strict";
  inversions: LockdepFinding[];
  deadlocks: LockdepFinding[];
}

/** A running tumbler server. */
export declare class Tumbler {
  /** `redis://127.0.0.1:PORT/0`, for ioredis, node-redis or any Redis client. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly timeControl: boolean;
  /** The server's process id. */
  readonly pid: number | undefined;
  /** Moves the server clock forward by `ms`; due TTLs, lock leases and timeouts fire at once. Resolves with the new server time (Unix ms). */
  advance(ms: number): Promise<number>;
  /** Stops the server clock. */
  freeze(): Promise<void>;
  /** Lets a frozen clock run again. */
  resume(): Promise<void>;
  /** The server clock, in Unix ms. */
  now(): Promise<number>;
  /** The lock-order checker's findings. */
  lockdepReport(): Promise<LockdepReport>;
  /** Forgets the checker's order graph and findings. */
  lockdepReset(): Promise<void>;
  /** Rejects with a {@link LockOrderError} if the checker found inversions or deadlocks. */
  assertNoLockInversions(): Promise<void>;
  /** Empties every database. */
  flushall(): Promise<void>;
  /** Empties database `db` (default 0) only. */
  flushdb(options?: DbOption): Promise<void>;
  /** `TUMBLER.SNAPSHOT SAVE`: keeps database `db` (default 0) as it is now under `name`, replacing a snapshot of that name. */
  snapshot(name: string, options?: DbOption): Promise<Snapshot>;
  /** `TUMBLER.SNAPSHOT RESTORE`: database `db` becomes what it was when `name` was saved; other databases are untouched. Rejects with a {@link TumblerError} for an unknown name. */
  restore(name: string, options?: DbOption): Promise<void>;
  /** `TUMBLER.SNAPSHOT LIST`: the names of the snapshots the server keeps. */
  snapshots(): Promise<string[]>;
  /** `TUMBLER.SNAPSHOT DROP`: forgets a snapshot; false if there was none of that name. */
  dropSnapshot(name: string): Promise<boolean>;
  /** Empties database `db`, awaits `fill` (which writes the data every test starts from), then takes snapshot `name`. */
  seed(name: string, fill?: () => unknown | Promise<unknown>, options?: DbOption): Promise<Snapshot>;
  /** `TUMBLER.STATE`: every database as readable text (keys, types, TTLs, values, native-lock holders and waiters, the lock-order report). */
  state(): Promise<string>;
  /** `TUMBLER.RDB SAVE`: an RDB file of every database (a Node Buffer; typed as its base class, so no @types/node is needed). */
  rdb(): Promise<Uint8Array>;
  /** Writes `<dir>/<name>.rdb` and `<dir>/<name>.txt` (`header`, then {@link state}); `name` is made safe for a file name. */
  writeState(dir: string, name: string, options?: { header?: string }): Promise<StateFiles>;
  /** Stops the server (SIGTERM, SIGKILL after 5 s). */
  stop(): Promise<void>;
}

/** Which database a command acts on. */
export interface DbOption {
  /** Default 0. */
  db?: number;
}

/** The files {@link Tumbler.writeState} wrote. */
export interface StateFiles {
  rdb: string;
  txt: string;
}

/** A snapshot of one database; `afterEach(() => snap.restore())` in any test framework. */
export declare class Snapshot {
  readonly server: Tumbler;
  readonly name: string;
  readonly db: number;
  /** The database becomes what it was at the snapshot. */
  restore(): Promise<void>;
  /** Forgets the snapshot. */
  drop(): Promise<boolean>;
  /**
   * Runs a test's body. If it throws and `artifacts` (default `$TUMBLER_ARTIFACTS`) names a
   * directory, writes the server's state there as `<title>.rdb` and `.txt` (their paths go
   * on the error as `tumblerArtifacts`); then restores the snapshot and rethrows.
   */
  run<T>(title: string, fn: () => T | Promise<T>, options?: { artifacts?: string }): Promise<T>;
}

/** `name` as the file name {@link Tumbler.writeState} gives it. */
export declare function artifactName(name: string): string;

/** The server could not be found, started or controlled; the message says what to do. */
export declare class TumblerError extends Error {}

/** The lock-order checker found inversions or deadlocks. */
export declare class LockOrderError extends Error {
  readonly report: LockdepReport;
}

/** Starts a tumbler server and resolves once it accepts connections. */
export declare function startTumbler(options?: TumblerOptions): Promise<Tumbler>;

/** The executable that would run: `binary`, else `$TUMBLER_BINARY`, else the bundled one. */
export declare function binaryPath(binary?: string): string;
