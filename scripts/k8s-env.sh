#!/usr/bin/env bash
# A real Kubernetes control plane for integration tests: etcd, kube-apiserver and
# kube-controller-manager (the garbage collector removes owner-referenced objects),
# built once from Go modules (scripts/k8s-env/go.mod) and run on 127.0.0.1.
#
#   scripts/k8s-env.sh up     build if needed, start, wait for /readyz; last line: KUBECONFIG=<path>
#   scripts/k8s-env.sh down   stop only the processes `up` started (pid files in the run dir)
#   scripts/k8s-env.sh env    print KUBECONFIG=<path> when the control plane answers /readyz
#
# kubectl of the same version is built too and linked beside the kubeconfig ($run_dir/kubectl).
#
# Environment (all optional):
#   UHLP_K8S_CACHE_DIR   where binaries are built, per Kubernetes version   (~/.cache/uhlp/k8s)
#   UHLP_K8S_RUN_DIR     certificates, token, etcd data, logs, pid files     (~/.cache/uhlp/k8s/run)
#   UHLP_K8S_ETCD_PORT / UHLP_K8S_ETCD_PEER_PORT / UHLP_K8S_APISERVER_PORT / UHLP_K8S_KCM_PORT
#                        loopback ports (23790 / 23800 / 26443 / 26257)
#   UHLP_K8S_READY_TIMEOUT  seconds to wait for /readyz (180)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module_dir="$script_dir/k8s-env"
version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$module_dir/go.mod")
cache_dir=${UHLP_K8S_CACHE_DIR:-$HOME/.cache/uhlp/k8s}
bin_dir="$cache_dir/$version/bin"
run_dir=${UHLP_K8S_RUN_DIR:-$cache_dir/run}
etcd_port=${UHLP_K8S_ETCD_PORT:-23790}
etcd_peer_port=${UHLP_K8S_ETCD_PEER_PORT:-23800}
apiserver_port=${UHLP_K8S_APISERVER_PORT:-26443}
kcm_port=${UHLP_K8S_KCM_PORT:-26257}
ready_timeout=${UHLP_K8S_READY_TIMEOUT:-180}
kubeconfig="$run_dir/kubeconfig"
components=(etcd kube-apiserver kube-controller-manager)

log() { echo "k8s-env: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib/go-build-once.sh
. "$script_dir/lib/go-build-once.sh"

# The etcd main package is the module root (go.etcd.io/etcd/server/v3), so go names
# the binary after that path ("server"; "v3" before major-version suffixes were dropped).
go_build_fixup() {
  if [[ -x "$1/server" ]]; then mv "$1/server" "$1/etcd"; elif [[ -x "$1/v3" ]]; then mv "$1/v3" "$1/etcd"; fi
}

build() {
  go_build_once "etcd, kube-apiserver, kube-controller-manager, kubectl $version" "$module_dir" "$bin_dir" "$cache_dir/$version/build" \
    "etcd kube-apiserver kube-controller-manager kubectl" "" \
    go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
}

# Certificates, service-account keys and the admin token are made once per run dir.
generate_credentials() {
  local pki="$run_dir/pki"
  if [[ -s "$pki/token" ]]; then
    issue_apiserver_cert
    return
  fi
  command -v openssl > /dev/null || die "openssl is not installed"
  mkdir -p "$pki" && chmod 700 "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=uhlp-test-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2> /dev/null
  issue_apiserver_cert
  openssl genrsa -out "$pki/sa.key" 2048 2> /dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2> /dev/null
  local token
  token=$(openssl rand -hex 24)
  # The admin token's user is in system:masters, which RBAC lets do everything.
  echo "$token,uhlp-admin,uhlp-admin,\"system:masters\"" > "$pki/tokens.csv"
  echo "$token" > "$pki/token"
}

# The serving certificate names every address clients use: loopback, and the
# `kubernetes` Service (10.96.0.1, the first of --service-cluster-ip-range) that pods
# of scripts/k8s-node.sh connect to. A certificate from before the Service address
# was added is issued again; the API server reloads the files while it runs.
issue_apiserver_cert() {
  local pki="$run_dir/pki"
  if [[ -s "$pki/apiserver.crt" ]] && openssl x509 -in "$pki/apiserver.crt" -noout -text | grep -q 'IP Address:10.96.0.1'; then
    return
  fi
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key.new" -out "$pki/apiserver.csr" 2> /dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' > "$pki/apiserver.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt.new" 2> /dev/null
  mv "$pki/apiserver.key.new" "$pki/apiserver.key"
  mv "$pki/apiserver.crt.new" "$pki/apiserver.crt"
}

write_kubeconfig() {
  local ca token
  ca=$(base64 -w0 < "$run_dir/pki/ca.crt")
  token=$(cat "$run_dir/pki/token")
  umask 077
  cat > "$kubeconfig.tmp" << EOF
apiVersion: v1
kind: Config
clusters:
  - name: uhlp-test
    cluster:
      server: https://127.0.0.1:$apiserver_port
      certificate-authority-data: $ca
users:
  - name: uhlp-admin
    user:
      token: $token
contexts:
  - name: uhlp-test
    context:
      cluster: uhlp-test
      user: uhlp-admin
current-context: uhlp-test
EOF
  mv "$kubeconfig.tmp" "$kubeconfig"
}

pid_file() { echo "$run_dir/pids/$1.pid"; }

# A pid counts as ours only while it still runs the binary we started: pid files can
# outlive a reboot, and a reused pid must never be signalled.
running_pid() {
  local file pid
  file=$(pid_file "$1")
  [[ -s "$file" ]] || return 1
  pid=$(cat "$file")
  [[ "$(readlink "/proc/$pid/exe" 2> /dev/null)" == "$bin_dir/$1" ]] || return 1
  echo "$pid"
}

port_in_use() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }

