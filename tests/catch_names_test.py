#!/usr/bin/env python3
"""Every Catch test case can be run by ctest under its own name.

    catch_names_test.py <tests folder>

catch_discover_tests registers each TEST_CASE under its name, and a CMake list splits a
name at ';': ctest then runs two halves that match no test case, and they pass without
running anything. This fails, naming the file and line, for any TEST_CASE whose name holds
a ';'.
"""
import os
import re
import sys

NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')


def main(root):
    bad, seen = [], 0
    for here, _, files in os.walk(root):
        for name in files:
            if not name.endswith((".cc", ".cpp", ".h")):
                continue
            path = os.path.join(here, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in NAME.finditer(text):
                seen += 1
                if ";" in m.group(1):
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{os.path.relpath(path, root)}:{line}: '{m.group(1)}'")
    for b in bad:
        print(f"a test name with ';' (ctest would run neither half): {b}")
    print(f"{seen} test cases, {len(bad)} with ';'")
    return 1 if bad or seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
