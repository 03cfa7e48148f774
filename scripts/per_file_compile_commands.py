#!/usr/bin/env python3
"""Writes a compile_commands.json with one entry per source file, for clang-tidy.

A unity build (NCCLSCOPE_UNITY_BUILD) compiles generated batch files that #include a target's
sources, and CMake's compile_commands.json names only those batches. Each source of a batch
compiles with the batch's command, so its entry is that command with the source in place of the
batch. Entries of files compiled alone are copied as they are.

Usage: per_file_compile_commands.py BUILD_DIR OUT_DIR

GCC's -Wno-subobject-linkage, which only a batch needs, is dropped: clang-tidy does not know it.
"""
import json
import os
import re
import sys

BATCH_ONLY_FLAG = "-Wno-subobject-linkage"
INCLUDE = re.compile(r'^#include "([^"]+)"\s*$')


def sources_of_batch(path):
    with open(path, encoding="utf-8") as f:
        return [m.group(1) for m in map(INCLUDE.match, f) if m]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: per_file_compile_commands.py BUILD_DIR OUT_DIR")
    build, out_dir = sys.argv[1:]
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    out = []
    for e in entries:
        if "command" in e:
            e["command"] = e["command"].replace(" " + BATCH_ONLY_FLAG, "")
        else:
            e["arguments"] = [a for a in e["arguments"] if a != BATCH_ONLY_FLAG]
        batch = e["file"]
        if "/Unity/unity_" not in batch:
            out.append(e)
            continue
        for source in sources_of_batch(batch):
            one = dict(e, file=source)
            if "command" in one:
                one["command"] = one["command"].replace(batch, source)
            else:
                one["arguments"] = [source if a == batch else a for a in one["arguments"]]
            out.append(one)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "compile_commands.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
