#!/usr/bin/env python3
"""Proves generate.py --check catches drift: on a scratch copy of the repository's header and
bindings it must pass unchanged, and fail after a function is added to the header or a
generated file is edited. Usage: selftest.py LIBIKLLM"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = shutil.ignore_patterns("node_modules", "build", "target", "bin", "obj", "__pycache__", "*.egg-info")


def check(root, lib):
    cmd = [sys.executable, os.path.join(HERE, "generate.py"), "--check", "--root", root, "--lib", lib]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main():
    lib = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(ROOT, "include"), os.path.join(tmp, "include"))
        shutil.copytree(os.path.join(ROOT, "bindings"), os.path.join(tmp, "bindings"), ignore=SKIP)
        r = check(tmp, lib)
        if r.returncode != 0:
            print("unchanged copy should pass:\n" + r.stdout)
            return 1
        header = os.path.join(tmp, "include", "ikllm.h")
        text = open(header).read()
        with open(header, "w") as f:
            f.write(text.replace("#ifdef __cplusplus\n}", "IKLLM_API int32_t ikllm_selftest_added(void);\n\n#ifdef __cplusplus\n}"))
        r = check(tmp, lib)
        if r.returncode == 0 or "ikllm_selftest_added" not in r.stdout:
            print("an added function should fail the check:\n" + r.stdout)
            return 1
        with open(header, "w") as f:
            f.write(text)
        manifest = os.path.join(tmp, "bindings", "abi.json")
        with open(manifest, "a") as f:
            f.write(" ")
        r = check(tmp, lib)
        if r.returncode == 0:
            print("an edited manifest should fail the check")
            return 1
    print("selftest: --check passes on a clean copy and fails on header or manifest drift")
    return 0


if __name__ == "__main__":
    sys.exit(main())
