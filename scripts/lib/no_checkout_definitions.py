"""Checks that no compile definition of a build tree names the checkout's directory.

Usage: python3 scripts/lib/no_checkout_definitions.py CHECKOUT BUILD_DIR...

scripts/test.sh runs it on every tree it builds. The compiler cache rewrites the include paths
under the checkout (CCACHE_BASEDIR, scripts/build.sh) but hashes definitions as written, so a
definition that names the checkout, or a build tree in it, makes every object that has it differ
between two clones, and a clone in another directory compiles them all again. Tests and benchmarks
get such paths from cmake/build_paths.cmake instead. Prints one line for each object that has one,
naming the definitions; exits 1 if one does, 2 if a tree is not configured.
"""
import json
import os
import shlex
import sys


def definitions(command):
    """The -D arguments of a compile command, joined or separate."""
    args = shlex.split(command)
    for i, arg in enumerate(args):
        if arg == "-D" and i + 1 < len(args):
            yield args[i + 1]
        elif arg.startswith("-D"):
            yield arg[2:]


def main():
    if len(sys.argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    checkout = os.path.realpath(sys.argv[1])
    found = 0
    for build_dir in sys.argv[2:]:
        path = os.path.join(build_dir, "compile_commands.json")
        if not os.path.exists(path):
            print(f"no_checkout_definitions: {path} is missing; configure {build_dir} first"
                  " (scripts/build.sh)", file=sys.stderr)
            sys.exit(2)
        entries = json.load(open(path))
        for entry in entries:
            named = [d for d in definitions(entry["command"]) if checkout in d]
            if named:
                found += 1
                print(f"no_checkout_definitions: {entry['file']}: {' '.join(named)}")
        print(f"no_checkout_definitions: {build_dir}: {len(entries)} compile commands read")
    if found:
        print(f"no_checkout_definitions: {found} objects name {checkout} in a definition: give"
              " the path through gpunode_build_paths() (cmake/build_paths.cmake)", file=sys.stderr)
        sys.exit(1)


main()
