#!/usr/bin/env bash
# Lays out a driver root from NVIDIA's driver user space as Debian packages it (component
# non-free, driver 535: the .debs scripts/install-deps.sh fetches into /var/cache/gpunode/nvidia-
# debs and never installs), so that `gpunode cdi generate` and `nvidia-ctk cdi generate` find a
# real driver's files where the packages put them: each package extracted with dpkg-deb, the links
# Debian's nvidia-alternative makes, the tree indexed by the real ldconfig. Then what a running
# node adds: the control device nodes (plain files: only their presence is read), the
# persistenced socket, the MPS pipe directory, the driver's MIG minors under proc/, and a stand-in
# for nvidia-cdi-hook. tests/cdi/cdi_driver_test.cc, tests/side_by_side/cdi_generate_test.sh and
# bench/side_by_side/cdi_generate.sh all run on this one layout.
#
# Usage: driver_root.sh ROOT   (ROOT must not exist yet; prints the driver's version;
#                               exit 77 with the reason when the packages are not there)
# Beside ROOT it writes ROOT.contents: the packages' own file lists (`dpkg-deb -c` of each), what
# a test compares a generator's findings with, independent of the layout.
set -euo pipefail
root=$1
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
debs=/var/cache/gpunode/nvidia-debs

shopt -s nullglob
packages=("$debs"/*.deb)
libcuda=("$debs"/libcuda1_*.deb)
if ((${#packages[@]} == 0 || ${#libcuda[@]} == 0)); then
  echo "no NVIDIA driver packages (libcuda1) in $debs: run scripts/install-deps.sh (as root) to" \
    "fetch them from Debian's non-free archive" >&2
  exit 77
fi
# "535.261.03-1" -> "535.261.03": the Debian revision is not part of the driver's version.
version=$(dpkg-deb -f "${libcuda[0]}" Version)
version=${version%%-*}

# lay_out DIR: the packages extracted into DIR (made here), as installed, and their file lists in
# DIR.contents.
lay_out() {
  local dir=$1 deb program
  mkdir "$dir"
  for deb in "${packages[@]}"; do dpkg-deb -x "$deb" "$dir"; done
  for deb in "${packages[@]}"; do dpkg-deb -c "$deb"; done >"$dir.contents"
  # nvidia-alternative links /usr/bin/nvidia-smi (and the other programs kept in
  # /usr/lib/nvidia/current) to the packaged program, and adds the library directory to the
  # loader's path; then ldconfig indexes the tree.
  mkdir -p "$dir/usr/bin"
  for program in "$dir"/usr/lib/nvidia/current/*; do
    if [[ -f $program && -x $program ]]; then
      ln -s "/usr/lib/nvidia/current/${program##*/}" "$dir/usr/bin/${program##*/}"
    fi
  done
  ln -s nvidia/current/libnvidia-ml.so.1 "$dir/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
  mkdir -p "$dir/etc/ld.so.conf.d"
  printf '%s\n' /usr/lib/x86_64-linux-gnu/nvidia/current /usr/lib/x86_64-linux-gnu \
    >"$dir/etc/ld.so.conf.d/nvidia.conf"
  echo 'include /etc/ld.so.conf.d/*.conf' >"$dir/etc/ld.so.conf"
  ldconfig -r "$dir"
}

# Extracting or listing the packages (xz) costs seconds, and every test process lays out a root of
# its own: they are laid out and listed once per machine and set of packages, under $debs/.., and
# copied from there (a fraction of a second). Where that cannot be written, each root is laid out
# afresh. The key is this script's text and the packages' names and sizes (their names carry
# their versions), not the checkout's path: every clone on the machine shares the one layout.
key=$({ sha256sum <"$0"; stat -c '%n %s' "${packages[@]}"; } | sha256sum | cut -c1-16)
laid_out=${debs%/*}/driver-root-$key
if [[ ! -d $laid_out ]] && staging=$(mktemp -d "$laid_out.XXXXXX" 2>/dev/null); then
  lay_out "$staging/root"
  # The list first: a root that is there has its list. Another run may have made them first:
  # its copies are as good.
  mv -T "$staging/root.contents" "$laid_out.contents"
  mv -T "$staging/root" "$laid_out" 2>/dev/null || true
  rm -rf "$staging"
fi
if [[ -d $laid_out ]]; then
  cp -a "$laid_out" "$root"
  cp "$laid_out.contents" "$root.contents"
else
  lay_out "$root"
fi

mkdir -p "$root/dev" "$root/run/nvidia-persistenced" "$root/tmp/nvidia-mps" \
  "$root/proc/driver/nvidia-caps"
for device in nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-modeset; do : >"$root/dev/$device"; done
# A bound socket file stays a socket after its process ends: that is all a generator looks at.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
  "$root/run/nvidia-persistenced/socket"
cp "$source_dir/tests/fixtures/plugin/host/proc/driver/nvidia-caps/mig-minors" \
  "$root/proc/driver/nvidia-caps/mig-minors"
printf '#!/bin/sh\n' >"$root/usr/bin/nvidia-cdi-hook"
chmod +x "$root/usr/bin/nvidia-cdi-hook"
echo "$version"
