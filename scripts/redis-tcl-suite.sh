#!/usr/bin/env bash
# redis-tcl-suite.sh -- run Redis' (7.0 or 8.0) or Valkey's (9) own Tcl test
# suite in external-server mode against an already running server (a real
# reference server or Tumbler), or in spawn mode, one unit at a time, and
# report per-unit pass/fail counts.
#
# The sources are NOT vendored: on first use they are fetched with
# `apt-get source` through a private apt configuration (derived from the
# machine's own Debian entries plus deb-src lines for trixie and sid; /etc is
# never modified) into
#   ${TUMBLER_CACHE:-$HOME/.cache/tumbler}/redis-src
# and reused on later runs.
#
# See --help for usage.
set -euo pipefail

PROG=$(basename "$0")

usage() {
  cat <<EOF
Usage: $PROG [--host 127.0.0.1] --port P [options]

Runs a Tcl test suite (./runtest --host H --port P --single UNIT) once per
unit against an already running server and reports, per unit, how many tests
passed ([ok]) and failed ([err], [exception], timeouts).

Options:
  --suite S             whose test suite (default redis-7.0, env REDIS_TCL_SUITE):
                          redis-7.0  Redis 7.0.x (Debian bookworm, Debian's patches)
                          redis-8.0  Redis 8.0.x (Debian trixie, upstream tarball)
                          valkey-9   Valkey 9.x  (Debian sid, upstream tarball)
  --host H              server host (default 127.0.0.1)
  --port P              server port (required unless --fetch-only)
  --units "U1 U2 ..."   units to run (default: $DEFAULT_UNITS)
  --baseline FILE       lines "unit/name MIN_PASSED"; exit 1 if any unit that
                        was run passed fewer tests than its minimum
  --write-baseline FILE write the pass counts of this run in baseline format
  --json OUT            write a JSON summary to OUT
  --logdir DIR          where to put per-unit logs + failures.txt
                        (default: \$CACHE/../redis-tcl-logs/<timestamp>)
  --unit-timeout SEC    hard wall-clock limit per unit (default 300,
                        env REDIS_TCL_UNIT_TIMEOUT)
  --harness-timeout SEC harness' own "no progress" timeout (runtest --timeout,
                        default 120)
  --tags "T ..."        runtest --tags filter (default: "$DEFAULT_TAGS_DOC")
  --singledb            pass --singledb (no SELECT; skips singledb:skip tests)
  --no-durable          do not pass --durable (then the first non-assertion
                        error, e.g. an unknown command, aborts the whole unit)
  --runtest-arg ARG     extra argument passed verbatim to runtest (repeatable)
  --no-config-restore   do not snapshot/restore server config between units
                        (by default a curated list of CONFIG parameters that
                        tests change without restoring is captured before the
                        first unit and re-applied before every later unit, so
                        results do not depend on unit order)
  --lenient-setup       run from a cached copy of tests/ in which the
                        harness' per-block "r function flush" (sent before
                        EVERY start_server block in external mode) is wrapped
                        in catch, so a server without FUNCTION FLUSH still gets
                        its tests run (otherwise every unit aborts at once)
  --spawn BIN           spawn mode: do not connect to a running server; let the
                        harness start its own servers from its config files, as
                        Redis' own CI does, with BIN standing in for
                        src/redis-server (a private copy of tests/ gets a
                        src/redis-server symlink to BIN; valkey-9:
                        src/valkey-server). Units that
                        skip themselves in external mode (unit/acl, unit/auth,
                        ...) run this way. --port/--host are not used.
  --server-args "A ..." spawn mode: arguments appended to every server the
                        harness starts (e.g. "--personality redis-8.0"); BIN
                        is then started through a one-line exec wrapper
  --fetch-only          only make sure the suite's source is in the cache
                        (prints the tree's path)
  -h, --help            this text

Environment:
  TUMBLER_CACHE         cache root (default \$HOME/.cache/tumbler)
  REDIS_SRC_DIR         use this already-extracted source tree (of the
                        --suite's version) instead of fetching one

Exit status: 0 ok; 1 baseline regression; 2 usage error; 3 server
unreachable / source could not be obtained.
EOF
}

DEFAULT_UNITS="unit/type/string unit/type/incr unit/keyspace unit/expire unit/type/hash unit/auth unit/protocol unit/quit unit/scan unit/scripting unit/pubsub unit/pubsubshard unit/type/list unit/type/zset unit/multi unit/info unit/introspection"
# In external mode the 7.0 harness itself only skips tests tagged
# "external:skip" (plus singledb:skip with --singledb, cluster:skip with
# --cluster-mode, large-memory unless --large-memory).  Tests tagged
# needs:<feature> are NOT skipped automatically; they must be denied via --tags
# (redis' own external CI uses "-slow" and, for a server without
# enable-debug-command, "-slow -needs:debug").
DEFAULT_TAGS="-slow -needs:debug -needs:repl -needs:save -needs:pfdebug -needs:local-process -needs:latency"
DEFAULT_TAGS_DOC=$DEFAULT_TAGS

HOST=127.0.0.1
PORT=""
UNITS=$DEFAULT_UNITS
BASELINE=""
WRITE_BASELINE=""
JSON_OUT=""
LOGDIR=""
UNIT_TIMEOUT=${REDIS_TCL_UNIT_TIMEOUT:-300}
HARNESS_TIMEOUT=120
TAGS=$DEFAULT_TAGS
SINGLEDB=0
DURABLE=1
FETCH_ONLY=0
CONFIG_RESTORE=1
LENIENT=0
SPAWN_BIN=""
SERVER_ARGS=""
SUITE=${REDIS_TCL_SUITE:-redis-7.0}
EXTRA_ARGS=()

die()  { echo "$PROG: $1" >&2; exit "${2:-2}"; }
need_arg() { [[ $# -ge 2 ]] || die "option $1 needs an argument"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --host) need_arg "$@"; HOST=$2; shift 2 ;;
    --port) need_arg "$@"; PORT=$2; shift 2 ;;
    --units) need_arg "$@"; UNITS=$2; shift 2 ;;
    --baseline) need_arg "$@"; BASELINE=$2; shift 2 ;;
    --write-baseline) need_arg "$@"; WRITE_BASELINE=$2; shift 2 ;;
    --json) need_arg "$@"; JSON_OUT=$2; shift 2 ;;
    --logdir) need_arg "$@"; LOGDIR=$2; shift 2 ;;
    --unit-timeout) need_arg "$@"; UNIT_TIMEOUT=$2; shift 2 ;;
    --harness-timeout) need_arg "$@"; HARNESS_TIMEOUT=$2; shift 2 ;;
    --tags) need_arg "$@"; TAGS=$2; shift 2 ;;
    --singledb) SINGLEDB=1; shift ;;
    --no-durable) DURABLE=0; shift ;;
    --runtest-arg) need_arg "$@"; EXTRA_ARGS+=("$2"); shift 2 ;;
    --fetch-only) FETCH_ONLY=1; shift ;;
    --no-config-restore) CONFIG_RESTORE=0; shift ;;
    --lenient-setup) LENIENT=1; shift ;;
    --spawn) need_arg "$@"; SPAWN_BIN=$2; shift 2 ;;
    --server-args) need_arg "$@"; SERVER_ARGS=$2; shift 2 ;;
    --suite) need_arg "$@"; SUITE=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

