#!/usr/bin/env python3
"""Quantizer quality vs the reference quantizer (issue: 'each type's RMSE within 2%').

For every ../shared/refdata/quant/llama-q-<TYPE>.gguf whose preset is a single type, quantize
llama-q-f32.gguf with `ikllm quantize --pure TYPE` (using an importance matrix made by
`ikllm imatrix` when the type needs one) and compare, tensor by tensor where the reference file
holds the same type, the RMSE of the dequantized weights against the f32 originals.

usage: quant_rmse.py IKLLM_CLI [--types T1,T2] [--tolerance 0.02] [--calib TEXT]
Exit 0 when every compared type is within tolerance (ours <= ref * (1 + tol)), 1 otherwise,
77 (skip) when the reference data is absent.
"""
import os, subprocess, sys, tempfile
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get('IKLLM_SHARED', os.path.join(HERE, '..', '..', '..', 'shared'))
R = os.path.join(SHARED, 'refdata')
sys.path.insert(0, os.path.join(SHARED, 'tools'))


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__); return 2
    cli = args[0]
    tol = float(args[args.index('--tolerance') + 1]) if '--tolerance' in args else 0.02
    only = args[args.index('--types') + 1].split(',') if '--types' in args else None
    calib = args[args.index('--calib') + 1] if '--calib' in args else os.path.join(SHARED, 'docs', 'architectures.md')
    base = os.path.join(R, 'models', 'llama-q-f32.gguf')
    if not os.path.exists(base):
        print(f'SKIP: reference data not found under {R}'); return 77
    worst = []
    with tempfile.TemporaryDirectory() as d:
        imat = os.path.join(d, 'imatrix.dat')
        subprocess.run([cli, 'imatrix', '-m', base, '-f', calib, '-o', imat, '-c', '128', '-t', '2'],
                       check=True, capture_output=True)

        def deq(model, tensor):
            out = os.path.join(d, 'deq.f32')
            subprocess.run([cli, 'dequant', '-m', model, '--tensor', tensor, '--out', out], check=True,
                           capture_output=True)
            return np.fromfile(out, dtype=np.float32)

        orig = {}
        fails = 0
        for f in sorted(os.listdir(os.path.join(R, 'quant'))):
            if not (f.startswith('llama-q-') and f.endswith('.gguf')):
                continue
            preset = f[len('llama-q-'):-len('.gguf')]
            if preset in ('F16', 'BF16', 'BF16_R16') or (only and preset not in only):
                continue
            ref = os.path.join(R, 'quant', f)
            rtypes = tensor_types(cli, ref)
            mine = os.path.join(d, 'mine.gguf')
            p = subprocess.run([cli, 'quantize', base, mine, preset, '--pure', '--imatrix', imat],
                               capture_output=True, text=True)
            if p.returncode != 0:
                print(f'{preset:12s} FAIL quantize: {p.stderr.strip()[-200:]}'); fails += 1; continue
            mtypes = tensor_types(cli, mine)
            se_ref = se_mine = 0.0; n = 0; compared = []
            for name, t in rtypes.items():
                if mtypes.get(name) != t or t == 'f32' or t in ('f16', 'bf16'):
                    continue
                if name not in orig:
                    orig[name] = deq(base, name)
                o = orig[name]
                a = deq(ref, name) - o
                b = deq(mine, name) - o
                se_ref += float(np.dot(a, a)); se_mine += float(np.dot(b, b)); n += o.size
                compared.append(name.replace('.weight', '').replace('blk.0.', ''))
            if not n:
                print(f'{preset:12s} (no tensor of the same type to compare)'); continue
            r_ref, r_mine = (se_ref / n) ** 0.5, (se_mine / n) ** 0.5
            ratio = r_mine / r_ref
            ok = ratio <= 1 + tol
            fails += not ok
            worst.append((ratio, preset))
            print(f'{preset:12s} rmse ref {r_ref:.5e} ours {r_mine:.5e} ratio {ratio:.4f} {"PASS" if ok else "FAIL"}'
                  f'  [{len(compared)} tensors]')
            os.remove(mine)
    print(f'{len(worst) - fails} passed, {fails} failed (tolerance {tol:.0%})')
    return 1 if fails else 0


def tensor_types(cli, model):
    p = subprocess.run([cli, 'info', '-m', model], capture_output=True, text=True, check=True)
    types = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith('.weight') and parts[2].startswith('['):
            types[parts[0]] = parts[1]
    return types


if __name__ == '__main__':
    sys.exit(main())
