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
  /** Stops the server (SIGTERM, SIGKILL after 5 s). */
  stop(): Promise<void>;
}

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
