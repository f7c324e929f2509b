#!/usr/bin/python3
"""Writes a mid-size random-weight llama model for the batch benchmark (~155M parameters:
vocab 32000, n_embd 1024, 8 layers, 16 heads / 4 KV heads, ff 2816; ~620 MB in F32), using the
shape-agnostic writer of the refdata generator.
usage: make_mid_model.py SHARED_DIR OUT.gguf
The 1B shape of the issue's goal comes straight from the generator (minutes of CPU, 4.4 GB):
  /usr/bin/python3 SHARED/tools/make_models.py SHARED/refdata/vocab/ggml-vocab-llama-spm.gguf OUT_DIR --big llama-1b
"""
import os
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__.strip())
shared, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(shared, 'tools'))
import make_models  # noqa: E402  (the refdata generator: build(config, vocab, path))

config = dict(name='llama-mid', arch='llama', seed=21, vocab=32000, embd=1024, layers=8, heads=16, kv_heads=4,
              ff=2816, rope_base=500000.0, ctx=4096)
make_models.build(config, os.path.join(shared, 'refdata/vocab/ggml-vocab-llama-spm.gguf'), out)
print(out, os.path.getsize(out))
