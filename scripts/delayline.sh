# Sourced by the bench scripts: with RTT set (e.g. RTT=2ms), every service
# a run talks to is put behind a delay line (internal/testsupport/cmd/delayline)
# that delivers each byte, in order, RTT/2 after it was sent in each
# direction, as a service a round trip away would. Bytes, not requests:
# PostgreSQL's pipelines and HTTP's kept-alive connections are delayed as
# a network delays them.
#   delay_url VAR URL  sets VAR to URL with its host:port replaced by a delay
#                      line's (one line per host:port, started on first use);
#                      to URL as it is when RTT is unset or 0. (Not in $(...):
#                      the line must be started by the script itself.)
#   delay_stop      stops the lines (the scripts' EXIT traps call it).
DELAY_LINES=()
declare -A DELAY_ADDR=()
delay_url() {
  local var=$1 url=$2
  if [ -z "${RTT:-}" ] || [ "${RTT}" = 0 ] || [ "${RTT}" = 0ms ]; then
    printf -v "$var" '%s' "$url"
    return
  fi
  [[ $url =~ ^([a-z0-9+]+://([^@/]*@)?)([^/?]+)(.*)$ ]] || { echo "delay_url: cannot read $url" >&2; return 1; }
  local prefix=${BASH_REMATCH[1]} hostport=${BASH_REMATCH[3]} rest=${BASH_REMATCH[4]}
  if [ -z "${DELAY_ADDR[$hostport]:-}" ]; then
    [ -x "${B:?}/delayline" ] || go build -o "$B/delayline" ./internal/testsupport/cmd/delayline
    local out="$B/delayline-${hostport//[:.]/_}.addr"
    rm -f "$out"
    "$B/delayline" -target "$hostport" -rtt "$RTT" >"$out" &
    DELAY_LINES+=($!)
    for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
    DELAY_ADDR[$hostport]=$(head -1 "$out")
    [ -n "${DELAY_ADDR[$hostport]}" ] || { echo "delay_url: no delay line for $hostport" >&2; return 1; }
  fi
  printf -v "$var" '%s%s%s' "$prefix" "${DELAY_ADDR[$hostport]}" "$rest"
}
delay_stop() {
  local p
  for p in "${DELAY_LINES[@]}"; do kill "$p" 2>/dev/null || true; done
}