ready() {
  curl -fsS --max-time 5 --cacert "$run_dir/pki/ca.crt" -H "Authorization: Bearer $(cat "$run_dir/pki/token")" \
    "https://127.0.0.1:$apiserver_port/readyz" > /dev/null 2>&1
}

# setsid puts each process in its own session, so it outlives the shell (and the
# process group) that ran `up`; `down` stops it by the recorded pid.
start() {
  local name=$1
  shift
  if running_pid "$name" > /dev/null; then return; fi
  setsid "$bin_dir/$name" "$@" >> "$run_dir/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$(pid_file "$name")"
}

wait_for() {
  local what=$1 deadline=$((SECONDS + ready_timeout))
  shift
  until "$@"; do
    for name in "${components[@]}"; do
      if [[ -s "$(pid_file "$name")" ]] && ! running_pid "$name" > /dev/null; then
        tail -5 "$run_dir/logs/$name.log" >&2
        log "$name exited; see $run_dir/logs/$name.log"
        rm -f "$(pid_file "$name")"
        return 1
      fi
    done
    ((SECONDS < deadline)) || die "$what not ready after ${ready_timeout}s; logs in $run_dir/logs"
    sleep 0.5
  done
}

etcd_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$etcd_port/health" > /dev/null 2>&1; }

up() {
  build
  mkdir -p "$run_dir/pids" "$run_dir/logs" "$run_dir/etcd"
  generate_credentials
  write_kubeconfig
  # Tests run `kubectl` from beside the kubeconfig; no kubectl on PATH is assumed.
  ln -sfn "$bin_dir/kubectl" "$run_dir/kubectl"
  if running_pid kube-apiserver > /dev/null && ready; then
    echo "KUBECONFIG=$kubeconfig"
    return
  fi
  local name port
  for name in etcd kube-apiserver kube-controller-manager; do
    if ! running_pid "$name" > /dev/null; then
      case $name in
        etcd) for port in "$etcd_port" "$etcd_peer_port"; do port_in_use "$port" && die "port $port is taken by another process; set UHLP_K8S_ETCD_PORT / UHLP_K8S_ETCD_PEER_PORT"; done ;;
        kube-apiserver) port_in_use "$apiserver_port" && die "port $apiserver_port is taken by another process; set UHLP_K8S_APISERVER_PORT" ;;
        kube-controller-manager) port_in_use "$kcm_port" && die "port $kcm_port is taken by another process; set UHLP_K8S_KCM_PORT" ;;
      esac
    fi
  done
  # A process left by an earlier run can be ending while this starts (a stopping
  # session takes its processes with it): whatever exits while coming up is started
  # again, a few times, before giving up.
  local attempt
  for attempt in 1 2 3; do
    if start_control_plane; then
      log "control plane $version up; logs in $run_dir/logs"
      echo "KUBECONFIG=$kubeconfig"
      return
    fi
    log "control plane not up (attempt $attempt); starting what exited again"
    sleep 2
  done
  die "control plane did not come up; logs in $run_dir/logs"
}

start_control_plane() {
  local pki="$run_dir/pki"
  # --unsafe-no-fsync: the data is throw-away test state, and fsync dominates write latency.
  start etcd --name uhlp-test --data-dir "$run_dir/etcd" --log-level warn --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "uhlp-test=http://127.0.0.1:$etcd_peer_port" --listen-metrics-urls ""
  wait_for etcd etcd_healthy || return 1
  # The API server reaches kubelets (logs, exec, port-forward) at their InternalIP first, as
  # kubeadm's does: a node's name need not resolve on the control plane's machine.
  start kube-apiserver --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$apiserver_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --cert-dir "$run_dir/apiserver-certs" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
    --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
    --endpoint-reconciler-type none --profiling=false \
    --kubelet-preferred-address-types InternalIP,Hostname
  wait_for kube-apiserver ready || return 1
  start kube-controller-manager --kubeconfig "$kubeconfig" \
    --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$kcm_port" --cert-dir "$run_dir/kcm-certs" \
    --leader-elect=false --use-service-account-credentials=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --profiling=false
}

down() {
  local name pid deadline
  for name in kube-controller-manager kube-apiserver etcd; do
    if pid=$(running_pid "$name"); then
      kill -TERM "$pid"
      deadline=$((SECONDS + 20))
      while kill -0 "$pid" 2> /dev/null && ((SECONDS < deadline)); do sleep 0.2; done
      kill -0 "$pid" 2> /dev/null && kill -KILL "$pid"
      log "stopped $name ($pid)"
    fi
    rm -f "$(pid_file "$name")"
  done
}

case ${1:-} in
  up) up ;;
  down) down ;;
  env)
    [[ -s "$kubeconfig" ]] && running_pid kube-apiserver > /dev/null && ready || die "not running; run scripts/k8s-env.sh up"
    echo "KUBECONFIG=$kubeconfig"
    ;;
  *) die "usage: $0 up|down|env" ;;
esac
