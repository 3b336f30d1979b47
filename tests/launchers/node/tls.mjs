// ioredis over TLS with an ACL user, for tests/launchers/python/test_tls.py.
//
//   node tls.mjs '<json>'   json: a list of attempts {port, ca, cert?, key?, user, pass}
//
// Each attempt verifies the server's chain against `ca` (rejectUnauthorized, ioredis' default) but not its
// host name: the certificates under test are made as users make them, many without a
// subjectAltName, and that check is the client's, the same for both servers. Prints one line
// per attempt, "ok <whoami> <value>" after a round trip or "fail <error>", and exits 0 either
// way, so the caller compares outcomes. (One process for all attempts: Node's start-up and
// loading ioredis cost more than the attempts.)
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(path.join(path.resolve(process.env.LAUNCHER_NODE_DIR), "package.json"));
const Redis = require("ioredis");
async function attempt(o) {
  const tls = { ca: fs.readFileSync(o.ca), checkServerIdentity: () => undefined };
  if (o.cert) {
    tls.cert = fs.readFileSync(o.cert);
    tls.key = fs.readFileSync(o.key);
  }
  const r = new Redis({
    host: "127.0.0.1", port: o.port, username: o.user, password: o.pass, tls,
    lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 5000,
  });
  r.on("error", () => {});
  try {
    await r.connect();
    await r.set("app:k", "tls-v");
    const v = await r.get("app:k");
    const who = await r.call("ACL", "WHOAMI");
    return `ok ${who} ${v}`;
  } catch (e) {
    return `fail ${e.message.split("\n")[0]}`;
  } finally {
    r.disconnect();
  }
}

for (const o of JSON.parse(process.argv[2])) console.log(await attempt(o));
process.exit(0);
