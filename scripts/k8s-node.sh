#!/usr/bin/env bash
# A real single-node Kubernetes cluster for integration tests: the control plane of
# scripts/k8s-env.sh plus one node on this machine. kubelet, kube-scheduler and
# kube-proxy are built once from the same Go module set (scripts/k8s-env/go.mod),
# cluster DNS is CoreDNS built from scripts/k8s-dns/go.mod, and containerd (with its
# CRI plugin), runc and the CNI plugins (bridge + host-local) are Debian's.
#
#   scripts/k8s-node.sh up       control plane + node, wait until the node is Ready; last line: KUBECONFIG=<path>
#   scripts/k8s-node.sh down     stop only the processes `up` started (pid files), remove the node's bridge and rules
#   scripts/k8s-node.sh env      print KUBECONFIG=<path> when the node is Ready
#   scripts/k8s-node.sh build    only build the binaries (cached per Kubernetes version)
#   scripts/k8s-node.sh import IMAGE...   copy local Docker images into the node's containerd (`docker save | ctr import`)
#   scripts/k8s-node.sh ctr ARGS...       ctr against the node's containerd, namespace k8s.io
#   scripts/k8s-node.sh api-outage start|stop   stop the pods' relay to the API server (its open
#                                         connections close, new ones are refused), or start it again: the
#                                         API server stopped, as the cluster's workloads see it, while the
#                                         server itself, shared with everything else here, runs on
#
# `up` is idempotent: run again, it starts only what is not running (a dead relay, say)
# and prints the line. The node's name resolves to its address through /etc/hosts (a
# marked line `up` adds and `down` removes), so the API server reaches the kubelet by
# name for `kubectl logs`, `exec` and `port-forward`.
#
# The node's containerd is its own daemon (own root, state directory and socket);
# Docker's containerd is never touched. Pods live on a bridge this script creates
# (uhlpk8s0, 10.244.0.0/24); the host reaches pod IPs and Service ClusterIPs
# (kube-proxy, iptables mode) directly. Pods reach the API server through a relay
# on the bridge address (the API server itself listens on 127.0.0.1 only), and
# resolve Service names through CoreDNS on the bridge address. Images are never
# pulled: pods use `imagePullPolicy: Never` and images imported with `import`.
#
# Settings this machine needs (cgroup v1, no systemd, swap possibly on): cgroupfs as
# the cgroup driver for kubelet and runc, failSwapOn false, the pause image built
# here (uhlp.dev/pause) since registry.k8s.io cannot be reached.
#
# Environment (all optional; the control plane's are in scripts/k8s-env.sh):
#   UHLP_K8S_NODE_SUBNET     pod subnet, a /24                   (10.244.0.0/24)
#   UHLP_K8S_KUBELET_PORT / UHLP_K8S_KUBELET_HEALTHZ_PORT / UHLP_K8S_SCHEDULER_PORT /
#   UHLP_K8S_PROXY_HEALTHZ_PORT / UHLP_K8S_PROXY_METRICS_PORT / UHLP_K8S_DNS_HEALTH_PORT
#                            loopback ports (20250 / 20248 / 20259 / 20256 / 20249 / 20280)
#   UHLP_K8S_NODE_TIMEOUT    seconds to wait for the node to be Ready (120)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module_dir="$script_dir/k8s-env"
dns_module_dir="$script_dir/k8s-dns"
version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$module_dir/go.mod")
dns_version=$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" { print $3; exit }' "$dns_module_dir/go.mod")
cache_dir=${UHLP_K8S_CACHE_DIR:-$HOME/.cache/uhlp/k8s}
control_bin_dir="$cache_dir/$version/bin"
node_bin_dir="$cache_dir/$version/node-bin"
dns_bin_dir="$cache_dir/coredns-$dns_version/bin"
run_dir=${UHLP_K8S_RUN_DIR:-$cache_dir/run}
node_dir="$run_dir/node"
# Sockets and runtime state live on tmpfs with short paths (sockets are limited to 108 bytes).
sock_dir=/run/uhlp-k8s
containerd_sock="$sock_dir/containerd.sock"
kubeconfig="$run_dir/kubeconfig"
node_name=uhlp-node
bridge=uhlpk8s0
subnet=${UHLP_K8S_NODE_SUBNET:-10.244.0.0/24}
prefix=${subnet%.*/*}
gateway="$prefix.1"
service_ip=10.96.0.1 # the first address of the API server's --service-cluster-ip-range
relay_port=6443
kubelet_port=${UHLP_K8S_KUBELET_PORT:-20250}
kubelet_healthz_port=${UHLP_K8S_KUBELET_HEALTHZ_PORT:-20248}
scheduler_port=${UHLP_K8S_SCHEDULER_PORT:-20259}
proxy_healthz_port=${UHLP_K8S_PROXY_HEALTHZ_PORT:-20256}
proxy_metrics_port=${UHLP_K8S_PROXY_METRICS_PORT:-20249}
dns_health_port=${UHLP_K8S_DNS_HEALTH_PORT:-20280}
node_timeout=${UHLP_K8S_NODE_TIMEOUT:-120}
pause_image=uhlp.dev/pause:1
node_binaries=(kubelet kube-scheduler kube-proxy)
components=(containerd kube-scheduler kubelet kube-proxy api-relay coredns)

log() { echo "k8s-node: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib/go-build-once.sh
. "$script_dir/lib/go-build-once.sh"

# `grep -q` in a pipeline exits at the first match; with pipefail the writer's SIGPIPE
# then fails the whole test. Every "does this output contain" check reads the output
# whole first, so a present address, image or certificate name is never taken as absent.
output_has() {
  local output=$1 needle=$2
  [[ "$output" == *"$needle"* ]]
}

# --- build --------------------------------------------------------------------

# The kubelet reports its version to the API server (kubectl get nodes); without
# these the module build says v0.0.0-master.
version_ldflags() {
  local minor=${version#v1.}
  minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  echo "-X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}

build() {
  go_build_once "${node_binaries[*]} pause $version" "$module_dir" "$node_bin_dir" "$cache_dir/$version/node-build" \
    "${node_binaries[*]} pause" "$(version_ldflags)" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy ./pause
  go_build_once "CoreDNS $dns_version" "$dns_module_dir" "$dns_bin_dir" "$cache_dir/coredns-$dns_version/build" k8s-dns "" .
}

# --- processes ----------------------------------------------------------------

pid_file() { echo "$run_dir/pids/node-$1.pid"; }

binary_of() {
  case $1 in
    containerd) command -v containerd ;;
    api-relay) command -v socat ;;
    coredns) echo "$dns_bin_dir/k8s-dns" ;;
    *) echo "$node_bin_dir/$1" ;;
  esac
}

# A pid counts as ours only while it still runs the binary we started (see k8s-env.sh).
running_pid() {
  local file pid
  file=$(pid_file "$1")
  [[ -s "$file" ]] || return 1
  pid=$(cat "$file")
  [[ "$(readlink "/proc/$pid/exe" 2> /dev/null)" == "$(readlink -f "$(binary_of "$1")")" ]] || return 1
  echo "$pid"
}

start() {
  local name=$1 pid deadline
  shift
  if running_pid "$name" > /dev/null; then return; fi
  setsid "$(binary_of "$name")" "$@" >> "$run_dir/logs/node-$name.log" 2>&1 < /dev/null 8>&- 9>&- &
  pid=$!
  echo "$pid" > "$(pid_file "$name")"
  # $! is this shell's fork, which becomes setsid and then the binary: until that exec it
  # runs another program, and running_pid (hence wait_for) would take a component that is
  # still starting for one that exited. Wait for the exec, or for its end.
  deadline=$((SECONDS + 10))
  until running_pid "$name" > /dev/null; do
    if [[ ! -e /proc/$pid ]] || [[ "$(cut -d' ' -f3 "/proc/$pid/stat" 2> /dev/null)" == Z ]] || ((SECONDS >= deadline)); then
      tail -20 "$run_dir/logs/node-$name.log" >&2
      die "$name did not start; see $run_dir/logs/node-$name.log"
    fi
    sleep 0.05
  done
}

wait_for() {
  local what=$1 deadline=$((SECONDS + node_timeout)) name
  shift
  until "$@"; do
    for name in "${components[@]}"; do
      if [[ -s "$(pid_file "$name")" ]] && ! running_pid "$name" > /dev/null; then
        tail -20 "$run_dir/logs/node-$name.log" >&2
        die "$name exited; see $run_dir/logs/node-$name.log"
      fi
    done
    ((SECONDS < deadline)) || die "$what not ready after ${node_timeout}s; logs in $run_dir/logs/node-*.log"
    sleep 0.5
  done
}

kubectl_() { "$control_bin_dir/kubectl" --kubeconfig "$kubeconfig" "$@"; }
ctr_() { ctr --address "$containerd_sock" --namespace k8s.io "$@"; }

all_running() {
  local name
  for name in "${components[@]}"; do running_pid "$name" > /dev/null || return 1; done
}

containerd_answers() { ctr --address "$containerd_sock" version > /dev/null 2>&1; }
node_ready() {
  [[ "$(kubectl_ get node "$node_name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2> /dev/null)" == True ]]
}
proxy_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$proxy_healthz_port/healthz" > /dev/null 2>&1; }
dns_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$dns_health_port/health" > /dev/null 2>&1; }
relay_answers() { (exec 3<> "/dev/tcp/$gateway/$relay_port") 2> /dev/null; }

# --- node name ----------------------------------------------------------------

hosts_marker="# uhlp k8s-node"

# The API server reaches the kubelet by the node's name (its first address type): make
# the name resolve on this machine, as a real node's host name does.
ensure_node_name() {
  local hosts
  hosts=$(cat /etc/hosts)
  output_has "$hosts" "$gateway $node_name $hosts_marker" && return
  remove_node_name
  echo "$gateway $node_name $hosts_marker" >> /etc/hosts
}

# /etc/hosts is often a bind mount: rewritten in place, never replaced.
remove_node_name() {
  local kept
  kept=$(grep -vF "$hosts_marker" /etc/hosts || true)
  printf '%s\n' "$kept" > /etc/hosts
}

# --- API server relay and its outage --------------------------------------------

start_relay() {
  start api-relay "TCP-LISTEN:$relay_port,bind=$gateway,reuseaddr,fork" "TCP:127.0.0.1:${UHLP_K8S_APISERVER_PORT:-26443}"
  wait_for "API server relay" relay_answers
}

# Pods reach the API server only through the relay on the bridge address (the
# `kubernetes` Service's endpoint). Stopping it is, for every workload, the API server
# stopped: socat forks one child per connection, in its process group, so all of them go
# and every open connection closes, and new ones are refused. The kubelet, kube-proxy
# and CoreDNS (on loopback) and every other user of the shared API server go on.
api_outage() {
  local pid deadline
  case ${1:-} in
    start)
      if pid=$(running_pid api-relay); then
        kill -TERM -- "-$pid" 2> /dev/null || kill -TERM "$pid"
        deadline=$((SECONDS + 10))
        while kill -0 "$pid" 2> /dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        kill -0 "$pid" 2> /dev/null && kill -KILL -- "-$pid"
      fi
      rm -f "$(pid_file api-relay)"
      ;;
    stop) start_relay ;;
    *) die "usage: $0 api-outage start|stop" ;;
  esac
}

# --- configuration ------------------------------------------------------------

write_configs() {
  mkdir -p "$node_dir/cni" "$node_dir/cni-ipam" "$node_dir/containerd" "$node_dir/kubelet" "$sock_dir"
  cat > "$node_dir/containerd/config.toml" << EOF
version = 2
root = "$node_dir/containerd/root"
state = "$sock_dir/containerd-state"
[grpc]
  address = "$containerd_sock"
[ttrpc]
  address = "$sock_dir/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$node_dir/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # This machine refuses to lower oom_score_adj below the daemon's own (runc's init
  # fails "can't get final child's PID from pipe" on the pause container's -998).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$sock_dir/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$node_dir/cni"
    max_conf_num = 1
EOF
  # bridge + host-local give each pod an address on the node's bridge; portmap serves
  # hostPort; firewall opens the FORWARD chain for pod addresses (Docker sets its policy to DROP).
  cat > "$node_dir/cni/10-uhlp.conflist" << EOF
{
  "cniVersion": "1.0.0",
  "name": "uhlp-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$subnet", "gateway": "$gateway" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$node_dir/cni-ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } },
    { "type": "firewall" }
  ]
}
EOF
  # Pods resolve through CoreDNS; CoreDNS forwards what is not the cluster's to the host's resolvers.
  grep -E '^nameserver' /etc/resolv.conf | grep -vE ' 127\.| ::1' > "$node_dir/upstream-resolv.conf" || true
  [[ -s "$node_dir/upstream-resolv.conf" ]] || echo "nameserver 192.0.2.1" > "$node_dir/upstream-resolv.conf"
  cat > "$node_dir/kubelet/config.yaml" << EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $gateway
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $kubelet_healthz_port
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$containerd_sock
clusterDNS: [$gateway]
clusterDomain: cluster.local
resolvConf: $node_dir/upstream-resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
maxPods: 110
rotateCertificates: false
serverTLSBootstrap: false
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
EOF
  cat > "$node_dir/kube-proxy.yaml" << EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $kubeconfig
mode: iptables
clusterCIDR: $subnet
hostnameOverride: $node_name
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:$proxy_healthz_port
metricsBindAddress: 127.0.0.1:$proxy_metrics_port
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
  cat > "$node_dir/Corefile" << EOF
.:53 {
  bind $gateway
  errors
  health 127.0.0.1:$dns_health_port
  cache 5
  kubernetes cluster.local in-addr.arpa {
    kubeconfig $kubeconfig
    pods disabled
    ttl 5
  }
  forward . $node_dir/upstream-resolv.conf
}
EOF
}

# The bridge exists before any pod so the relay and CoreDNS can bind its address;
# the CNI bridge plugin adopts it.
setup_network() {
  if ! ip link show "$bridge" > /dev/null 2>&1; then
    ip link add "$bridge" type bridge
  fi
  output_has "$(ip -4 addr show dev "$bridge")" " $gateway/" || ip addr add "$gateway/${subnet#*/}" dev "$bridge"
  ip link set "$bridge" up
  # Pod traffic through the FORWARD chain, whose policy Docker sets to DROP.
  iptables -N UHLP-K8S-FORWARD 2> /dev/null || true
  iptables -C FORWARD -j UHLP-K8S-FORWARD 2> /dev/null || iptables -I FORWARD 1 -j UHLP-K8S-FORWARD
  iptables -C UHLP-K8S-FORWARD -i "$bridge" -j ACCEPT 2> /dev/null || iptables -A UHLP-K8S-FORWARD -i "$bridge" -j ACCEPT
  iptables -C UHLP-K8S-FORWARD -o "$bridge" -j ACCEPT 2> /dev/null || iptables -A UHLP-K8S-FORWARD -o "$bridge" -j ACCEPT
  # The kubelet listens on the bridge address (the API server reaches it at the node's
  # InternalIP for logs and exec) and lets anonymous callers in: pods must not reach it.
  iptables -N UHLP-K8S-INPUT 2> /dev/null || true
  iptables -C INPUT -j UHLP-K8S-INPUT 2> /dev/null || iptables -I INPUT 1 -j UHLP-K8S-INPUT
  iptables -C UHLP-K8S-INPUT -i "$bridge" -p tcp --dport "$kubelet_port" -j DROP 2> /dev/null ||
    iptables -A UHLP-K8S-INPUT -i "$bridge" -p tcp --dport "$kubelet_port" -j DROP
}

