// Compiled with `tsc --noEmit --strict` in CI: the declarations describe the API as used.
import {
  LockdepReport,
  LockOrderError,
  startTumbler,
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
  const checked: Tumbler = await startTumbler({ lockdep: "strict" });
  const report: LockdepReport = await checked.lockdepReport();
  const owner: string | undefined = report.inversions[0]?.edges[0]?.owner;
  await checked.assertNoLockInversions();
  await checked.lockdepReset();
  await srv.stop();
  const e: Error = new TumblerError("x");
  const l: LockdepReport | undefined = e instanceof LockOrderError ? e.report : undefined;
  void [owner, l];
  void [url, port, now, e];
}
void main;
