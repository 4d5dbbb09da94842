#!/usr/bin/env python3
"""Compile some translation units of this build again at other optimisation
levels with -Werror, so that a warning only one level shows (GCC's
-Warray-bounds, -Wstringop-overflow and -Wrestrict depend on inlining and
value ranges) cannot come back unnoticed.

    warnings_olevels.py COMPILE_COMMANDS.json LEVELS SOURCE...

LEVELS is a comma-separated list (-O1,-O2,-Os); each SOURCE is matched
against the end of the files in compile_commands.json and compiled with this
build's own command line, its -O flag replaced, -Werror added, output
discarded; two at a time. In a unity build (CMAKE_UNITY_BUILD) a source is
found in the unity file that includes it and compiled alone, with that
file's command line; a precompiled header built at another -O level is not
used (the header itself is read instead). Exit 0 when every compile is clean, 1 otherwise
(the compiler's messages printed), 2 on bad usage. CTest: warnings_olevels
(only with LUMEN_WERROR=ON; tools/test builds cover -O0 and -O3).
"""
import concurrent.futures
import json
import shlex
import subprocess
import sys


def command_at(entry, level):
    """The entry's compiler command at `level`, -Werror, no output files."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif a in ("-MD", "-MMD", "-Winvalid-pch"):
            pass
        elif a.startswith("-O"):
            pass
        else:
            out.append(a)
    return out + [level, "-Werror", "-o", "/dev/null"]


def entries_for(entries, source):
    """The compile entries of `source`: its own, or those of the unity files
    that include it, their input replaced by the source itself."""
    found = [e for e in entries if e["file"].endswith("/" + source)]
    if found:
        return found
    for e in entries:
        if "/Unity/unity_" not in e["file"]:
            continue
        try:
            with open(e["file"]) as f:
                text = f.read()
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("#include") and line.endswith("/" + source + '"'):
                path = line.split('"')[1]
                args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
                found.append({"directory": e["directory"], "file": path,
                              "arguments": [path if a == e["file"] else a for a in args]})
    return found


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        entries = json.load(f)
    levels = [lvl for lvl in argv[2].split(",") if lvl]
    jobs = []
    for source in argv[3:]:
        found = entries_for(entries, source)
        if len(found) != 1:
            print(f"{source}: {len(found)} entries in {argv[1]}, want 1", file=sys.stderr)
            return 2
        jobs += [(found[0], lvl) for lvl in levels]

    def run(job):
        entry, level = job
        r = subprocess.run(command_at(entry, level), cwd=entry["directory"], capture_output=True, text=True)
        return entry["file"], level, r.returncode, r.stdout + r.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for path, level, rc, text in pool.map(run, jobs):
            if rc != 0:
                failed += 1
                print(f"== {path} at {level}: exit {rc}\n{text}")
            else:
                print(f"ok {path} at {level}")
    print(f"{len(jobs) - failed} clean, {failed} with warnings or errors")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
