#!/usr/bin/env bash
# Jaeger for the tracing tests, built once from Go modules (scripts/jaeger-env/go.mod) like helm
# in scripts/helm-env.sh, cached per version, and run as an all-in-one process on loopback: the
# OTLP/HTTP receiver takes the core's spans, the query API gives them back to the tests, traces
# are kept in memory (scripts/jaeger-env/config.yaml).
#
#   scripts/jaeger-env.sh        build if needed; last line: JAEGER=<path>
#   scripts/jaeger-env.sh up     build if needed, start Jaeger unless it answers already, and
#                                write <state>/jaeger.env (JAEGER_OTLP_ENDPOINT, JAEGER_QUERY_URL, JAEGER_PID)
#   scripts/jaeger-env.sh down   stop the Jaeger that `up` started (by its pid file)
#
# Environment (all optional):
#   UHLP_JAEGER_CACHE_DIR     where jaeger is built, per version   (~/.cache/uhlp/jaeger)
#   UHLP_TEST_ENV_STATE       directory of the pid, log and env files   (/var/tmp/uhlp-test-env)
#   UHLP_JAEGER_OTLP_PORT     OTLP/HTTP receiver port   (4318)
#   UHLP_JAEGER_QUERY_PORT    query API and UI port     (16686)
#   UHLP_JAEGER_GRPC_PORT     query gRPC port           (16685)
#   UHLP_JAEGER_HEALTH_PORT   health check port         (13133)
#   UHLP_WAIT_SECONDS         how long to wait for it to answer   (60)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module_dir="$script_dir/jaeger-env"
version=$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2; exit }' "$module_dir/go.mod")
[[ -n "$version" ]] || { echo "jaeger-env: no github.com/jaegertracing/jaeger requirement in $module_dir/go.mod" >&2; exit 1; }
cache_dir=${UHLP_JAEGER_CACHE_DIR:-$HOME/.cache/uhlp/jaeger}
bin="$cache_dir/$version/bin/jaeger"
state_dir="${UHLP_TEST_ENV_STATE:-/var/tmp/uhlp-test-env}"
otlp_port=${UHLP_JAEGER_OTLP_PORT:-4318}
query_port=${UHLP_JAEGER_QUERY_PORT:-16686}
grpc_port=${UHLP_JAEGER_GRPC_PORT:-16685}
health_port=${UHLP_JAEGER_HEALTH_PORT:-13133}
wait_seconds=${UHLP_WAIT_SECONDS:-60}

log() { echo "jaeger-env: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib/go-build-once.sh
. "$script_dir/lib/go-build-once.sh"

build() {
  go_build_once "jaeger $version" "$module_dir" "$(dirname "$bin")" "$cache_dir/$version/build" jaeger "" github.com/jaegertracing/jaeger/cmd/jaeger
}

answers() { curl -fsS -o /dev/null "http://127.0.0.1:$query_port/api/services" 2> /dev/null; }

up() {
  mkdir -p "$state_dir"
  if answers; then
    log "jaeger already answers on 127.0.0.1:$query_port; left as it is"
  else
    log "starting jaeger $version (OTLP/HTTP 127.0.0.1:$otlp_port, query 127.0.0.1:$query_port; log $state_dir/jaeger.log)"
    JAEGER_OTLP_HTTP_PORT=$otlp_port JAEGER_QUERY_HTTP_PORT=$query_port JAEGER_QUERY_GRPC_PORT=$grpc_port \
      JAEGER_HEALTH_PORT=$health_port setsid nohup "$bin" --config "file:$module_dir/config.yaml" \
      >> "$state_dir/jaeger.log" 2>&1 < /dev/null 8>&- 9>&- &
    echo $! > "$state_dir/jaeger.pid"
    local deadline=$((SECONDS + wait_seconds))
    until answers; do
      kill -0 "$(cat "$state_dir/jaeger.pid")" 2> /dev/null || { tail -30 "$state_dir/jaeger.log" >&2; die "jaeger exited"; }
      [[ $SECONDS -lt $deadline ]] || { tail -30 "$state_dir/jaeger.log" >&2; die "jaeger did not answer within ${wait_seconds}s"; }
      sleep 0.2
    done
    log "jaeger answers"
  fi
  # Read by test/helpers/jaeger.ts.
  {
    echo "JAEGER_OTLP_ENDPOINT=http://127.0.0.1:$otlp_port"
    echo "JAEGER_QUERY_URL=http://127.0.0.1:$query_port"
    echo "JAEGER_PID=$(cat "$state_dir/jaeger.pid" 2> /dev/null || true)"
  } > "$state_dir/jaeger.env.tmp" && mv "$state_dir/jaeger.env.tmp" "$state_dir/jaeger.env"
}

down() {
  local pid_file="$state_dir/jaeger.pid"
  [[ -f "$pid_file" ]] || { log "no $pid_file; nothing to stop"; return 0; }
  local pid; pid=$(cat "$pid_file")
  if kill -0 "$pid" 2> /dev/null; then kill "$pid"; log "stopped jaeger (pid $pid)"; fi
  rm -f "$pid_file" "$state_dir/jaeger.env"
}

case "${1:-build}" in
  build) build ;;
  up) build; up ;;
  down) down; exit 0 ;;
  *) die "usage: $0 [build|up|down]" ;;
esac
echo "JAEGER=$bin"
