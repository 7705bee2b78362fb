#!/usr/bin/env bash
# Whole-process costs of `gpunode exporter` on the simulator: RSS (anonymous and file-backed,
# from /proc/PID/status) idle and after N scrapes, CPU per sample while idle, CPU and latency per
# scrape. Usage, from the repository root:
#   bench/metrics/measure_exporter.sh [GPUNODE_BINARY] [SPEC] [SCRAPES]
# e.g. bench/metrics/measure_exporter.sh build/gpunode dgx-h100 100000
# The exporter runs as deployed (deploy/exporter/daemonset.yaml: `exporter --listen=:9400
# --interval=1s`, plain HTTP, pod attribution on), on a loopback port, with the kubelet's
# PodResources played by build/bench/metrics/kubelet_podresources_server (GPUNODE_KUBELET_SERVER
# to use another build's), which gives one pod to each of the node's GPUs. GPUNODE_ATTRIBUTION=off
# measures the reduced configuration, `--pod-resources-socket ""` (no kubelet thread).
set -euo pipefail
binary=${1:-build/gpunode}
spec=${2:-dgx-h100}
scrapes=${3:-100000}
kubelet_server=${GPUNODE_KUBELET_SERVER:-build/bench/metrics/kubelet_podresources_server}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

if [[ ${GPUNODE_ATTRIBUTION:-on} == off ]]; then
  attribution=(--pod-resources-socket "")
  echo "configuration: reduced (--pod-resources-socket \"\", no pod attribution)"
else
  socket=$work/pod-resources/kubelet.sock
  mapfile -t uuids < <("$binary" --sim "$spec" exporter --once --pod-resources-socket "" |
    grep -o 'UUID="GPU-[^"]*"' | sort -u | sed 's/^UUID="\(.*\)"$/\1/')
  "$kubelet_server" "$socket" "${uuids[@]}" >/dev/null &
  pids+=($!)
  for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.05; done
  attribution=(--pod-resources-socket "$socket")
  echo "configuration: as deployed (pod attribution on: ${#uuids[@]} pods, one per GPU)"
fi

"$binary" --sim "$spec" exporter --listen="127.0.0.1:$port" --interval=1s "${attribution[@]}" &
pid=$!
pids+=($pid)

python3 - "$pid" "$port" "$scrapes" <<'PY'
import http.client, sys, time

pid, port, scrapes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ticks = 100  # os.sysconf('SC_CLK_TCK') on Linux

def status():
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "RssAnon", "RssFile", "Threads")
            if k != "Threads"} | {"Threads": int(fields["Threads"])}

def cpu_seconds():
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / ticks

def samples(body):
    for line in body.splitlines():
        if line.startswith("gpunode_exporter_samples_total "):
            return float(line.split()[1])
    return 0.0

conn = None
for _ in range(200):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/healthz"); conn.getresponse().read()
        break
    except OSError:
        conn = None; time.sleep(0.05)
if conn is None:
    sys.exit("exporter did not come up")

def scrape():
    # The exporter closes idle connections after 2 s and any after 1000 requests: reconnect.
    global conn
    for attempt in range(2):
        try:
            conn.request("GET", "/metrics")
            return conn.getresponse().read().decode()
        except (http.client.HTTPException, ConnectionError):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    sys.exit("scrape failed twice")

body = scrape()
time.sleep(3)
idle = status()
up = [l for l in scrape().splitlines() if l.startswith("gpunode_pod_resources_up ")]
print(f"attribution: {up[0] if up else 'off'}")
# CPU per sample: idle for 60 s (sampling once a second, nobody scraping); /proc counts CPU in
# 10 ms ticks, so a long window is needed for a per-sample figure.
c0, s0 = cpu_seconds(), samples(scrape())
time.sleep(60)
c1, s1 = cpu_seconds(), samples(scrape())
per_sample_ms = (c1 - c0) / max(s1 - s0, 1) * 1000
# Scrapes: latency per request seen by this client, CPU of the exporter.
lat = []
c2 = cpu_seconds(); t0 = time.time()
for i in range(scrapes):
    t = time.perf_counter(); body = scrape(); lat.append(time.perf_counter() - t)
t1 = time.time(); c3 = cpu_seconds()
time.sleep(2)
after = status()
lat.sort()
pct = lambda q: lat[int(q * (len(lat) - 1))] * 1000
print(f"spec bytes_per_scrape={len(body)}")
print(f"idle      VmRSS={idle['VmRSS']} kB RssAnon={idle['RssAnon']} kB RssFile={idle['RssFile']} kB threads={idle['Threads']}")
print(f"after {scrapes} scrapes VmRSS={after['VmRSS']} kB RssAnon={after['RssAnon']} kB RssFile={after['RssFile']} kB")
print(f"cpu per sample (idle, 1s interval) = {per_sample_ms:.3f} ms over {s1 - s0:.0f} samples")
print(f"scrapes: {scrapes} in {t1 - t0:.1f} s, exporter cpu per scrape = {(c3 - c2) / scrapes * 1e6:.1f} us")
print(f"client-side scrape latency p50={pct(0.5):.3f} ms p99={pct(0.99):.3f} ms")
PY
