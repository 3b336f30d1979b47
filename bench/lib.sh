# Sourced by the bench scripts (`. bench/lib.sh`, from the repository root).
#
# Every script:
#   tumbler=$(bench_tumbler)         # $TUMBLER_BIN, else the release build (built first)
#   bench_need redis-server ...      # exits unless each program is on PATH
#   port=$(free_port)                # a free loopback port
#   wait_ping PORT                   # until the server there answers PING (at most 5 s)
#   bench_serve ARGV...              # ARGV --port P in the background, then wait_ping;
#                                    #   BENCH_PORT, BENCH_PID
#   bench_stop                       # stops what bench_serve started
#   bench_rounds N FN TUMBLER        # N rounds of FN LABEL ARGV... for tumbler, for
#                                    #   $TUMBLER_BIN2 if set, and for redis-server
#
# The callgrind scripts (bench/*-callgrind.sh): run tumbler (or redis-server) under
# valgrind --tool=callgrind and count the instructions a batch of requests costs.
#
#   cg_init                          # checks valgrind; CG_DIR: a temporary directory
#   cg_start LABEL BINARY ARGS...    # under callgrind, waits for PING; CG_PID, CG_PORT
#   ir=$(cg_count LABEL CASE CMD...) # zero counters, run CMD, dump: instructions it cost
#   cg_stop                          # SHUTDOWN NOSAVE (or kill), wait
#   ir=$(cg_total LABEL)             # after cg_stop: the whole run's instructions
#   cg_per N IR                      # IR / N
#
# cg_start takes the port from ARGS (`--port P`). Counting after zeroing leaves out startup
# and warm-up; cg_total counts them too (take the difference of two runs).

bench_tumbler() {
  if [ -n "${TUMBLER_BIN:-}" ]; then
    echo "$TUMBLER_BIN"
    return
  fi
  cargo build --release -q -p tumbler --bin tumbler >&2
  echo target/release/tumbler
}

bench_need() {
  local b
  for b in "$@"; do
    command -v "$b" >/dev/null || { echo "$b not found" >&2; exit 1; }
  done
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_ping() { # port
  local _
  for _ in $(seq 50); do
    redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

bench_serve() { # argv...
  BENCH_PORT=$(free_port)
  "$@" --port "$BENCH_PORT" >/dev/null 2>&1 &
  BENCH_PID=$!
  wait_ping "$BENCH_PORT" || true
}

bench_stop() {
  kill "$BENCH_PID"
  wait "$BENCH_PID" 2>/dev/null || true
}

bench_rounds() { # rounds fn tumbler-binary
  local r
  for r in $(seq "$1"); do
    echo "round $r"
    "$2" tumbler "$3"
    if [ -n "${TUMBLER_BIN2:-}" ]; then "$2" tumbler2 "$TUMBLER_BIN2"; fi
    "$2" redis redis-server --save '' --appendonly no
  done
}

cg_init() {
  command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
  CG_DIR=$(mktemp -d)
  trap 'rm -rf "$CG_DIR"' EXIT
}

cg_start() { # label binary args... (with --port P)
  local label=$1 a prev=
  shift
  CG_PORT=
  for a in "$@"; do
    [ "$prev" = --port ] && CG_PORT=$a
    prev=$a
  done
  rm -f "$CG_DIR/$label".*
  valgrind --tool=callgrind --callgrind-out-file="$CG_DIR/$label.%p" "$@" >/dev/null 2>&1 &
  CG_PID=$!
  for _ in $(seq 600); do
    redis-cli -p "$CG_PORT" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server did not start: $*" >&2
  return 1
}

cg_count() { # label case command... -> instructions the command cost the server
  local label=$1 case=$2
  shift 2
  callgrind_control -z "$CG_PID" >/dev/null 2>&1
  "$@" >/dev/null 2>&1
  rm -f "$CG_DIR/$label".*.*
  callgrind_control -d "$case" "$CG_PID" >/dev/null 2>&1
  sleep 0.5
  cat "$CG_DIR/$label".*.* 2>/dev/null | awk '/^summary:/ {s += $2} END {print s + 0}'
}

cg_stop() {
  redis-cli -p "$CG_PORT" shutdown nosave >/dev/null 2>&1 || kill "$CG_PID" 2>/dev/null || true
  wait "$CG_PID" 2>/dev/null || true
}

cg_total() { # label -> the largest total of the run's dumps (the final one)
  grep -h '^totals:\|^summary:' "$CG_DIR/$1".* | awk '$2>m {m=$2} END {print m}'
}

cg_per() { # n ir -> ir / n
  awk -v i="$2" -v n="$1" 'BEGIN{print i / n}'
}