teardown_network() {
  iptables -D INPUT -j UHLP-K8S-INPUT 2> /dev/null || true
  iptables -F UHLP-K8S-INPUT 2> /dev/null || true
  iptables -X UHLP-K8S-INPUT 2> /dev/null || true
  iptables -D FORWARD -j UHLP-K8S-FORWARD 2> /dev/null || true
  iptables -F UHLP-K8S-FORWARD 2> /dev/null || true
  iptables -X UHLP-K8S-FORWARD 2> /dev/null || true
  ip link del "$bridge" 2> /dev/null || true
}

# The API server's certificate must name the `kubernetes` Service address, which is
# what in-cluster clients (the operator, the core) connect to.
check_apiserver_cert() {
  output_has "$(openssl x509 -in "$run_dir/pki/apiserver.crt" -noout -text)" "IP Address:$service_ip" ||
    die "the API server certificate lacks IP:$service_ip; run scripts/k8s-env.sh up (it re-issues it)"
}

# The `kubernetes` Service points at the relay: the API server runs with
# --endpoint-reconciler-type none, so nothing else writes these endpoints.
publish_apiserver_endpoints() {
  kubectl_ apply -f - > /dev/null 2>&1 << EOF
apiVersion: v1
kind: Endpoints
metadata:
  name: kubernetes
  namespace: default
subsets:
  - addresses: [{ ip: $gateway }]
    ports: [{ name: https, port: $relay_port, protocol: TCP }]
EOF
}

