"""Checks that every object a second build tree compiles has the first tree's compile command.

Usage: python3 scripts/lib/same_compiles.py FIRST_BUILD_DIR SECOND_BUILD_DIR

scripts/test.sh runs it on build/ and build-dist/: the dist build is served from the compiler
cache only while each of its commands equals the release build's (cmake/shipped_code.cmake), and
a flag added to one tree alone would make it compile the whole product again. Each tree's own path
is replaced by a placeholder before the commands are compared. Prints one line for each object
that differs, naming the flags only one tree has; exits 1 if one does, 2 if a tree is not
configured.
"""
import json
import os
import shlex
import sys


def commands(build_dir):
    """The tree's compile commands by source, its own path replaced by @BUILD@."""
    path = os.path.join(build_dir, "compile_commands.json")
    if not os.path.exists(path):
        print(f"same_compiles: {path} is missing; configure {build_dir} first (scripts/build.sh)",
              file=sys.stderr)
        sys.exit(2)
    root = os.path.abspath(build_dir)
    by_source = {}
    for entry in json.load(open(path)):
        by_source[entry["file"].replace(root, "@BUILD@")] = shlex.split(
            entry["command"].replace(root, "@BUILD@"))
    return by_source


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    first, second = commands(sys.argv[1]), commands(sys.argv[2])
    differing = 0
    for source, command in sorted(second.items()):
        other = first.get(source)
        if other == command:
            continue
        differing += 1
        if other is None:
            print(f"same_compiles: {source}: compiled in {sys.argv[2]} only")
        else:
            only_first = [flag for flag in other if flag not in command]
            only_second = [flag for flag in command if flag not in other]
            print(f"same_compiles: {source}: {sys.argv[1]} alone has {only_first or 'nothing'},"
                  f" {sys.argv[2]} alone has {only_second or 'nothing'} (or the order differs)")
    if differing:
        print(f"same_compiles: {differing} of {len(second)} objects of {sys.argv[2]} are compiled"
              f" otherwise than in {sys.argv[1]}: give both trees the same flags"
              " (cmake/shipped_code.cmake)", file=sys.stderr)
        sys.exit(1)
    print(f"same_compiles: all {len(second)} objects of {sys.argv[2]} compiled as in {sys.argv[1]}")


main()
