#!/usr/bin/env bash
# Installs, starts and stops the real services the tests run against.
#   scripts/services.sh start   # install if needed, start, write .cache/services/env
#   scripts/services.sh stop    # stop what start started
#   scripts/services.sh env     # print the env file (source it to run go test by hand)
# Services: S3 (versitygw, built from the Go module proxy).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE="$ROOT/.cache"
STATE="$CACHE/services"
BIN="$CACHE/bin"
VERSITYGW_VERSION=v1.8.0
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
  ROOT_ACCESS_KEY=test ROOT_SECRET_KEY=testtesttest \
    nohup "$BIN/versitygw" --port "127.0.0.1:$port" --quiet posix "$data" >"$STATE/versitygw.log" 2>&1 &
  echo $! >"$STATE/versitygw.pid"
  echo "$data" >"$STATE/versitygw.data"
  wait_port "$port" 10 versitygw
  echo "export DEADLETTER_TEST_S3_ENDPOINT=http://127.0.0.1:$port" >>"$STATE/env"
  log "S3 (versitygw) on 127.0.0.1:$port"
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
  ;;
stop)
  stop_one versitygw
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
