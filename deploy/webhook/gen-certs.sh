#!/usr/bin/env bash
# The certificate path without cert-manager: makes a CA and a serving certificate for the
# webhook's Service with openssl, stores them in Secret gpunode-webhook-tls, and patches the CA
# into both webhook configurations' caBundle. Rerun it to rotate (the webhook reloads the
# Secret's files by itself). Usage:
#   deploy/webhook/gen-certs.sh [NAMESPACE] [DAYS]
# Needs openssl and kubectl (with rights to write Secrets in NAMESPACE and patch webhook
# configurations).
set -euo pipefail
namespace=${1:-gpunode-system}
days=${2:-365}
service=gpunode-webhook
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cat >server.cnf <<CNF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = ${service}.${namespace}.svc
[ext]
subjectAltName = DNS:${service}.${namespace}.svc,DNS:${service}.${namespace}.svc.cluster.local
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
CNF

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout ca.key -out ca.crt -days "$((days * 2))" -subj "/CN=gpunode-webhook-ca" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout tls.key -out tls.csr -config server.cnf 2>/dev/null
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt \
  -days "$days" -extfile server.cnf -extensions ext 2>/dev/null

kubectl -n "$namespace" create secret tls gpunode-webhook-tls --cert=tls.crt --key=tls.key \
  --dry-run=client -o yaml | kubectl apply -f -

ca_bundle=$(base64 -w0 <ca.crt)
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  kubectl patch "$kind" gpunode --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"${ca_bundle}\"}]"
done
echo "gen-certs: Secret ${namespace}/gpunode-webhook-tls written; caBundle patched into both webhook configurations"
