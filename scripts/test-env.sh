#!/usr/bin/env bash
# Prepares the real services the integration tests talk to: Docker Engine, Redis and Jaeger
# (plus binutils, whose strip the sandbox image build uses, bubblewrap, which
# contains the process driver's sandboxes, python3, which python pools run, and chromium, which the
# console's browser tests drive).
#
# Idempotent and safe to run concurrently: it installs Debian's docker.io and
# redis-server only when missing, starts dockerd and redis-server only when they
# do not answer, and never stops a service it did not start. Run as root on a
# fresh Debian 12 machine; later issues append their services here.
#
# Environment (all optional):
#   UHLP_TEST_ENV_STATE   directory for logs and pid files   (default /var/tmp/uhlp-test-env)
#   UHLP_DOCKERD_FLAGS    extra dockerd flags                  (default: none)
#   UHLP_WAIT_SECONDS     how long to wait for each service    (default 60)
set -euo pipefail

STATE_DIR="${UHLP_TEST_ENV_STATE:-/var/tmp/uhlp-test-env}"
WAIT_SECONDS="${UHLP_WAIT_SECONDS:-60}"
mkdir -p "$STATE_DIR"

log() { printf 'test-env: %s\n' "$*" >&2; }
fail() { log "ERROR: $*"; exit 1; }

# Several worktrees may run this at once; one lock serialises installs and starts.
# Daemons started below get `9>&-` so they do not inherit (and hold) the lock.
exec 9>"$STATE_DIR/lock"
flock -w 600 9 || fail "could not take $STATE_DIR/lock within 600s"

[ "$(id -u)" -eq 0 ] || fail "must run as root (installs packages and starts dockerd)"

# Waits until "$@" succeeds, or fails after WAIT_SECONDS.
wait_for() {
  local what="$1"; shift
  local deadline=$((SECONDS + WAIT_SECONDS))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
  log "$what answers"
}

# --- packages ---------------------------------------------------------------
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# `uhlp images build` strips the Node binary it copies into the sandbox base image.
command -v strip >/dev/null 2>&1 || missing+=(binutils)
# The process driver runs every sandbox in bubblewrap's namespaces.
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# runner: python pools run Debian's CPython (/usr/bin/python3, never a version manager's): the
# process sandbox mounts it and `uhlp images build` copies it into uhlp/python-base.
[ -x /usr/bin/python3 ] || missing+=(python3)
# The Git-source tests serve https with a certificate made at test time.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The dashboard test scrapes a core and an operator with Prometheus (it starts it itself, on
# loopback) and loads the chart's alert rules with promtool; policy-rc.d below keeps the
# package's own service from starting.
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# The single-node cluster (scripts/k8s-node.sh): its own containerd with the CRI plugin
# (never Docker's), runc, the CNI plugins (bridge, host-local, portmap, firewall), and
# socat, which relays the API server to pods; policy-rc.d keeps containerd's service off.
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || missing+=(containernetworking-plugins)
command -v socat >/dev/null 2>&1 || missing+=(socat)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
# The console's browser tests drive Debian's Chromium through playwright-core (never a downloaded browser).
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Other jobs on the machine may hold the dpkg lock; wait for it instead of failing.
  apt_opts=(-q -o DPkg::Lock::Timeout=600)
  apt-get "${apt_opts[@]}" update >"$STATE_DIR/apt.log" 2>&1 || { cat "$STATE_DIR/apt.log" >&2; fail "apt-get update failed"; }
  # policy-rc.d 101 keeps the packages' init scripts from starting services on
  # install: this script starts them itself, with its own flags and pid files.
  policy_rc="/usr/sbin/policy-rc.d"
  created_policy=0
  if [ ! -e "$policy_rc" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy_rc"; chmod +x "$policy_rc"; created_policy=1
  fi
  apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" >>"$STATE_DIR/apt.log" 2>&1 \
    || { [ "$created_policy" -eq 0 ] || rm -f "$policy_rc"; tail -50 "$STATE_DIR/apt.log" >&2; fail "apt-get install ${missing[*]} failed"; }
  [ "$created_policy" -eq 0 ] || rm -f "$policy_rc"
fi

# --- dockerd ----------------------------------------------------------------
# `docker` may resolve to a newer client than Debian's daemon; both speak the
# daemon's API version, so either works for the readiness check.
docker_answers() { docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; }

if docker_answers; then
  log "dockerd already running; left as it is"
else
  # Defaults work on this VM kind (overlay2 on ext4, cgroup v1 with cgroupfs,
  # iptables present); UHLP_DOCKERD_FLAGS is the escape hatch for kernels that
  # lack netfilter (--iptables=false) or overlay (--storage-driver=vfs).
  dockerd_flags=()
  # shellcheck disable=SC2206 # deliberate word splitting of user flags
  dockerd_flags+=(${UHLP_DOCKERD_FLAGS:-})
  log "starting dockerd ${dockerd_flags[*]} (log $STATE_DIR/dockerd.log)"
  setsid nohup dockerd --pidfile "$STATE_DIR/dockerd.pid" "${dockerd_flags[@]}" \
    >>"$STATE_DIR/dockerd.log" 2>&1 </dev/null 9>&- &
  wait_for dockerd docker_answers || { tail -40 "$STATE_DIR/dockerd.log" >&2; fail "dockerd did not answer within ${WAIT_SECONDS}s"; }
fi

# --- redis-server -------------------------------------------------------------
redis_answers() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

if redis_answers; then
  log "redis-server already running; left as it is"
else
  log "starting redis-server on 127.0.0.1:6379 (log $STATE_DIR/redis.log)"
  mkdir -p "$STATE_DIR/redis"
  redis-server --bind 127.0.0.1 --port 6379 --protected-mode yes \
    --daemonize yes --pidfile "$STATE_DIR/redis.pid" --logfile "$STATE_DIR/redis.log" \
    --dir "$STATE_DIR/redis" --save '' --appendonly no 9>&-
  wait_for redis-server redis_answers || { tail -40 "$STATE_DIR/redis.log" >&2; fail "redis-server did not answer within ${WAIT_SECONDS}s"; }
fi

# --- jaeger -----------------------------------------------------------------
# The tracing tests export to an all-in-one Jaeger on loopback and read their traces back
# through its query API; scripts/jaeger-env.sh builds it once from Go modules (the first
# build takes minutes) and writes $STATE_DIR/jaeger.env, which the tests read.
UHLP_TEST_ENV_STATE="$STATE_DIR" UHLP_WAIT_SECONDS="$WAIT_SECONDS" "$(dirname "${BASH_SOURCE[0]}")/jaeger-env.sh" up 9>&- >/dev/null \
  || fail "jaeger did not start (see $STATE_DIR/jaeger.log)"

log "ready: docker $(docker info --format '{{.ServerVersion}} storage={{.Driver}} cgroup={{.CgroupDriver}}'), redis $(redis-cli -h 127.0.0.1 -p 6379 info server | sed -n 's/^redis_version:\(.*\)\r$/\1/p')"
