#!/usr/bin/env bash
# Times `gpunode cluster audit -f` against a jq one-liner computing the same per-node GPU request
# sums, on a generated snapshot (default: Kubernetes' documented limits, 5,000 nodes and 150,000
# pods), checks that both agree, and prints wall time, peak RSS and the ratio.
# Usage, from the repository root after building with -DGPUNODE_BENCH=ON:
#   bench/cluster/audit_vs_jq.sh [BUILD_DIR] [NODES] [PODS]
# Needs jq and GNU time (/usr/bin/time, Debian package `time`). Not run by ctest.
set -euo pipefail
build=${1:-build}
nodes=${2:-5000}
pods=${3:-150000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

snapshot=$work/snapshot.json
"$build/gpunode-gen-snapshot" --nodes "$nodes" --pods "$pods" -o "$snapshot"
size=$(stat -c %s "$snapshot")
cat "$snapshot" >/dev/null  # both tools then read from the page cache

# Prints "<wall seconds> <peak RSS KiB>" from GNU time's verbose report.
measure() {
  awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0;
                                         for (i = 1; i <= n; i++) s = s * 60 + t[i]; wall = s }
              /Maximum resident set size/ { rss = $2 }
              END { printf "%.2f %d\n", wall, rss }' "$1"
}

# audit exits 1 when it finds errors; the generated cluster has a few on purpose.
/usr/bin/time -v "$build/gpunode" cluster audit -f "$snapshot" -o json >"$work/audit.json" \
  2>"$work/audit.time" || [[ $? == 1 ]]
read -r audit_wall audit_rss < <(measure "$work/audit.time")

jq_program='reduce (.items[] | select(.kind == "Pod" and .spec.nodeName != null
    and .status.phase != "Succeeded" and .status.phase != "Failed")) as $p ({};
  .[$p.spec.nodeName] += ([$p.spec.containers[] | .resources.requests["nvidia.com/gpu"] // "0"
    | tonumber] | add))
  | to_entries[] | select(.value > 0) | "\(.key) \(.value)"'
/usr/bin/time -v jq -r "$jq_program" "$snapshot" >"$work/jq.txt" 2>"$work/jq.time"
read -r jq_wall jq_rss < <(measure "$work/jq.time")

jq -r '.nodes[] | select(.requested > 0) | "\(.name) \(.requested)"' "$work/audit.json" |
  sort >"$work/audit.sums"
sort "$work/jq.txt" >"$work/jq.sums"
if ! cmp -s "$work/audit.sums" "$work/jq.sums"; then
  echo "audit_vs_jq: per-node GPU request sums differ between gpunode and jq" >&2
  diff "$work/audit.sums" "$work/jq.sums" | head >&2
  exit 1
fi

mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
echo "snapshot: $nodes nodes, $pods pods, $(mib $((size / 1024))) MiB ($(wc -l <"$work/jq.sums") GPU nodes with requests; sums agree)"
printf '%-28s %10s %14s %16s\n' "" "wall (s)" "peak RSS (MiB)" "RSS / snapshot"
printf '%-28s %10s %14s %16s\n' "gpunode cluster audit -f" "$audit_wall" "$(mib "$audit_rss")" \
  "$(awk -v r="$audit_rss" -v s="$size" 'BEGIN { printf "%.2f", r * 1024 / s }')"
printf '%-28s %10s %14s %16s\n' "jq one-liner" "$jq_wall" "$(mib "$jq_rss")" \
  "$(awk -v r="$jq_rss" -v s="$size" 'BEGIN { printf "%.2f", r * 1024 / s }')"
awk -v a="$audit_wall" -v j="$jq_wall" 'BEGIN { printf "ratio (jq / gpunode wall time): %.1fx\n", j / a }'
