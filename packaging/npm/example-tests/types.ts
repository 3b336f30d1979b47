// Compiled with `tsc --noEmit --strict` in CI: the declarations describe the API as used.
import { startTumbler, Tumbler, TumblerError, TumblerOptions } from "tumbler-server";

async function main(): Promise<void> {
  const opts: TumblerOptions = { timeControl: true, args: ["--databases", "4"] };
  const srv: Tumbler = await startTumbler(opts);
  const url: string = srv.url;
  const port: number = srv.port;
  const now: number = await srv.advance(30_001);
  await srv.freeze();
  await srv.resume();
  await srv.stop();
  const e: Error = new TumblerError("x");
  void [url, port, now, e];
}
void main;