import_pause() {
  local images
  images=$(ctr_ images ls -q 2> /dev/null || true)
  [[ $'\n'"$images"$'\n' == *$'\n'"$pause_image"$'\n'* ]] && return
  command -v docker > /dev/null || die "docker is needed once to package the pause image"
  local context
  context=$(mktemp -d)
  cp "$node_bin_dir/pause" "$context/pause"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$context/Dockerfile"
  docker build -q -t "$pause_image" "$context" > "$run_dir/logs/node-pause-build.log" 2>&1 ||
    { cat "$run_dir/logs/node-pause-build.log" >&2; die "building the pause image failed"; }
  rm -rf "$context"
  import_images "$pause_image"
}

import_images() {
  (($# > 0)) || die "usage: $0 import IMAGE..."
  docker save "$@" | ctr_ images import --no-unpack=false - > /dev/null
  log "imported $*"
}

up() {
  [[ "$(id -u)" -eq 0 ]] || die "must run as root (containerd, kubelet and the bridge need it)"
  for tool in containerd runc ctr socat iptables ip; do
    command -v "$tool" > /dev/null || die "$tool is missing; scripts/test-env.sh installs it"
  done
  [[ -x /usr/lib/cni/bridge ]] || die "the CNI plugins are missing; scripts/test-env.sh installs containernetworking-plugins"
  "$script_dir/k8s-env.sh" up > /dev/null
  build
  mkdir -p "$run_dir/pids" "$run_dir/logs"
  check_apiserver_cert
  ensure_node_name
  if all_running && node_ready; then
    # Running, but the kubelet may have reclaimed disk since by deleting images, the pause image
    # with them (its eviction manager does, whatever the image GC thresholds say): no pod starts without it.
    import_pause
    echo "KUBECONFIG=$kubeconfig"
    return
  fi
  local started=$SECONDS name
  # A pid file left by a component that has since ended (a restarted machine, a killed
  # run) is dropped, so waiting for the others does not take it for a fresh failure.
  for name in "${components[@]}"; do running_pid "$name" > /dev/null || rm -f "$(pid_file "$name")"; done
  write_configs
  setup_network
  start containerd --config "$node_dir/containerd/config.toml" --log-level warn
  wait_for containerd containerd_answers
  import_pause
  # An outage an interrupted test left ends here too: the relay is started again.
  start_relay
  publish_apiserver_endpoints
  start coredns -conf "$node_dir/Corefile"
  start kube-scheduler --kubeconfig "$kubeconfig" --authentication-kubeconfig "$kubeconfig" \
    --authorization-kubeconfig "$kubeconfig" --leader-elect=false --bind-address 127.0.0.1 \
    --secure-port "$scheduler_port" --profiling=false
  start kubelet --config "$node_dir/kubelet/config.yaml" --kubeconfig "$kubeconfig" \
    --root-dir "$node_dir/kubelet/root" --cert-dir "$node_dir/kubelet/pki" \
    --hostname-override "$node_name" --node-ip "$gateway"
  start kube-proxy --config "$node_dir/kube-proxy.yaml"
  wait_for "node $node_name" node_ready
  wait_for kube-proxy proxy_ready
  wait_for CoreDNS dns_ready
  log "node $node_name up in $((SECONDS - started))s; logs in $run_dir/logs/node-*.log"
  echo "KUBECONFIG=$kubeconfig"
}

down() {
  local name pid deadline
  for name in kube-proxy kubelet kube-scheduler coredns api-relay; do
    if pid=$(running_pid "$name"); then
      kill -TERM "$pid"
      deadline=$((SECONDS + 20))
      while kill -0 "$pid" 2> /dev/null && ((SECONDS < deadline)); do sleep 0.2; done
      kill -0 "$pid" 2> /dev/null && kill -KILL "$pid"
      log "stopped $name ($pid)"
    fi
    rm -f "$(pid_file "$name")"
  done
  if running_pid containerd > /dev/null; then
    remove_containers
    pid=$(running_pid containerd)
    kill -TERM "$pid"
    deadline=$((SECONDS + 20))
    while kill -0 "$pid" 2> /dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -0 "$pid" 2> /dev/null && kill -KILL "$pid"
    log "stopped containerd ($pid)"
  fi
  rm -f "$(pid_file containerd)"
  teardown_network
  remove_node_name
}

# Every task of the node's containerd is killed and every container deleted: the
# shims would otherwise outlive the daemon.
remove_containers() {
  local id
  for id in $(ctr_ tasks ls -q 2> /dev/null); do
    ctr_ tasks kill -s KILL "$id" > /dev/null 2>&1 || true
  done
  for id in $(ctr_ tasks ls -q 2> /dev/null); do
    ctr_ tasks delete -f "$id" > /dev/null 2>&1 || true
  done
  for id in $(ctr_ containers ls -q 2> /dev/null); do
    ctr_ containers delete "$id" > /dev/null 2>&1 || true
  done
}

case ${1:-} in
  up) up ;;
  down) down ;;
  build) build ;;
  env)
    node_ready && running_pid kubelet > /dev/null || die "not running; run scripts/k8s-node.sh up"
    echo "KUBECONFIG=$kubeconfig"
    ;;
  import)
    shift
    containerd_answers || die "the node's containerd is not running; run scripts/k8s-node.sh up"
    import_images "$@"
    ;;
  ctr)
    shift
    ctr_ "$@"
    ;;
  api-outage)
    shift
    [[ "$(id -u)" -eq 0 ]] || die "must run as root (the relay is root's)"
    mkdir -p "$run_dir/pids" "$run_dir/logs"
    api_outage "$@"
    ;;
  *) die "usage: $0 up|down|env|build|import IMAGE...|ctr ARGS...|api-outage start|stop" ;;
esac
