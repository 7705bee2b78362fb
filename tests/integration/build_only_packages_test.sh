#!/usr/bin/env bash
# Checks that `scripts/install-deps.sh --build-only` installs enough to build the binary: every
# file under /usr that the gpunode target's compiles read (ninja's dependency log) or its links
# name must belong to a package that the build-only list pulls in (its Depends, recursively).
# Usage: tests/integration/build_only_packages_test.sh BUILD_DIR   (a built Ninja tree; ctest passes it)
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=$(realpath "${1:?usage: tests/integration/build_only_packages_test.sh BUILD_DIR}")

[[ -f $build_dir/build.ninja ]] || { echo "build_only_packages_test: $build_dir/build.ninja missing: configure with scripts/build.sh first" >&2; exit 2; }

# The build-only list, as install-deps.sh spells it: the words of its packages=( ... ) block.
mapfile -t build_packages < <(sed -n '/^packages=(/,/^)/{/^packages=(/d;/^)/d;s/#.*//;p}' scripts/install-deps.sh | tr -s ' ' '\n' | sed '/^$/d')
((${#build_packages[@]} > 0)) || { echo "build_only_packages_test: no packages=( ... ) list found in scripts/install-deps.sh" >&2; exit 1; }

files=$(mktemp)
trap 'rm -f "$files"' EXIT
mapfile -t objects < <(ninja -C "$build_dir" -t commands gpunode | grep -o ' -o [^ ]*\.o' | sed 's/^ -o //')
((${#objects[@]} > 0)) || { echo "build_only_packages_test: no compile commands for the gpunode target in $build_dir" >&2; exit 1; }
{
  ninja -C "$build_dir" -t deps "${objects[@]}" | sed -n 's/^ *\(\/usr\/[^ ]*\)$/\1/p'
  ninja -C "$build_dir" -t commands gpunode | grep -v -- ' -c ' | tr ' ' '\n' | grep '^/usr/.*\.\(so\|a\)$' || true
} | sort -u | xargs -r realpath -e | sort -u >"$files"
[[ -s $files ]] || { echo "build_only_packages_test: ninja's dependency log in $build_dir names no file under /usr: build the gpunode target first" >&2; exit 1; }

# Debian 12 merges /usr: a library found as /usr/lib/... may be registered by its package as
# /lib/..., so each file is looked up in both spellings, and compared without the /usr.
owned=$(sed 'p;s|^/usr/|/|' "$files" | xargs dpkg-query -S 2>/dev/null || true)
unowned=$(comm -23 <(sed 's|^/usr/|/|' "$files" | sort -u) \
                   <(sed 's/^.*: //; s|^/usr/|/|' <<<"$owned" | sort -u))
if [[ -n $unowned ]]; then
  echo "build_only_packages_test: the gpunode target reads $(wc -l <<<"$unowned") files that no Debian package owns, such as $(head -3 <<<"$unowned" | tr '\n' ' ')(the binary must build from Debian's packages alone)" >&2
  exit 1
fi
used=$(cut -d: -f1 <<<"$owned" | tr ', ' '\n\n' | sed '/^$/d' | sort -u)
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances "${build_packages[@]}" | grep -v '^ ' | sed 's/:.*//' | sort -u)
missing=$(comm -23 <(echo "$used") <(echo "$closure"))
if [[ -n $missing ]]; then
  echo "build_only_packages_test: the gpunode target reads files of packages that scripts/install-deps.sh --build-only does not pull in: $(echo $missing); add them to its packages=( ... ) list" >&2
  exit 1
fi
echo "build_only_packages_test: the $(wc -l <"$files") files the gpunode target reads come from $(echo "$used" | wc -l) packages, all pulled in by the ${#build_packages[@]} build-only packages"
