#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, for the real-cluster tests and for a person trying
# gpunode's cluster commands (docs/TESTING.md): etcd, kube-apiserver (TLS with certificates made
# for this run, Node and RBAC authorization, service-account tokens), kube-scheduler and
# kube-controller-manager with their own credentials, all from scripts/build-k8s.sh.
#
#   scripts/local-cluster.sh up DIR           start; DIR/admin.kubeconfig is cluster-admin
#   scripts/local-cluster.sh node DIR [NAME]  add a node: containerd and a kubelet (below)
#   scripts/local-cluster.sh restart-kubelet DIR
#   scripts/local-cluster.sh token DIR NS SA  print a kubeconfig for ServiceAccount NS/SA
#   scripts/local-cluster.sh shared-mount DIR PATH
#                                             make PATH a shared mount in the node (below)
#   scripts/local-cluster.sh down DIR         stop everything started in DIR
#
# The node is the real kubelet with Debian's containerd and runc, in a mount namespace of its own
# where DIR/node/kubelet is /var/lib/kubelet (the kubelet's device plugin directory cannot be
# moved), so the device plugin registers at DIR/node/kubelet/device-plugins/kubelet.sock. Pods
# get their network from the ptp and host-local CNI plugins (10.249.0.0/24) and their sandbox
# from a pause image built here (tests/k8s/pause): nothing is pulled. With a gpunode build
# (GPUNODE_BUILD_DIR, default build/) the node also has gpunode's image and an `nvidia` runtime
# handler for its simulated GPUs (simulated_gpu_runtime below). The kubelet runs as under an
# external cloud provider, whose part this plays: the Node's address is 127.0.0.1, so the apiserver
# reaches the kubelet (logs, exec). Without the privileges or programs the node needs, `node`
# exits 3 with one line naming what is missing.
#
# Nothing listens beyond 127.0.0.1. A component that exits during `up` or `node` fails it with
# the last lines of its log. DIR is created when missing and kept after `down` (its logs are
# there).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  echo "usage: scripts/local-cluster.sh up DIR | node DIR [NAME] | restart-kubelet DIR | down DIR |" \
    "token DIR NAMESPACE SERVICEACCOUNT | shared-mount DIR PATH" >&2
  exit 2
}
(($# >= 2)) || usage
verb=$1 dir=$2
# kubectl's discovery cache in the cluster's directory, which goes with it, not under $HOME, where
# each cluster (a port of its own) would leave one behind.
KUBECACHEDIR=$(realpath -m "$dir")/kube-cache
export KUBECACHEDIR

components=(etcd kube-apiserver kube-scheduler kube-controller-manager)

stop() {
  local name=$1 pid left
  [[ -f $dir/pids/$name ]] || return 0
  pid=$(<"$dir/pids/$name")
  kill -TERM "$pid" 2>/dev/null || true
  for ((left = 100; left > 0; left--)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/pids/$name"
}

# The chains the kubelet makes in the host's network namespace, per table: its canary, the hint
# kube-proxy reads to pick an iptables mode, and the firewall that drops connections to 127.0.0.0/8
# from other addresses (jumped to from INPUT and OUTPUT).
kubelet_chains=(mangle:KUBE-KUBELET-CANARY mangle:KUBE-IPTABLES-HINT nat:KUBE-KUBELET-CANARY
  filter:KUBE-KUBELET-CANARY filter:KUBE-FIREWALL)

# Notes which of those chains the host has before the kubelet starts: down removes only the rest.
record_host_chains() {
  local tool entry
  : >"$dir/node/host-chains"
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    for entry in "${kubelet_chains[@]}"; do
      if "$tool" -w -t "${entry%%:*}" -S "${entry#*:}" >/dev/null 2>&1; then
        echo "$tool $entry" >>"$dir/node/host-chains"
      fi
    done
  done
}

# Removes the chains the kubelet made (after it stopped, so that it cannot make them again): the
# rules that jump to each first, then its own rules, then the chain.
remove_kubelet_chains() {
  [[ -f $dir/node/host-chains ]] || return 0
  local tool entry table chain rule
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    for entry in "${kubelet_chains[@]}"; do
      grep -qxF "$tool $entry" "$dir/node/host-chains" && continue
      table=${entry%%:*} chain=${entry#*:}
      "$tool" -w -t "$table" -S "$chain" >/dev/null 2>&1 || continue
      # A chain nothing jumps to (the canary) gives grep no line, which is no error here.
      { "$tool" -w -t "$table" -S | grep -E -- "^-A .* -j $chain( |\$)" || true; } |
        sed 's/^-A /-D /' | while read -r rule; do eval "\"\$tool\" -w -t \"\$table\" $rule"; done
      "$tool" -w -t "$table" -F "$chain"
      "$tool" -w -t "$table" -X "$chain"
    done
  done
  rm -f "$dir/node/host-chains"
}

# The kubelet stops first and the chains it made go; then the pods' containers (a task killed and
# deleted takes its cgroup and its shim with it), then containerd, then the process that holds
# the node's mount namespace: its mounts (the bind of /var/lib/kubelet, the pods' volumes and
# network namespaces) end with it.
stop_node() {
  local socket=$dir/node/containerd/containerd.sock task
  stop kubelet
  remove_kubelet_chains
  if [[ -f $dir/pids/containerd ]] && kill -0 "$(<"$dir/pids/containerd")" 2>/dev/null; then
    for task in $(ctr -a "$socket" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$socket" -n k8s.io tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
      ctr -a "$socket" -n k8s.io tasks delete -f "$task" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $socket" 2>/dev/null || true
  stop node-namespace
}

stop_all() {
  local name
  stop_node
  for name in kube-controller-manager kube-scheduler kube-apiserver etcd; do stop "$name"; done
}

# A kubeconfig for `server` that authenticates with a client certificate or a token.
write_kubeconfig() {
  local file=$1 user=$2 auth=$3
  cat >"$file.new" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $(<"$dir/server")
    certificate-authority: $dir/pki/ca.crt
users:
- name: $user
  user:
$auth
contexts:
- name: local
  context: {cluster: local, user: $user}
current-context: local
EOF
  mv "$file.new" "$file"
}

# A loopback port nothing listens on, for a component to bind. Not one the kernel hands out
# (bind to port 0): that range is also where every outgoing connection takes its local port, so
# between the choice and the component's bind another cluster's clients could take it ("address
# already in use"). A random port below that range, which only listeners use, checked free.
free_port() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
if low <= 10001:
    raise SystemExit("local-cluster: /proc/sys/net/ipv4/ip_local_port_range starts at %d, leaving"
                     " no port between 10000 and it; raise its lower bound (sysctl"
                     " net.ipv4.ip_local_port_range)" % low)
for _ in range(200):
    port = random.randrange(10000, low)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
else:
    raise SystemExit("local-cluster: no free loopback port below %d" % low)
'
}

# A key and a certificate signed by the run's CA: NAME CN [O] [SANs].
issue() {
  local name=$1 cn=$2 org=${3:-} sans=${4:-}
  local subject="/CN=$cn"
  [[ -n $org ]] && subject="/O=$org$subject"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/pki/$name.key" -subj "$subject" \
    -out "$dir/pki/$name.csr" 2>/dev/null
  local ext=$dir/pki/$name.ext
  if [[ -n $sans ]]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$sans" >"$ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"$ext"
  fi
  openssl x509 -req -in "$dir/pki/$name.csr" -CA "$dir/pki/ca.crt" -CAkey "$dir/pki/ca.key" \
    -CAcreateserial -days 2 -extfile "$ext" -out "$dir/pki/$name.crt" 2>/dev/null
}

fail_with_log() {
  local name=$1 why=$2
  echo "local-cluster: $name $why; the end of $dir/logs/$name.log:" >&2
  tail -n 20 "$dir/logs/$name.log" >&2 || true
  stop_all
  exit 1
}

# Waits until `check` passes, failing at once when the component exited.
await() {
  local name=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(<"$dir/pids/$name")" 2>/dev/null || fail_with_log "$name" "exited"
    ((SECONDS < deadline)) || fail_with_log "$name" "was not ready within ${seconds}s"
    sleep 0.1
  done
}

# start NAME PROGRAM ARGS...: in the background, its own session, its log in DIR/logs/NAME.log.
start_program() {
  local name=$1
  shift
  setsid "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/pids/$name"
}

start() {
  local name=$1
  shift
  start_program "$name" "$bin/$name" "$@"
}

up() {
  bin=$(bash "$repo/scripts/build-k8s.sh")
  mkdir -p "$dir"/{pki,logs,pids,etcd}
  dir=$(cd "$dir" && pwd)
  for name in "${components[@]}"; do
    if [[ -f $dir/pids/$name ]] && kill -0 "$(<"$dir/pids/$name")" 2>/dev/null; then
      echo "local-cluster: $dir already runs $name; run down first" >&2
      exit 2
    fi
  done
  local started=$SECONDS
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/pki/ca.key" -out "$dir/pki/ca.crt" \
    -days 2 -subj "/CN=gpunode-local-ca" 2>/dev/null
  issue apiserver kube-apiserver "" \
    "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue admin kubernetes-admin system:masters
  issue scheduler system:kube-scheduler
  issue controller-manager system:kube-controller-manager
  issue apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  openssl genrsa -out "$dir/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/pki/sa.key" -pubout -out "$dir/pki/sa.pub" 2>/dev/null

  local etcd_port etcd_peer api_port scheduler_port cm_port
  etcd_port=$(free_port) etcd_peer=$(free_port) api_port=$(free_port)
  scheduler_port=$(free_port) cm_port=$(free_port)
  echo "https://127.0.0.1:$api_port" >"$dir/server"

  start etcd --name local --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "local=http://127.0.0.1:$etcd_peer" \
    --listen-metrics-urls "" --log-level warn
  await etcd 30 curl -fsS "http://127.0.0.1:$etcd_port/health"

  # The admission plugins a managed cluster enables by default, NodeRestriction among them. The
  # endpoint reconciler is off: the kubernetes Service cannot have a loopback endpoint.
  start kube-apiserver --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
    --secure-port "$api_port" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --cert-dir "$dir/pki" --tls-cert-file "$dir/pki/apiserver.crt" \
    --tls-private-key-file "$dir/pki/apiserver.key" --client-ca-file "$dir/pki/ca.crt" \
    --kubelet-client-certificate "$dir/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$dir/pki/apiserver-kubelet-client.key" \
    --service-account-key-file "$dir/pki/sa.pub" \
    --service-account-signing-key-file "$dir/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --authorization-mode Node,RBAC --service-cluster-ip-range 10.0.0.0/24 \
    --enable-admission-plugins NodeRestriction \
    --endpoint-reconciler-type none --allow-privileged=true --profiling=false
  await kube-apiserver 60 curl -fsS --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" \
    --key "$dir/pki/admin.key" "https://127.0.0.1:$api_port/readyz"

  write_kubeconfig "$dir/admin.kubeconfig" admin \
    "    client-certificate: $dir/pki/admin.crt
    client-key: $dir/pki/admin.key"
  write_kubeconfig "$dir/scheduler.kubeconfig" scheduler \
    "    client-certificate: $dir/pki/scheduler.crt
    client-key: $dir/pki/scheduler.key"
  write_kubeconfig "$dir/controller-manager.kubeconfig" controller-manager \
    "    client-certificate: $dir/pki/controller-manager.crt
    client-key: $dir/pki/controller-manager.key"

  start kube-scheduler --kubeconfig "$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" \
    --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$scheduler_port" --leader-elect=false \
    --cert-dir "$dir/pki/scheduler-serving"
  # Every controller with its own ServiceAccount's credentials, as a cluster runs them; the token
  # controller signs with the apiserver's service-account key.
  start kube-controller-manager --kubeconfig "$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$cm_port" --leader-elect=false \
    --cert-dir "$dir/pki/controller-manager-serving" \
    --use-service-account-credentials --service-account-private-key-file "$dir/pki/sa.key" \
    --root-ca-file "$dir/pki/ca.crt" --cluster-signing-cert-file "$dir/pki/ca.crt" \
    --cluster-signing-key-file "$dir/pki/ca.key" --controllers '*'
  await kube-scheduler 30 curl -fsSk "https://127.0.0.1:$scheduler_port/healthz"
  await kube-controller-manager 30 curl -fsSk "https://127.0.0.1:$cm_port/healthz"
  # Namespaced objects need their ServiceAccount before a pod can be made there: the controller
  # that makes "default" is the sign that the controllers run.
  await kube-controller-manager 30 "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" \
    get serviceaccount default -n default
  echo "$bin" >"$dir/bin"
  echo "local-cluster: ready in $((SECONDS - started))s at $(<"$dir/server"); KUBECONFIG=$dir/admin.kubeconfig" >&2
}

# Why this machine cannot run the node, or nothing.
node_missing() {
  local program
  ((EUID == 0)) || { echo "the kubelet and containerd need root"; return; }
  for program in containerd containerd-shim-runc-v2 runc ctr nsenter unshare gcc python3; do
    command -v "$program" >/dev/null ||
      { echo "$program is not installed (scripts/install-deps.sh installs it)"; return; }
  done
  for program in ptp host-local loopback; do
    [[ -x /usr/lib/cni/$program ]] ||
      { echo "the CNI plugin /usr/lib/cni/$program is missing: install containernetworking-plugins"; return; }
  done
  unshare --mount --propagation private true 2>/dev/null ||
    { echo "no mount namespace can be made here (unshare --mount needs CAP_SYS_ADMIN)"; return; }
}

start_kubelet() {
  # Inside the node's namespace /var/lib/kubelet is DIR/node/kubelet.
  start_program kubelet nsenter --mount="/proc/$(<"$dir/pids/node-namespace")/ns/mnt" -- \
    "$bin/kubelet" --config "$dir/node/kubelet-config.yaml" \
    --kubeconfig "$dir/node/kubelet.kubeconfig" --root-dir /var/lib/kubelet \
    --hostname-override "$(<"$dir/node/name")" --cert-dir /var/lib/kubelet/pki \
    --cloud-provider external
}

node_registered() {
  "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" get node "$(<"$dir/node/name")" >/dev/null 2>&1
}

# The kubelet will not report a loopback address as its node's (it refuses --node-ip 127.0.0.1),
# and the apiserver reaches a kubelet (logs, exec) at the Node's address. So the kubelet runs as
# under an external cloud provider, which leaves the Node's addresses to that provider, and this
# plays the provider's part, as a cloud controller manager does: the address 127.0.0.1, where the
# kubelet listens, and the uninitialized taint lifted.
initialize_node() {
  local name kubectl=("$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig")
  name=$(<"$dir/node/name")
  "${kubectl[@]}" patch node "$name" --subresource status --type merge \
    -p '{"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}}' >/dev/null
  "${kubectl[@]}" taint node "$name" node.cloudprovider.kubernetes.io/uninitialized- >/dev/null
}

node_ready() {
  [[ $("$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" get node "$(<"$dir/node/name")" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

# A node's simulated GPUs as the NVIDIA runtime would show them to containers, and gpunode's image,
# made when a build of gpunode is at hand (GPUNODE_BUILD_DIR, default build/; the GPUs are the
# simulator's default, dgx-h100):
# - DIR/node/driver/dev: the GPUs' device nodes (char 195:N), /dev/nvidiactl and /dev/nvidia-uvm,
#   made with mknod (nothing opens them): a device plugin started with `--dev-root
#   DIR/node/driver --pass-device-specs` hands a pod's GPUs to its containers through them;
# - the runtime handler `nvidia` (RuntimeClass nvidia), standing in for NVIDIA's runtime: its
#   containers get the simulator mounted as the driver's libnvidia-ml.so (and an empty libcuda.so:
#   the simulator has no CUDA), and GPUNODE_SIM_DEVICE_NODES=/dev, so NVML there shows only the
#   GPUs whose nodes the container was given, as in a container on a real node;
# - deploy/'s image, ghcr.io/gpunode/gpunode:0.1.0, from this build: the files deploy/Dockerfile
#   copies (the binary stripped, the simulator, the HTTP module) with the shared libraries they
#   load taken from this machine, and the pause program to keep a pod running.
simulated_gpu_runtime() {
  local build=${GPUNODE_BUILD_DIR:-$repo/build} drv=$dir/node/driver ctd=$dir/node/containerd
  if [[ ! -x $build/gpunode || ! -f $build/libgpunode-sim.so ]]; then
    echo "local-cluster: no gpunode build in $build: no nvidia runtime handler and no gpunode image" >&2
    return 0
  fi
  local version lib=/usr/lib/x86_64-linux-gnu minor
  version=$("$build/gpunode" --sim dgx-h100 inventory -o json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["driver_version"])')
  rm -rf "$drv" && mkdir -p "$drv/dev" "$drv/lib"
  for ((minor = 0; minor < 16; minor++)); do mknod -m 0666 "$drv/dev/nvidia$minor" c 195 "$minor"; done
  mknod -m 0666 "$drv/dev/nvidiactl" c 195 255
  mknod -m 0666 "$drv/dev/nvidia-uvm" c 510 0
  install -m 0644 "$build/libgpunode-sim.so" "$drv/lib/libnvidia-ml.so.$version"
  install -m 0644 /dev/null "$drv/lib/libcuda.so.$version"
  mkdir -p "$drv/proc/driver/nvidia"
  echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  $version  (simulated by gpunode)" \
    >"$drv/proc/driver/nvidia/version"
  ctr oci spec | python3 "$repo/tests/k8s/pause/nvidia_base_spec.py" "$drv" "$lib" "$version" \
    "$repo/tests/k8s/pause/mount-proc-driver.sh" >"$ctd/nvidia-base-spec.json"

  local root=$dir/node/gpunode-image
  rm -rf "$root" && mkdir -p "$root/usr/local/bin"
  strip -o "$root/usr/local/bin/gpunode" "$build/gpunode"
  local file modules=("$build/libgpunode-sim.so")
  [[ -f $build/libgpunode-http.so ]] && modules+=("$build/libgpunode-http.so")
  cp "${modules[@]}" "$root/usr/local/bin/"
  ln -s gpunode "$root/usr/local/bin/kubectl-gpunode"
  cp "$dir/node/pause/pause" "$root/pause"
  # With the rest of Debian's libc6 that NVIDIA's nvidia-cuda-mps-control links (libpthread,
  # librt, libdl), which deploy/Dockerfile's debian:bookworm-slim base has: a claim's MPS daemon
  # runs it from the driver root in this image.
  for file in $(ldd "$build/gpunode" "${modules[@]}" | grep -oE '/[^ :]+ \(0x' | cut -d' ' -f1 |
    sort -u) "$lib/libpthread.so.0" "$lib/librt.so.1" "$lib/libdl.so.2"; do
    [[ -f $file ]] || continue
    mkdir -p "$root$(dirname "$file")"
    cp -L "$file" "$root$file"
  done
  python3 "$repo/tests/k8s/pause/oci_image.py" --root "$root" "$dir/node/gpunode.tar" \
    ghcr.io/gpunode/gpunode:0.1.0 /usr/local/bin/gpunode
}

add_node() {
  local name=${3:-gpu-node-0} why
  why=$(node_missing)
  if [[ -n $why ]]; then
    echo "local-cluster: no node: $why" >&2
    exit 3
  fi
  [[ -f $dir/bin ]] || { echo "local-cluster: $dir has no cluster: run up first" >&2; exit 2; }
  bin=$(<"$dir/bin")
  [[ -f $dir/pids/kubelet ]] && kill -0 "$(<"$dir/pids/kubelet")" 2>/dev/null &&
    { echo "local-cluster: $dir already runs a node" >&2; exit 2; }
  local started=$SECONDS node=$dir/node ctd=$dir/node/containerd
  mkdir -p "$node/kubelet" "$ctd/cni" "$node/pause" /var/lib/kubelet
  echo "$name" >"$node/name"

  # The sandbox image: the pause program, static, in a one-layer OCI archive, with a workload
  # that runs to the end (visible-gpus) beside it.
  gcc -static -Os -s -o "$node/pause/pause" "$repo/tests/k8s/pause/pause.c"
  gcc -static -Os -s -o "$node/pause/visible-gpus" "$repo/tests/k8s/pause/visible-gpus.c"
  python3 "$repo/tests/k8s/pause/oci_image.py" "$node/pause.tar" gpunode.local/pause:1 \
    "$node/pause/pause" "$node/pause/visible-gpus"
  mkdir -p "$ctd"
  simulated_gpu_runtime

  # A mount namespace that outlives no test: its holder is stopped by down.
  start_program node-namespace unshare --mount --propagation private -- \
    sh -c 'mount --bind "$0" /var/lib/kubelet && touch "$0/../namespace-ready" && exec sleep infinity' \
    "$node/kubelet"
  await node-namespace 10 test -f "$node/namespace-ready"
  local enter="--mount=/proc/$(<"$dir/pids/node-namespace")/ns/mnt"

  # restrict_oom_score_adj: the sandbox asks for -998, which an unprivileged container host (and
  # this one) may refuse; containerd then keeps its own score. Network namespaces live under the
  # state directory, in the node's mount namespace.
  cat >"$ctd/config.toml" <<TOML
version = 2
root = "$ctd/root"
state = "$ctd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$ctd/containerd.sock"
[ttrpc]
  address = "$ctd/containerd.sock.ttrpc"
[debug]
  address = "$ctd/debug.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$ctd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "gpunode.local/pause:1"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "$ctd/cni"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
TOML
  [[ -f $ctd/nvidia-base-spec.json ]] && cat >>"$ctd/config.toml" <<TOML
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  base_runtime_spec = "$ctd/nvidia-base-spec.json"
TOML
  cat >"$ctd/cni/10-gpunode-test.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "gpunode-test", "plugins": [
  {"type": "ptp", "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$ctd/ipam", "ranges": [[{"subnet": "10.249.0.0/24"}]]}},
  {"type": "loopback"}]}
JSON
  start_program containerd nsenter "$enter" -- containerd --config "$ctd/config.toml"
  await containerd 30 ctr -a "$ctd/containerd.sock" version
  ctr -a "$ctd/containerd.sock" -n k8s.io images import "$node/pause.tar" >/dev/null
  if [[ -f $node/gpunode.tar ]]; then
    ctr -a "$ctd/containerd.sock" -n k8s.io images import "$node/gpunode.tar" >/dev/null
  fi

  # The node's credentials: a client certificate in system:nodes, as the Node authorizer and
  # NodeRestriction expect of a kubelet.
  issue kubelet "system:node:$name" system:nodes
  write_kubeconfig "$node/kubelet.kubeconfig" kubelet \
    "    client-certificate: $dir/pki/kubelet.crt
    client-key: $dir/pki/kubelet.key"
  local port healthz_port
  port=$(free_port) healthz_port=$(free_port)
  # cgroup v1 is allowed (failCgroupV1) where the host has no other; QoS cgroups and node
  # allocatable enforcement are off so the kubelet leaves the host's cgroups alone; eviction
  # thresholds are low so a busy test disk does not evict the pods under test.
  cat >"$node/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz_port
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $dir/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$ctd/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
clusterDomain: cluster.local
nodeStatusUpdateFrequency: 2s
syncFrequency: 5s
YAML
  echo "$healthz_port" >"$node/healthz-port"
  record_host_chains
  start_kubelet
  await kubelet 60 node_registered
  initialize_node
  await kubelet 60 node_ready
  echo "local-cluster: node $name ready in $((SECONDS - started))s; device plugins register at $node/kubelet/device-plugins/kubelet.sock" >&2
}

kubelet_healthy() { curl -fsS "http://127.0.0.1:$(<"$dir/node/healthz-port")/healthz"; }

# Stops the kubelet and starts it again with the same configuration, as a node's service manager
# does after an upgrade: its device plugin socket is made anew, and plugins must register again.
restart_kubelet() {
  [[ -f $dir/pids/node-namespace ]] || { echo "local-cluster: $dir runs no node" >&2; exit 2; }
  bin=$(<"$dir/bin")
  stop kubelet
  start_kubelet
  await kubelet 60 kubelet_healthy
}

# A node's mounts are private to its namespace, where a systemd host's / is shared: a pod's
# Bidirectional mount (a daemon's tmpfs for its clients) needs its host path on a shared mount, so
# PATH is bound onto itself and made shared there, in the node's namespace alone.
shared_mount() {
  (($# == 3)) || usage
  [[ -f $dir/pids/node-namespace ]] || { echo "local-cluster: $dir runs no node" >&2; exit 2; }
  nsenter --mount="/proc/$(<"$dir/pids/node-namespace")/ns/mnt" -- sh -c \
    'mkdir -p "$0" && { mountpoint -q "$0" || mount --bind "$0" "$0"; } && mount --make-shared "$0"' \
    "$3"
}

token() {
  (($# == 4)) || usage
  local ns=$3 sa=$4 bin
  bin=$(<"$dir/bin")
  local value
  value=$("$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" create token "$sa" -n "$ns")
  write_kubeconfig "$dir/$ns.$sa.kubeconfig" "$ns-$sa" "    token: $value"
  echo "$dir/$ns.$sa.kubeconfig"
}

case $verb in
  up) up ;;
  node) add_node "$@" ;;
  restart-kubelet) restart_kubelet ;;
  down) stop_all ;;
  token) token "$@" ;;
  shared-mount) shared_mount "$@" ;;
  *) usage ;;
esac
