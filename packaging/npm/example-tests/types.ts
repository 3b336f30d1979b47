// Compiled with `tsc --noEmit --strict` in CI: the declarations describe the API as used.
import {
  artifactName,
  LockdepReport,
  LockOrderError,
  Snapshot,
  startTumbler,
  StateFiles,
  Tumbler,
  TumblerError,
  TumblerOptions,
} from "tumbler-server";

async function main(): Promise<void> {
  const opts: TumblerOptions = { timeControl: true, args: ["--databases", "4"] };
  const srv: Tumbler = await startTumbler(opts);
  const url: string = srv.url;
  const port: number = srv.port;
  const now: number = await srv.advance(30_001);
  await srv.freeze();
  await srv.resume();
  const checked: Tumbler = await startTumbler({ lockdep: "strict", personality: "redis-8.0" });
  const report: LockdepReport = await checked.lockdepReport();
  const owner: string | undefined = report.inversions[0]?.edges[0]?.owner;
  await checked.assertNoLockInversions();
  await checked.lockdepReset();
  const seed: Snapshot = await srv.seed("catalog", async () => undefined, { db: 1 });
  await seed.restore();
  const answer: number = await seed.run("a test", () => 42, { artifacts: "/tmp/artifacts" });
  const mine: Snapshot = await srv.snapshot("mine");
  await srv.restore(mine.name, { db: mine.db });
  const names: string[] = await srv.snapshots();
  const dropped: boolean = await srv.dropSnapshot("mine");
  const state: string = await srv.state();
  const rdb: Uint8Array = await srv.rdb();
  const files: StateFiles = await srv.writeState("/tmp/artifacts", artifactName("a > b"));
  await srv.flushdb({ db: 1 });
  void [answer, names, dropped, state, rdb, files.rdb, files.txt];
  await srv.stop();
  const e: Error = new TumblerError("x");
  const l: LockdepReport | undefined = e instanceof LockOrderError ? e.report : undefined;
  void [owner, l];
  void [url, port, now, e];
}
void main;
