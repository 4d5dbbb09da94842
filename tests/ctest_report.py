#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""tests/ctest_report.py - what one CTest run did, for tools/test.

  ctest_report.py check PASS JUNIT [--strict] [--allowed FILE]
      Reads CTest's JUnit file (ctest --output-junit, with the passed tests'
      output kept whole: --test-output-size-passed), prints the pass's
      counts, its slowest tests and every skip with its reason, and writes
      JUNIT.json for the summary. A skip is a test CTest counted as skipped
      (exit 77, GTEST_SKIP) or a line "SKIP: ..." in any test's output (a
      part of a suite that did not run: tests/e2e/lib.sh e2e_skip_part).
      With --strict (tools/test as root, i.e. CI), exit 1 when a skip is
      not on the allowed list (tests/allowed-skips): the skips this machine
      cannot avoid, each with the phrase its reason must contain.
  ctest_report.py summary JUNIT.json...
      One table over the passes: wall time, tests passed, failed, skipped,
      and the skips again.

A skip that prints no reason is never allowed: it is a test that did not
run, and nobody can tell why.
"""
import fnmatch
import json
import re
import sys
import xml.etree.ElementTree as ET

HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
SKIP_LINE = re.compile(r"\bSKIP: (.+)$")


def allowed_list(path):
    """[(test glob, phrase, line)] from the allowed-skips file."""
    out = []
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            sys.exit(f"{path}:{n}: want 'TEST PHRASE', got {line!r}")
        out.append((parts[0], parts[1].strip(), n))
    return out


def gtest_reason(text):
    """GTEST_SKIP()'s message: the lines between 'Skipped' and '[  SKIPPED ]'."""
    m = re.search(r": Skipped\n(.*?)\n*\[  SKIPPED \]", text, re.S)
    return m.group(1).strip().replace("\n", " ") if m and m.group(1).strip() else None


def skips_of(name, status, text):
    """[(what, reason)] for one test: the whole test, and each part."""
    out, seen = [], set()
    for line in text.splitlines():
        m = SKIP_LINE.search(line)
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            out.append(("part", m.group(1).strip()))
    if status == "skipped":
        reason = gtest_reason(text)
        if reason:
            out.insert(0, ("test", reason))
        elif out:  # exit 77 after a SKIP line: that line is why
            out[0] = ("test", out[0][1])
        else:
            out.insert(0, ("test", None))
    return out


def why_failed(text, most=8):
    """The lines of a failed test's output that say what failed (an e2e
    suite's FAIL lines, GoogleTest's failures and assertions), so the
    summary at the end of a long log names them."""
    pat = re.compile(r"\bFAIL\b|Failure$|^\[  FAILED  \]|Assertion|AssertionError|Traceback")
    lines = [ln.strip() for ln in text.splitlines() if pat.search(ln)]
    return lines[:most] + ([f"... and {len(lines) - most} more"] if len(lines) > most else [])


def read_junit(path):
    tests = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        out = tc.findtext("system-out") or ""
        if tc.find("skipped") is not None:
            status = "skipped"
        elif tc.find("failure") is not None or tc.get("status") == "fail":
            status = "failed"
        elif tc.get("status") == "run":
            status = "passed"
        else:
            status = "failed"  # not run for another reason (a missing executable, a failed fixture)
        tests.append({"name": tc.get("name"), "status": status, "seconds": float(tc.get("time") or 0),
                      "skips": skips_of(tc.get("name"), status, out),
                      "why": why_failed(out) if status == "failed" else []})
    return tests


def check(pass_name, junit, strict, allowed_path):
    allowed = allowed_list(allowed_path)
    tests = read_junit(junit)
    count = {s: sum(t["status"] == s for t in tests) for s in ("passed", "failed", "skipped")}
    total = sum(t["seconds"] for t in tests)
    print(f"== {pass_name}: {len(tests)} tests, {count['passed']} passed, {count['failed']} failed, "
          f"{count['skipped']} skipped; {total:.0f} s of test time")
    slow = sorted(tests, key=lambda t: -t["seconds"])[:8]
    print("  slowest: " + ", ".join(f"{t['name']} {t['seconds']:.0f} s" for t in slow))
    skips, bad = [], 0
    for t in tests:
        for what, reason in t["skips"]:
            rule = None
            if reason is not None:
                rule = next((a for a in allowed if fnmatch.fnmatchcase(t["name"], a[0]) and a[1] in reason), None)
            skips.append({"test": t["name"], "what": what, "reason": reason or "(no reason printed)",
                          "allowed": rule[2] if rule else None})
            bad += rule is None
    if skips:
        print(f"  skips ({len(skips)}; allowed: {allowed_path}):")
        for s in skips:
            mark = f"allowed (line {s['allowed']})" if s["allowed"] else "NOT ALLOWED" if strict else "not on the list"
            kind = "" if s["what"] == "test" else " (part)"
            print(f"    {s['test']}{kind}: {s['reason']}  [{mark}]")
    failed = [{"test": t["name"], "why": t["why"]} for t in tests if t["status"] == "failed"]
    json.dump({"pass": pass_name, "counts": count, "skips": skips, "strict": strict, "failed": failed},
              open(junit + ".json", "w"), indent=1)
    if strict and bad:
        print(f"  FAIL: {bad} skip(s) not on {allowed_path}: a test that can run on this machine did not")
        return 1
    return 0


def summary(paths):
    for p in paths:
        try:
            d = json.load(open(p))
        except (OSError, ValueError):
            continue
        c = d["counts"]
        print(f"  {d['pass']:<10} {c['passed']:5d} passed {c['failed']:4d} failed {c['skipped']:4d} skipped, "
              f"{len(d['skips'])} skip(s) reported")
        for f in d.get("failed", []):
            print(f"      FAILED {f['test']}")
            for line in f["why"]:
                print(f"        {line}")
        for s in d["skips"]:
            kind = "" if s["what"] == "test" else " (part)"
            mark = "" if s["allowed"] else "  [NOT ALLOWED]" if d["strict"] else "  [not on the list]"
            print(f"      {s['test']}{kind}: {s['reason']}{mark}")
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "check":
        strict = "--strict" in argv[4:]
        allowed = f"{HERE}/allowed-skips"
        if "--allowed" in argv:
            allowed = argv[argv.index("--allowed") + 1]
        return check(argv[2], argv[3], strict, allowed)
    if len(argv) >= 2 and argv[1] == "summary":
        return summary(argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