# Per suite: the source package, which of its versions (an apt-get source
# argument), the upstream tarball that must come down, the cache's ready-marker
# and the server binary's name in the tree's src/.
case $SUITE in
  redis-7.0) PKG=redis; APT_SPEC=""; ORIG_GLOB='redis_7.0.*.orig.tar.gz'; VER_RE='^([0-9]+:)?7\.0\.'
             READY=.ready; SERVER_NAME=redis-server; SUITE_DESC="Redis 7.0" ;;
  redis-8.0) PKG=redis; APT_SPEC=redis/trixie; ORIG_GLOB='redis_8.0.*.orig.tar.gz'; VER_RE='^([0-9]+:)?8\.0\.'
             READY=.ready-redis-8.0; SERVER_NAME=redis-server; SUITE_DESC="Redis 8.0" ;;
  valkey-9)  PKG=valkey; APT_SPEC=valkey/sid; ORIG_GLOB='valkey_9.*.orig.tar.gz'; VER_RE='^([0-9]+:)?9\.'
             READY=.ready-valkey-9; SERVER_NAME=valkey-server; SUITE_DESC="Valkey 9" ;;
  *) die "--suite must be redis-7.0, redis-8.0 or valkey-9 (got: $SUITE)" ;;
esac
[[ -z $SERVER_ARGS || -n $SPAWN_BIN ]] || die "--server-args needs --spawn"

if [[ -n $SPAWN_BIN ]]; then
  [[ -x $SPAWN_BIN ]] || die "--spawn: not an executable: $SPAWN_BIN"
  SPAWN_BIN=$(cd "$(dirname "$SPAWN_BIN")" && pwd)/$(basename "$SPAWN_BIN")
  CONFIG_RESTORE=0
  PORT=0
elif [[ $FETCH_ONLY -eq 0 ]]; then
  [[ -n $PORT ]] || { usage >&2; die "--port is required"; }
  [[ $PORT =~ ^[0-9]+$ ]] || die "--port must be a number"
fi
[[ $UNIT_TIMEOUT =~ ^[0-9]+$ ]] || die "--unit-timeout must be a number of seconds"
[[ $HARNESS_TIMEOUT =~ ^[0-9]+$ ]] || die "--harness-timeout must be a number of seconds"
[[ -z $BASELINE || -r $BASELINE ]] || die "baseline file not readable: $BASELINE"

