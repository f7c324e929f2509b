#!/usr/bin/env python3
"""Prints the greedy continuation of a prompt exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0`.
Usage: generate.py MODEL PROMPT N"""
import sys

import ikllm

if len(sys.argv) != 4:
    sys.exit("usage: generate.py MODEL PROMPT N")
model_path, prompt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = sys.stdout.buffer
with ikllm.Model(model_path) as model:
    out.write(prompt.encode())
    out.flush()
    for piece in ikllm.generate(model, prompt, n, temperature=0):
        out.write(piece.encode())
        out.flush()
    out.write(b"\n")
