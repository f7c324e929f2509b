#!/usr/bin/env python3
"""Copy a GGUF model with its layers' weight matrices replaced by random blocks of a slow-to-make type.

The trellis (IQ*_KT) and grid (IQ1_S ... IQ3_S) quantizers search code books: a 1 B-weight model
takes hours. Kernel speed does not depend on the values, so for speed runs this writes random
block bytes instead (every bit pattern of these blocks is valid), with sane scales: a float32 row
scale for the trellis types, an fp16 block scale for the grid types. The results are noise; the
shapes, sizes and memory traffic are the real model's.

usage: make_random_quant_model.py SRC.gguf OUT.gguf TYPE [--seed N]
  TYPE: IQ1_KT IQ2_KT IQ3_KT IQ4_KT IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ1_S IQ1_S_R4 IQ1_M_R4
Tensors named blk.*.weight with 2 dimensions and rows of a multiple of 256 are replaced; the
rest (embeddings, norms, output) are copied as they are. Needs python3-numpy and the GGUF
reader/writer of ../shared/tools (found next to this repository, or via GGUF_TOOLS=DIR).
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get('GGUF_TOOLS', os.path.join(here, '..', '..', 'shared', 'tools')))
import gguf  # noqa: E402

# type id, bytes per 256-weight block, float32 row scale?, offset of an fp16 block scale (or None)
TYPES = {
    'IQ2_KT': (153, 68, True, None), 'IQ3_KT': (154, 100, True, None), 'IQ4_KT': (155, 128, True, None),
    'IQ1_KT': (158, 56, True, None),
    'IQ2_XXS': (16, 66, False, 0), 'IQ2_XS': (17, 74, False, 0), 'IQ3_XXS': (18, 98, False, 0),
    'IQ1_S': (19, 50, False, 0), 'IQ3_S': (21, 110, False, 0), 'IQ2_S': (22, 82, False, 0),
}


# The reference's own 4-row IQ1 forms: type id, bytes per 32 columns of a 4-row group (after the
# group's 4 fp16 row scales).
R4_TYPES = {'IQ1_S_R4': (219, 24), 'IQ1_M_R4': (229, 28)}


def random_r4_rows(rng, rows, ne0, spec):
    type_id, block_bytes = spec
    groups, nb = rows // 4, ne0 // 32
    blocks = rng.integers(0, 256, size=(groups, nb * block_bytes), dtype=np.uint8)
    # weight = d_k x multiplier (<= 15) x (grid value +- 1/8): |w| ~ 1 / sqrt(ne0)
    d = np.full((groups, 4), 1.0 / np.sqrt(ne0) / 8.0, dtype=np.float16)
    return np.concatenate([d.view(np.uint8), blocks], axis=1).tobytes()


def random_rows(rng, rows, ne0, spec):
    type_id, block_bytes, row_scale, d_off = spec
    nb = ne0 // 256
    blocks = rng.integers(0, 256, size=(rows, nb, block_bytes), dtype=np.uint8)
    # outputs of order one for unit activations: |w| ~ 1 / sqrt(ne0)
    target = 1.0 / np.sqrt(ne0)
    if row_scale:
        d = np.full((rows, 1), target / (64.0 * 60.0), dtype=np.float32)  # scale code x trellis value ~ 64 x 60
        return np.concatenate([d.view(np.uint8), blocks.reshape(rows, -1)], axis=1).tobytes()
    blocks[:, :, d_off:d_off + 2] = np.frombuffer(np.float16(target / 8.0).tobytes(), np.uint8)
    return blocks.tobytes()


def main(argv):
    if len(argv) < 4 or (argv[3] not in TYPES and argv[3] not in R4_TYPES):
        sys.exit(__doc__.strip())
    src, out, tname = argv[1], argv[2], argv[3]
    seed = int(argv[argv.index('--seed') + 1]) if '--seed' in argv else 1
    r4 = tname in R4_TYPES
    spec = R4_TYPES[tname] if r4 else TYPES[tname]
    rng = np.random.default_rng(seed)
    r = gguf.Reader(src)
    w = gguf.Writer(align=r.get('general.alignment', 32))
    for key, (t, v, et) in r.kv.items():
        w.add(key, t, v, et)
    # byte length of each tensor: distance to the next offset (tensors are stored in offset order)
    offs = sorted(off for _, _, _, off in r.tensors) + [len(r.buf) - r.data_start]
    replaced = 0
    for name, dims, ty, off in r.tensors:
        nxt = offs[offs.index(off) + 1]
        if name.startswith('blk.') and name.endswith('.weight') and len(dims) == 2 and dims[0] % 256 == 0 and \
                (not r4 or dims[1] % 4 == 0):
            make = random_r4_rows if r4 else random_rows
            w.tensor(name, None, spec[0], dims, make(rng, dims[1], dims[0], spec))
            replaced += 1
        else:
            w.tensor(name, None, ty, dims, r.buf[r.data_start + off:r.data_start + nxt])
    w.write(out)
    print(f'{out}: {replaced} matrices as random {tname}')


if __name__ == '__main__':
    main(sys.argv)
