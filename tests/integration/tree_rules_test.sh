#!/usr/bin/env bash
# The rules of docs/ARCHITECTURE.md and docs/STYLE.md that a grep can check, over src/ and sim/.
# Usage: tree_rules_test.sh SOURCE_DIR. Prints one line per rule, and each breach under it.
set -uo pipefail
cd "$1" || exit 2

failed=0
# rule DESCRIPTION -- the breaches, one per line, from the command that follows.
rule() {
  local what=$1 hits
  shift
  hits=$("$@")
  if [[ -n $hits ]]; then
    echo "FAIL: $what"
    sed 's/^/  /' <<<"$hits"
    failed=$((failed + 1))
  else
    echo "ok: $what"
  fi
}

# The directories of src/ that the files under the given directories include from, one
# "file: dir" line each (third-party headers, absl/ or nlohmann/, are not src/'s).
includes_of() {
  grep -rnoE '^#include "[a-z_0-9]+/' "$@" --include='*.cc' --include='*.h' |
    sed -E 's/^([^:]+):[0-9]+:#include "([a-z_0-9]+)\//\1: \2/' |
    while read -r file dir; do [[ -d src/$dir ]] && echo "$file $dir"; done
}

roles="plugin dra metrics labels runtime cluster doctor mig"
node_model="gpu health plugin_config containerd kube"
access="nvml host cdi h2grpc http http_client"

# includes_from LAYER_DIRS -- ALLOWED_DIRS: the includes of LAYER_DIRS that name none of ALLOWED.
includes_outside() {
  local from=() allowed=()
  while [[ $1 != -- ]]; do from+=("src/$1"); shift; done
  shift
  allowed=("$@")
  local pattern
  pattern=$(IFS='|'; echo "${allowed[*]}")
  includes_of "${from[@]}" | grep -vE ": (${pattern})$"
}

for role in $roles; do
  rule "src/$role/ includes no other role and nothing of src/cli/ (a role never calls another)" \
    includes_outside "$role" -- "$role" $node_model $access core
done
rule "the node model (src/{gpu,health,plugin_config,containerd,kube}/) includes no role and nothing of src/cli/" \
  includes_outside $node_model -- $node_model $access core
rule "the access layer (src/{nvml,host,cdi,h2grpc,http,http_client}/) includes only itself and src/core/" \
  includes_outside $access -- $access core
rule "src/core/ includes nothing of gpunode's but itself" includes_outside core -- core

rule "no nlohmann value(key, fallback) outside src/core/json_field.h: it throws on a member of another type; use core::JsonString, JsonInteger, JsonBool or JsonAt" \
  bash -c "grep -rnE '\\.value\\([^)]' src sim --include='*.cc' --include='*.h' | grep -v '^src/core/json_field.h:'"

rule "src/cluster/ and src/mig/ read what the API server (or Prometheus, or doctor) answers through src/kube's readers and views (kube/api_object.h, json_walk.h), never nlohmann trees: no json::parse, core::JsonAt, JsonString, JsonInteger or JsonBool there; building request bodies with nlohmann stays allowed" \
  bash -c "grep -rnE '\\bjson::parse\\b|\\bJson(At|String|StringAt|Integer|Bool)\\(|core/json_field\\.h' src/cluster src/mig --include='*.cc' --include='*.h'"

rule "only src/core/spawn.cc starts programs (posix_spawn, fork, exec*): children start with default signals and a deadline" \
  bash -c "grep -rnE '\\b(posix_spawnp?|fork|vfork|execvp?e?|execlp?e?)\\(' src sim --include='*.cc' --include='*.h' | grep -v '^src/core/spawn.cc:'"

rule "time and waits are the Env's (core::Env) or an I/O deadline's (core::IoDeadline): no clock read or sleep outside src/core/ (the HTTP module, src/http/{cert_store,httplib_server}.cc, links no gpunode library and keeps its own)" \
  bash -c "grep -rnE '\\babsl::(Now|SleepFor)\\(|std::this_thread::sleep_(for|until)|_clock::now\\(|\\b(usleep|nanosleep|clock_gettime)\\(' src --include='*.cc' --include='*.h' | grep -vE '^src/(core/|http/(cert_store|httplib_server)\\.cc:)'"

rule "signals are taken in src/core/ alone (SignalFd, SystemEnv::StopOnSignals): no signalfd, sigwait, sigtimedwait or signal mask outside it" \
  bash -c "grep -rnE '\\b(signalfd|sigwait|sigwaitinfo|sigtimedwait|pthread_sigmask|sigprocmask)\\(' src --include='*.cc' --include='*.h' | grep -v '^src/core/'"

rule "roles take a core::Env&: only src/cli/ (the binary's commands) makes a SystemEnv" \
  bash -c "grep -rn 'SystemEnv' src --include='*.cc' --include='*.h' | grep -vE '^src/(core|cli)/'"

rule "no bare close() of a descriptor outside src/core/: a core::UniqueFd owns every one (sim/, which links nothing of gpunode's, has sim/src/file_descriptor.h)" \
  bash -c "grep -rnE '(^|[^A-Za-z0-9_.>])(::)?close\\(' src sim --include='*.cc' --include='*.h' | grep -vE '^[^:]+:[0-9]+: *//' | grep -vE '^(src/core/|sim/src/file_descriptor.h:)'"

rule "only src/core/loaded_library.cc calls dlopen, dlsym or dlclose: a core::LoadedLibrary owns every loaded library" \
  bash -c "grep -rnE '\\b(dlopen|dlmopen|dlsym|dlvsym|dlclose)\\(' src sim --include='*.cc' --include='*.h' | grep -vE '^[^:]+:[0-9]+: *//' | grep -v '^src/core/loaded_library.cc:'"

rule "main() ends every command inside a catch of any exception (one line and exit 1, never an abort)" \
  bash -c "grep -q 'catch (\\.\\.\\.)' src/cli/main.cc || echo 'src/cli/main.cc: no catch (...) around the command'"

echo
if ((failed > 0)); then
  echo "$failed rule(s) broken"
  exit 1
fi
echo "every rule holds"
