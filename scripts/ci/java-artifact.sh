#!/usr/bin/env bash
# The Maven artifact dev.tumbler:tumbler-junit (java/tumbler-junit) and the user-style project
# that depends on it (java/example-tests): `mvn install` of the artifact around the static
# binary $TUMBLER_BINARY (default: what packaging/static-bin.sh prints, which builds it if
# missing), with the artifact's own tests (no orphans after kill -9, start time), then the
# example project's tests against the installed artifact, as a user's build resolves it: from
# the local Maven repository, with the binary the jar carries (TUMBLER_BINARY unset).
#
# Dependencies come from Maven Central, pinned in the two POMs. Set TUMBLER_MAVEN_REPO to use
# another local repository (an empty one measures a cold run). A missing java or mvn fails
# the run, or skips it under TUMBLER_SKIP_MISSING=1 (scripts/ci/lib.sh). Exits non-zero if a
# build or test fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
. scripts/ci/lib.sh

command -v java >/dev/null 2>&1 || skip_or_fail "no java on PATH (Java 17+ is needed)"
command -v mvn >/dev/null 2>&1 || skip_or_fail "no mvn on PATH (Maven 3.6+ is needed)"
jv=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
[ "${jv%%.*}" -ge 17 ] 2>/dev/null || skip_or_fail "java $jv on PATH; Java 17+ is needed"

bin=$(bash packaging/static-bin.sh)
[ -x "$bin" ] || skip_or_fail "no server binary at $bin"

mvn_args=(-B -ntp)
if [ -n "${TUMBLER_MAVEN_REPO:-}" ]; then
  mkdir -p "$TUMBLER_MAVEN_REPO"
  mvn_args+=("-Dmaven.repo.local=$TUMBLER_MAVEN_REPO")
fi
echo "java-artifact.sh: $(java -version 2>&1 | head -1); $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'); binary $bin"

t0=$(date +%s)
# The artifact: its tests run the bundled binary, so TUMBLER_BINARY is unset for them.
env -u TUMBLER_BINARY timeout 900 mvn "${mvn_args[@]}" -f java/tumbler-junit/pom.xml \
  -Dtumbler.bundled-binary="$bin" clean install
t1=$(date +%s)
echo "java-artifact.sh: tumbler-junit built, tested and installed in $((t1 - t0)) s"

# The user's project: resolves dev.tumbler:tumbler-junit:0.1.0 from the local repository.
# No TUMBLER_BINARY: the tests must run the binary the jar carries.
env -u TUMBLER_BINARY timeout 900 mvn "${mvn_args[@]}" -f java/example-tests/pom.xml clean test
t2=$(date +%s)
echo "java-artifact.sh: example-tests passed in $((t2 - t1)) s; total $((t2 - t0)) s"