CACHE_ROOT=${TUMBLER_CACHE:-$HOME/.cache/tumbler}
CACHE=$CACHE_ROOT/redis-src

log() { echo "[$PROG] $*" >&2; }

# --------------------------------------------------------------------------
# Obtaining the suite's source (idempotent)
# --------------------------------------------------------------------------

# Print deb-src versions of the machine's Debian apt entries (deb822 stanzas
# from *.sources and one-line entries from sources.list / *.list).
derive_deb_src() {
  local f
  local -a sources=() lists=()
  shopt -s nullglob
  sources=(/etc/apt/sources.list.d/*.sources)
  lists=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list)
  shopt -u nullglob
  for f in "${sources[@]}"; do
    [[ -r $f ]] || continue
    # Paragraph mode: one deb822 stanza per record.  Keep only stanzas that
    # are binary "deb" Debian entries, rewrite Types to deb-src.
    awk 'BEGIN { RS=""; ORS="\n\n" }
         {
           n = split($0, L, "\n"); types=""; uris=""; out=""
           for (i = 1; i <= n; i++) {
             line = L[i]
             if (line ~ /^[ \t]*#/) continue
             if (tolower(line) ~ /^types:/)  { types = line; line = "Types: deb-src" }
             if (tolower(line) ~ /^uris:/)   { uris = line }
             out = out line "\n"
           }
           if (types ~ /[ \t]deb([ \t]|$)/ && tolower(uris) ~ /debian/) printf "%s\n", out
         }' "$f"
  done > "$APT/sources.list.d/derived-src.sources"
  : > "$APT/sources.list"
  for f in "${lists[@]}"; do
    [[ -r $f ]] || continue
    awk '/^[ \t]*deb[ \t]/ && tolower($0) ~ /debian/ { sub(/^[ \t]*deb/, "deb-src"); print }' "$f"
  done >> "$APT/sources.list"
  if [[ ! -s $APT/sources.list.d/derived-src.sources && ! -s $APT/sources.list ]]; then
    die "no Debian 'deb' entries found in /etc/apt to derive deb-src from" 3
  fi
}

# deb-src lines for the newer suites, next to the derived ones: Redis 8.0 comes
# from trixie, Valkey 9 from sid. Only the upstream tarball is needed from them
# (their Debian parts may be gone from the mirror: apt-get then fails after
# fetching the .orig.tar.gz, which is all that is used).
write_newer_src() {
  cat > "$APT/sources.list.d/newer-src.sources" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
}

find_src_tree() {
  local d
  d=$(awk 'NR==1 {print $1}' "$CACHE/$READY" 2>/dev/null || true)
  [[ -n $d && -f $CACHE/$d/tests/test_helper.tcl && -x $CACHE/$d/runtest ]] || return 1
  echo "$CACHE/$d"
}

ensure_source() {
  if [[ -n ${REDIS_SRC_DIR:-} ]]; then
    [[ -f $REDIS_SRC_DIR/tests/test_helper.tcl ]] || die "REDIS_SRC_DIR=$REDIS_SRC_DIR has no tests/test_helper.tcl" 3
    SRC=$REDIS_SRC_DIR
    return
  fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -f $CACHE/$READY ]] && SRC=$(find_src_tree); then
    flock -u 9
    return
  fi
  log "$SUITE_DESC source not cached yet; fetching via apt-get source into $CACHE"

  APT=$CACHE/apt
  mkdir -p "$APT/sources.list.d" "$APT/lists/partial" "$APT/cache/archives/partial" "$CACHE/dl"
  derive_deb_src
  write_newer_src
  local -a APTOPT=(
    -o "Dir::Etc::SourceList=$APT/sources.list"
    -o "Dir::Etc::SourceParts=$APT/sources.list.d"
    -o "Dir::State::Lists=$APT/lists"
    -o "Dir::Cache=$APT/cache"
    -o "Dir::Cache::archives=$APT/cache/archives"
    -o "APT::Sandbox::User=root"    # _apt cannot write into $HOME as root
    -o "Debug::NoLocking=1"
    -q
  )
  [[ $(id -u) -eq 0 ]] || APTOPT+=(-o "APT::Sandbox::User=$(id -un)")
  apt-get "${APTOPT[@]}" update >&2 || die "apt-get update (private deb-src config) failed" 3

  local spec=$APT_SPEC
  if [[ -z $spec ]]; then
    # redis-7.0: the newest 7.0.x the machine's (bookworm) entries carry; sid's and
    # trixie's newer redis are in the same lists now, so the version is named.
    local v
    v=$(apt-cache "${APTOPT[@]}" showsrc "$PKG" 2>/dev/null | awk '/^Version:/ {print $2}' \
        | grep -E "$VER_RE" | sort -V | tail -n1 || true)
    [[ -n $v ]] || die "no $SUITE_DESC version of source package $PKG in the apt lists" 3
    spec="$PKG=$v"
  fi
  local dl_rc=0
  (cd "$CACHE/dl" && apt-get "${APTOPT[@]}" source --download-only "$spec") >&2 || dl_rc=$?
  local orig
  # shellcheck disable=SC2086
  orig=$(cd "$CACHE/dl" && ls -1 $ORIG_GLOB 2>/dev/null | sort -V | tail -n1 || true)
  [[ -n $orig ]] || die "apt-get source --download-only $spec brought no $ORIG_GLOB (exit $dl_rc; have: $(ls "$CACHE/dl"))" 3
  [[ $dl_rc -eq 0 ]] || log "apt-get source exited $dl_rc, but the upstream tarball $orig is there; using it"
  local ver
  ver=${orig#"${PKG}"_}; ver=${ver%.orig.tar.gz}
  local name=$PKG-$ver
  local dsc=""
  if [[ $SUITE == redis-7.0 ]]; then
    dsc=$(ls -1 "$CACHE"/dl/redis_"$ver"-*.dsc 2>/dev/null | sort -V | tail -n1 || true)
    if [[ -n $dsc ]] && ! command -v dpkg-source >/dev/null && [[ $(id -u) -eq 0 ]]; then
      log "installing dpkg-dev (for dpkg-source)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends dpkg-dev >&2 \
        || die "could not install dpkg-dev" 3
    fi
  fi
  rm -rf "${CACHE:?}/$name" "$CACHE/.extract"
  mkdir -p "$CACHE/.extract"
  if [[ -n $dsc ]] && command -v dpkg-source >/dev/null; then
    # Applies Debian's patches (CVE fixes) so tests match Debian's binary.
    (cd "$CACHE/.extract" && dpkg-source --no-check -x "$dsc" "$name") >&2 \
      || die "dpkg-source -x failed" 3
  else
    [[ $SUITE == redis-7.0 ]] && log "dpkg-source or the .dsc unavailable: using the pristine upstream tarball"
    mkdir -p "$CACHE/.extract/t"
    tar -xzf "$CACHE/dl/$orig" -C "$CACHE/.extract/t" || die "tar -xzf $orig failed" 3
    # the top directory is e.g. redis-8.0.2 or valkey-io-valkey-<commit>
    local top
    top=$(find "$CACHE/.extract/t" -mindepth 1 -maxdepth 1 -type d)
    [[ $(wc -l <<<"$top") -eq 1 && -n $top ]] || die "$orig does not hold exactly one directory" 3
    mv "$top" "$CACHE/.extract/$name"
    rmdir "$CACHE/.extract/t"
  fi
  mv "$CACHE/.extract/$name" "$CACHE/$name"
  rmdir "$CACHE/.extract" 2>/dev/null || true
  [[ -f $CACHE/$name/tests/test_helper.tcl ]] || die "extracted tree lacks tests/test_helper.tcl" 3
  mkdir -p "$CACHE/$name/tests/tmp"
  if [[ -n $dsc ]]; then echo "$name $(basename "$dsc")"; else echo "$name $orig"; fi > "$CACHE/$READY"
  SRC=$CACHE/$name
  flock -u 9
  log "$SUITE_DESC source ready at $SRC"
}

# Optional lenient copy: only tests/ (+ runtest) is needed in external mode.
ensure_lenient() {
  local dst=$CACHE/lenient/$(basename "$SRC")
  if [[ ! -f $dst/.ready ]]; then
    rm -rf "$dst"; mkdir -p "$dst"
    cp -a "$SRC/runtest" "$SRC/tests" "$dst/"
    sed -i 's/^\( *\)r function flush$/\1catch {r function flush} ;# patched by redis-tcl-suite.sh --lenient-setup/' \
      "$dst/tests/support/server.tcl"
    grep -q 'catch {r function flush}' "$dst/tests/support/server.tcl" \
      || die "could not patch tests/support/server.tcl for --lenient-setup" 3
    touch "$dst/.ready"
  fi
  SRC=$dst
}

# The suite's client binaries in a bin dir: the suite's own cli when installed,
# else the machine's redis-cli.
link_clis() {
  local dir=$1 t c
  local -a cands
  case $SUITE in
    redis-7.0) cands=(redis-cli) ;;
    redis-8.0) cands=(redis8-cli redis-cli) ;;
    valkey-9)  cands=(valkey9-cli valkey-cli redis-cli) ;;
  esac
  for c in "${cands[@]}"; do
    t=$(command -v "$c" 2>/dev/null) || continue
    ln -sf "$t" "$dir/${SERVER_NAME%-server}-cli"
    break
  done
  t=$(command -v "${SERVER_NAME%-server}-benchmark" 2>/dev/null || command -v redis-benchmark 2>/dev/null) \
    && ln -sf "$t" "$dir/${SERVER_NAME%-server}-benchmark"
  return 0
}

# Spawn mode: a private copy of runtest + tests/ whose src/redis-server (valkey-9:
# src/valkey-server) is SPAWN_BIN itself (a symlink, no wrapper): the harness reads the
# banner's " PID: <pid>", "Server initialized" and "Ready to accept" from the server's
# stdout, where the binary logs as redis-server does. With --server-args it is a one-line
# `exec BIN "$@" ARGS` script instead (exec keeps the PID the banner shows). One copy per
# binary path and arguments, so runs for different binaries never share it.
ensure_spawn() {
  local key dst
  key=$(printf '%s\n%s' "$SPAWN_BIN" "$SERVER_ARGS" | sha1sum | cut -c1-12)
  dst=$CACHE/spawn/$key/$(basename "$SRC")
  if [[ ! -f $dst/.ready ]]; then
    rm -rf "$dst"; mkdir -p "$dst/src"
    cp -a "$SRC/runtest" "$SRC/tests" "$dst/"
    touch "$dst/.ready"
  fi
  mkdir -p "$dst/tests/tmp"
  rm -f "$dst/src/$SERVER_NAME"
  if [[ -n $SERVER_ARGS ]]; then
    printf '#!/bin/sh\nexec %q "$@" %s\n' "$(realpath "$SPAWN_BIN")" "$SERVER_ARGS" > "$dst/src/$SERVER_NAME"
    chmod +x "$dst/src/$SERVER_NAME"
  else
    ln -s "$(realpath "$SPAWN_BIN")" "$dst/src/$SERVER_NAME"
  fi
  link_clis "$dst/src"
  SRC=$dst
}

# Valkey's harness refuses to start, even in external mode, unless
# $VALKEY_BIN_DIR/valkey-server is executable; external mode never starts it, so
# it gets a bin dir of its own whose valkey-server is a script that fails.
ensure_valkey_external_bin() {
  local dir=$CACHE/external-bin/$SUITE
  mkdir -p "$dir"
  rm -f "$dir/valkey-server"
  printf '#!/bin/sh\necho "external mode: no server to start" >&2\nexit 1\n' > "$dir/valkey-server"
  chmod +x "$dir/valkey-server"
  link_clis "$dir"
  export VALKEY_BIN_DIR=$dir
}

ensure_source
[[ $LENIENT -eq 1 ]] && ensure_lenient
[[ -n $SPAWN_BIN ]] && ensure_spawn
[[ -z $SPAWN_BIN && $SUITE == valkey-9 ]] && ensure_valkey_external_bin
if [[ $FETCH_ONLY -eq 1 ]]; then
  echo "$SRC"
  exit 0
fi

# Same interpreter choice as ./runtest (last of 8.5 8.6 8.7 found in PATH).
RUNTEST_TCLSH=""
for v in 8.5 8.6 8.7; do
  t=$(command -v "tclsh$v" 2>/dev/null) && RUNTEST_TCLSH=$t
done
[[ -n $RUNTEST_TCLSH ]] || die "runtest needs tclsh8.5/8.6/8.7 in PATH (apt-get install tcl8.6)" 3

# --------------------------------------------------------------------------
# Sanity: is the server there?
# --------------------------------------------------------------------------
ping_server() {
  local reply=""
  exec 8<>"/dev/tcp/$HOST/$PORT" || return 1
  printf '*1\r\n$4\r\nPING\r\n' >&8
  IFS= read -r -t 5 reply <&8 || true
  exec 8<&- 8>&-
  [[ $reply == +PONG* || $reply == -NOAUTH* ]] || echo "warning: PING reply was: ${reply%$'\r'}" >&2
  return 0
}
if [[ -z $SPAWN_BIN ]]; then
  ping_server 2>/dev/null || die "cannot connect to $HOST:$PORT" 3
fi

# --------------------------------------------------------------------------
# Run units
# --------------------------------------------------------------------------
if [[ -z $LOGDIR ]]; then
  LOGDIR=$CACHE_ROOT/redis-tcl-logs/$(date +%Y%m%d-%H%M%S)-$PORT
fi
mkdir -p "$LOGDIR"
LOGDIR=$(cd "$LOGDIR" && pwd)   # the harness runs from the Redis source tree
FAILS=$LOGDIR/failures.txt
: > "$FAILS"

# The harness probes ports with `socket -server` on all interfaces, which does not see a
# port another run holds on 127.0.0.1, and in external mode always puts its own test
# server at --baseport - 32 (21079 by default), so two concurrent runs collide. A random
# base per unit below Linux's ephemeral range (32768+, where port-0 listeners of other
# tests land) keeps concurrent runs apart, in both modes; a unit whose harness still cannot
# bind its own port is retried once.
spawn_ports() { echo --baseport $((22000 + RANDOM % 9000)) --portcount 400; }
if [[ -n $SPAWN_BIN ]]; then
  RUNTEST_ARGS=(--clients 1 --timeout "$HARNESS_TIMEOUT")
else
  RUNTEST_ARGS=(--host "$HOST" --port "$PORT" --clients 1 --timeout "$HARNESS_TIMEOUT")
fi
[[ -n $TAGS ]] && RUNTEST_ARGS+=(--tags "$TAGS")
[[ $DURABLE -eq 1 ]] && RUNTEST_ARGS+=(--durable)
[[ $SINGLEDB -eq 1 ]] && RUNTEST_ARGS+=(--singledb)
RUNTEST_ARGS+=(${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"})

# --------------------------------------------------------------------------
# Config snapshot/restore between units.  In external mode the harness only
# restores "overrides" of start_server blocks; plain `r config set` calls in
# test bodies (e.g. hash-max-listpack-entries in unit/type/hash,
# list-max-listpack-size in unit/type/list) leak into the next unit and make
# e.g. unit/scan's encoding tests fail.  A tiny self-contained RESP client in
# Tcl (generated here, not taken from the redis tree) does the work; errors
# (e.g. a server without CONFIG GET) are reported and ignored.
# --------------------------------------------------------------------------
RESTORE_PARAMS="hash-max-listpack-entries hash-max-listpack-value zset-max-listpack-entries zset-max-listpack-value set-max-intset-entries list-max-listpack-size list-compress-depth stream-node-max-entries stream-node-max-bytes hll-sparse-max-bytes maxmemory maxmemory-policy notify-keyspace-events slowlog-log-slower-than slowlog-max-len busy-reply-threshold proto-max-bulk-len client-query-buffer-limit latency-tracking latency-tracking-info-percentiles latency-monitor-threshold acl-pubsub-default acllog-max-len tracking-table-max-keys appendonly save loglevel min-replicas-to-write replica-serve-stale-data lazyfree-lazy-user-del lazyfree-lazy-user-flush"
CFG_TCL=$LOGDIR/.config-snapshot.tcl
CFG_SNAP=$LOGDIR/.config-snapshot.txt
cat > "$CFG_TCL" <<'TCL'
# usage: tclsh config-snapshot.tcl snapshot|restore HOST PORT FILE ?PARAM...?
lassign $argv mode host port file
set params [lrange $argv 4 end]
set s [socket $host $port]
fconfigure $s -translation binary -buffering full
proc rd {s} {
    set line [string trimright [gets $s] "\r"]
    set t [string index $line 0]; set v [string range $line 1 end]
    switch -- $t {
        + - : { return $v }
        - { return [list __ERR__ $v] }
        $ { if {$v < 0} {return {}}; set d [read $s [expr {$v+2}]]; return [string range $d 0 end-2] }
        * - % { if {$v < 0} {return {}}; set n [expr {$t eq "%" ? 2*$v : $v}]; set l {}
                for {set i 0} {$i < $n} {incr i} {lappend l [rd $s]}; return $l }
        default { error "protocol error: $line" }
    }
}
proc cmd {s args} {
    set out "*[llength $args]\r\n"
    foreach a $args { append out "\$[string length $a]\r\n$a\r\n" }
    puts -nonewline $s $out; flush $s
    return [rd $s]
}
if {$mode eq "snapshot"} {
    set f [open $file w]
    foreach p $params {
        set r [cmd $s config get $p]
        if {[lindex $r 0] eq "__ERR__"} { puts stderr "config get $p: [lindex $r 1]"; continue }
        foreach {k v} $r { if {$k eq $p} { puts $f [list $k $v] } }
    }
    close $f
} else {
    catch {cmd $s client unpause}
    set f [open $file r]
    foreach line [split [read $f] "\n"] {
        if {[llength $line] != 2} continue
        lassign $line k v
        set cur [cmd $s config get $k]
        if {[lindex $cur 0] eq "__ERR__"} { puts "$k: [lindex $cur 1]"; continue }
        if {[lindex $cur 1] ne $v} {
            set r [cmd $s config set $k $v]
            if {[lindex $r 0] eq "__ERR__"} { puts "$k: restore failed: [lindex $r 1]" } else { puts "$k: [lindex $cur 1] -> $v" }
        }
    }
    close $f
}
close $s
TCL
TCLSH=$RUNTEST_TCLSH
# ./runtest is just `tclshX.Y tests/test_helper.tcl "$@"`.  We call the same
# thing through a 4-line launcher that makes stdout line-buffered: when stdout
# is a file Tcl buffers it fully, and a unit killed by the wall-clock timeout
# would otherwise lose all of its "[ok]" lines.
RUNNER=$LOGDIR/.runtest-linebuffered.tcl
cat > "$RUNNER" <<'TCL'
fconfigure stdout -buffering line
fconfigure stderr -buffering line
set argv0 tests/test_helper.tcl
source tests/test_helper.tcl
TCL
config_snapshot() {
  # shellcheck disable=SC2086
  timeout 10 "$TCLSH" "$CFG_TCL" snapshot "$HOST" "$PORT" "$CFG_SNAP" $RESTORE_PARAMS \
    2> "$LOGDIR/config-snapshot.err" || log "config snapshot failed (see $LOGDIR/config-snapshot.err)"
}
config_restore() {
  local unit=$1 out
  [[ -s $CFG_SNAP ]] || return 0
  out=$(timeout 10 "$TCLSH" "$CFG_TCL" restore "$HOST" "$PORT" "$CFG_SNAP" 2>&1) || out+=" (restore helper failed)"
  [[ -z $out ]] || printf '%s\n' "$out" | sed "s|^|before $unit: |" >> "$LOGDIR/config-restore.log"
}
[[ $CONFIG_RESTORE -eq 1 ]] && config_snapshot

declare -A PASSED FAILED IGNORED STATUS SECS
RUN_UNITS=()
T_START=$(date +%s)

log "source: $SRC"
log "logs:   $LOGDIR"
log "runtest ${RUNTEST_ARGS[*]} --single <unit>   (via $RUNTEST_TCLSH; per-unit limit ${UNIT_TIMEOUT}s)"

for unit in $UNITS; do
  RUN_UNITS+=("$unit")
  safe=${unit//\//_}
  ulog=$LOGDIR/$safe.log
  if [[ ! -f $SRC/tests/$unit.tcl ]]; then
    PASSED[$unit]=0; FAILED[$unit]=1; IGNORED[$unit]=0; STATUS[$unit]=missing; SECS[$unit]=0
    printf '%s\t%s\n' "$unit" "MISSING: no tests/$unit.tcl in $SRC" >> "$FAILS"
    echo "$unit: 0 passed, 1 failed (unit file not found)"
    continue
  fi
  [[ $CONFIG_RESTORE -eq 1 ]] && config_restore "$unit"
  u0=$(date +%s)
  rc=0
  # timeout puts runtest in its own process group and signals the whole
  # group, so the harness' background test-client tclsh dies with it.
  for attempt in 1 2; do
    # shellcheck disable=SC2207
    PORT_ARGS=($(spawn_ports))
    rc=0
    (cd "$SRC" && TERM=dumb timeout -k 15 "$UNIT_TIMEOUT" \
       "$RUNTEST_TCLSH" "$RUNNER" "${RUNTEST_ARGS[@]}" "${PORT_ARGS[@]}" --single "$unit") > "$ulog" 2>&1 < /dev/null || rc=$?
    grep -q "couldn't open socket: address already in use" "$ulog" \
      && ! grep -q '^\[ok\]: ' "$ulog" || break
  done
  u1=$(date +%s)
  SECS[$unit]=$((u1 - u0))

  # Strip any ANSI colour codes before parsing.
  clean=$(sed -e 's/\x1b\[[0-9;]*m//g' "$ulog")
  n_ok=$(grep -c '^\[ok\]: ' <<<"$clean" || true)
  n_err=$(grep -c '^\[err\]: ' <<<"$clean" || true)
  n_ign=$(grep -cE '^\[(ignore|skip)\]: ' <<<"$clean" || true)
  n_exc=$(grep -c '^\[exception\]: ' <<<"$clean" || true)
  n_to=$(grep -c '^\[TIMEOUT\]' <<<"$clean" || true)
  status=ok
  extra=0
  # Failing test names: "[err]: NAME in tests/unit/x.tcl" (details follow).
  grep '^\[err\]: ' <<<"$clean" | sed -e 's/^\[err\]: //' -e 's/ in tests\/[^ ]*\.tcl$//' \
    | while IFS= read -r name; do printf '%s\t%s\n' "$unit" "$name"; done >> "$FAILS" || true
  if [[ $n_exc -gt 0 ]]; then
    status=exception
    msg=$(grep -m1 -A1 '^\[exception\]: ' <<<"$clean" | tail -n1 | cut -c1-200 || true)
    # best effort: the test that was running is in the Tcl errorInfo
    during=$(grep -m1 -oE '^"test \{[^}]*\}|^"test "[^"]*"' <<<"$clean" | sed -e 's/^"test [{"]//' -e 's/[}"]$//' || true)
    printf '%s\t%s\n' "$unit" "EXCEPTION (harness aborted unit${during:+ during test: $during}): $msg" >> "$FAILS"
  fi
  if [[ $n_to -gt 0 ]]; then
    status=timeout
    printf '%s\t%s\n' "$unit" "HARNESS TIMEOUT (no progress for ${HARNESS_TIMEOUT}s): $(grep -m1 'IN PROGRESS' <<<"$clean" || true)" >> "$FAILS"
  fi
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    status=timeout
    n_to=$((n_to + 1))
    last_ok=$(grep '^\[ok\]: ' <<<"$clean" | tail -n1 | sed -e 's/^\[ok\]: //' -e 's/ ([0-9]* ms)$//' || true)
    printf '%s\t%s\n' "$unit" "UNIT TIMEOUT: killed after ${UNIT_TIMEOUT}s${last_ok:+ (last passing test: $last_ok)}" >> "$FAILS"
  elif [[ $rc -ne 0 && $n_err -eq 0 && $n_exc -eq 0 && $n_to -eq 0 ]]; then
    status=crash
    extra=1
    printf '%s\t%s\n' "$unit" "HARNESS EXIT $rc: $(tail -n1 <<<"$clean" | cut -c1-200)" >> "$FAILS"
  elif [[ $rc -eq 0 && $n_err -eq 0 ]] && ! grep -q 'All tests passed' <<<"$clean"; then
    status=unknown
  fi
  [[ $status == ok && $n_err -gt 0 ]] && status=failures
  PASSED[$unit]=$n_ok
  FAILED[$unit]=$((n_err + n_exc + n_to + extra))
  IGNORED[$unit]=$n_ign
  STATUS[$unit]=$status
  note=""
  [[ $status != ok && $status != failures ]] && note=" [$status]"
  echo "$unit: ${PASSED[$unit]} passed, ${FAILED[$unit]} failed${note} (${n_ign} skipped/ignored, ${SECS[$unit]}s)"
done

[[ $CONFIG_RESTORE -eq 1 ]] && config_restore "(end of run)"
T_END=$(date +%s)
WALL=$((T_END - T_START))
tot_p=0; tot_f=0
for unit in "${RUN_UNITS[@]}"; do
  tot_p=$((tot_p + PASSED[$unit])); tot_f=$((tot_f + FAILED[$unit]))
done
echo "TOTAL: $tot_p passed, $tot_f failed in ${#RUN_UNITS[@]} units, wall time ${WALL}s"
echo "failing tests: $FAILS ($(wc -l < "$FAILS") entries); per-unit logs in $LOGDIR"

# --------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------
json_str() {
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\t'/\\t}; s=${s//$'\r'/\\r}; s=${s//$'\n'/\\n}
  s=$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')
  printf '"%s"' "$s"
}

if [[ -n $JSON_OUT ]]; then
  {
    printf '{\n  "host": %s,\n  "port": %s,\n  "redis_source": %s,\n  "tags": %s,\n' \
      "$(json_str "$HOST")" "$PORT" "$(json_str "$(basename "$SRC")")" "$(json_str "$TAGS")"
    printf '  "wall_seconds": %d,\n  "total_passed": %d,\n  "total_failed": %d,\n  "units": [\n' "$WALL" "$tot_p" "$tot_f"
    first=1
    for unit in "${RUN_UNITS[@]}"; do
      [[ $first -eq 1 ]] || printf ',\n'
      first=0
      printf '    {"unit": %s, "passed": %d, "failed": %d, "skipped": %d, "status": %s, "seconds": %d, "failures": [' \
        "$(json_str "$unit")" "${PASSED[$unit]}" "${FAILED[$unit]}" "${IGNORED[$unit]}" "$(json_str "${STATUS[$unit]}")" "${SECS[$unit]}"
        f1=1
        while IFS=$'\t' read -r u name; do
          [[ $u == "$unit" ]] || continue
          [[ $f1 -eq 1 ]] || printf ', '
          f1=0
          json_str "$name"
        done < "$FAILS"
      printf ']}'
    done
    printf '\n  ]\n}\n'
  } > "$JSON_OUT"
  echo "JSON summary written to $JSON_OUT"
fi

if [[ -n $WRITE_BASELINE ]]; then
  {
    echo "# unit MIN_PASSED -- generated by $PROG --suite $SUITE ($(basename "$SRC")) against ${SPAWN_BIN:-$HOST:$PORT} on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    for unit in "${RUN_UNITS[@]}"; do echo "$unit ${PASSED[$unit]}"; done
  } > "$WRITE_BASELINE"
  echo "baseline written to $WRITE_BASELINE"
fi

rc=0
notrun=()
if [[ -n $BASELINE ]]; then
  while read -r bunit bmin _rest; do
    [[ -z ${bunit:-} || $bunit == \#* ]] && continue
    [[ $bmin =~ ^[0-9]+$ ]] || { echo "baseline: ignoring malformed line for $bunit" >&2; continue; }
    if [[ -z ${PASSED[$bunit]+x} ]]; then
      notrun+=("$bunit")
      continue
    fi
    if (( PASSED[$bunit] < bmin )); then
      echo "BASELINE REGRESSION: $bunit passed ${PASSED[$bunit]} < minimum $bmin"
      rc=1
    fi
  done < "$BASELINE"
  [[ ${#notrun[@]} -eq 0 ]] || echo "baseline: not checked (not run this time): ${notrun[*]}"
  [[ $rc -eq 0 ]] && echo "baseline: all units at or above their minimum pass counts"
fi
exit $rc
