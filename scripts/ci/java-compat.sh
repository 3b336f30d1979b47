#!/usr/bin/env bash
# Java compatibility tests: the real Redisson (newest 3.x and 4.x, pinned), Jedis, Lettuce and
# Spring Data Redis from Maven Central, each scenario against tumbler AND redis-server in the
# same run (java/redisson-compat). Exits non-zero if any run fails.
#
#   TUMBLER_BINARY   server under test (default: target/release/tumbler)
#   MAVEN_REPO_LOCAL Maven local repository (default: Maven's own, ~/.m2/repository, so that
#                    CI's fresh clones on one machine share downloads)
#   COMPAT_RUNS      which runs, default "redisson4 redisson3 spring redis8"; "redis8" is
#                    Redisson 4.x's RMapCacheNative (hash-field expiry) against
#                    `tumbler --personality redis-8.0` and redis8-server
#   REDIS8_SERVER    the Redis 8.0 control for the redis8 run (default: redis8-server on PATH,
#                    the wrapper ../shared/refservers/install.sh makes; scripts/test.sh puts it
#                    there)
#   TUMBLER_SKIP_MISSING=1  a missing java, mvn, redis-server or tumbler binary skips the run
#                    instead of failing it (scripts/ci/lib.sh)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$root/scripts/ci/lib.sh"
module="$root/java/redisson-compat"
export TUMBLER_BINARY="${TUMBLER_BINARY:-$root/target/release/tumbler}"
case "$TUMBLER_BINARY" in /*) ;; *) TUMBLER_BINARY="$root/$TUMBLER_BINARY" ;; esac
runs="${COMPAT_RUNS:-redisson4 redisson3 spring redis8}"

absent=()
for tool in java mvn redis-server redis-cli; do
  command -v "$tool" >/dev/null 2>&1 || absent+=("$tool")
done
[ -x "$TUMBLER_BINARY" ] || absent+=("tumbler binary at $TUMBLER_BINARY")
case " $runs " in
  *" redis8 "*)
    r8="${REDIS8_SERVER:-$(command -v redis8-server 2>/dev/null || true)}"
    [ -n "$r8" ] && [ -x "$r8" ] || absent+=("redis8-server (Redis 8.0: on PATH or REDIS8_SERVER)") ;;
esac
[ ${#absent[@]} -eq 0 ] || skip_or_fail "${absent[*]}"

mvn_args=(-B -q -f "$module/pom.xml" "-Dtumbler.binary=$TUMBLER_BINARY")
[ -n "${MAVEN_REPO_LOCAL:-}" ] && mvn_args+=("-Dmaven.repo.local=$MAVEN_REPO_LOCAL")

rm -rf "$module/target"
status=0
for run in $runs; do
  start=$(date +%s)
  echo "== java-compat: $run"
  # each run compiles its own subset of the test sources against its own dependencies (see the
  # profiles in pom.xml): drop the previous run's classes, keep its reports
  rm -rf "$module/target/test-classes" "$module/target/maven-status" "$module/target/generated-test-sources"
  if ! mvn "${mvn_args[@]}" -P "$run" test; then
    echo "java-compat: $run FAILED" >&2
    status=1
  fi
  echo "== java-compat: $run took $(( $(date +%s) - start )) s"
done

# Per run and class: passes/failures on each server, from Surefire's XML reports.
python3 - "$module/target/surefire-reports" <<'PY' || status=1
import glob, os, re, sys, xml.etree.ElementTree as ET
base = sys.argv[1]
tot = {"passed": 0, "failed": 0, "skipped": 0}
rows = []
for d in sorted(glob.glob(os.path.join(base, "*"))):
    for f in sorted(glob.glob(os.path.join(d, "TEST-*.xml"))):
        suite = ET.parse(f).getroot()
        per = {}
        for tc in suite.iter("testcase"):
            m = re.search(r"(tumbler|redis8-server|redis-server)", tc.get("name", ""))
            side = m.group(1) if m else "-"
            st = "passed"
            if tc.find("failure") is not None or tc.find("error") is not None: st = "failed"
            elif tc.find("skipped") is not None: st = "skipped"
            per.setdefault(side, {"passed": 0, "failed": 0, "skipped": 0})[st] += 1
            tot[st] += 1
        cls = suite.get("name", "").rsplit(".", 1)[-1]
        cells = "  ".join(f"{s}: {c['passed']}/{sum(c.values())}" + (f" ({c['failed']} failed)" if c['failed'] else "")
                          for s, c in sorted(per.items()))
        rows.append(f"{os.path.basename(d):<22} {cls:<28} {cells}")
print("\n".join(rows))
line = f"java-compat: {tot['passed']} passed, {tot['failed']} failed"
if tot["skipped"]: line += f", {tot['skipped']} skipped"
print(line)
PY
exit $status
