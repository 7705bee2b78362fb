#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, for the real-cluster tests and for a person trying
# gpunode's cluster commands (docs/TESTING.md): etcd, kube-apiserver (TLS with certificates made
# for this run, Node and RBAC authorization, service-account tokens), kube-scheduler and
# kube-controller-manager with their own credentials, all from scripts/build-k8s.sh.
#
#   scripts/local-cluster.sh up DIR           start; DIR/admin.kubeconfig is cluster-admin
#   scripts/local-cluster.sh token DIR NS SA  print a kubeconfig for ServiceAccount NS/SA
#   scripts/local-cluster.sh down DIR         stop everything started in DIR
#
# Nothing listens beyond 127.0.0.1. A component that exits during `up` fails it with the last
# lines of its log. DIR is created when missing and kept after `down` (its logs are there).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  echo "usage: scripts/local-cluster.sh up DIR | down DIR | token DIR NAMESPACE SERVICEACCOUNT" >&2
  exit 2
}
(($# >= 2)) || usage
verb=$1 dir=$2

components=(etcd kube-apiserver kube-scheduler kube-controller-manager)

stop_all() {
  local name pid left
  for name in kube-controller-manager kube-scheduler kube-apiserver etcd; do
    [[ -f $dir/pids/$name ]] || continue
    pid=$(<"$dir/pids/$name")
    kill -TERM "$pid" 2>/dev/null || true
    for ((left = 100; left > 0; left--)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$dir/pids/$name"
  done
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

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
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

start() {
  local name=$1
  shift
  setsid "$bin/$name" "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/pids/$name"
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
  down) stop_all ;;
  token) token "$@" ;;
  *) usage ;;
esac
