#!/usr/bin/python3
"""Embeddings and final hidden states through `ikllm embed`, checked with numpy.

usage: check_embed.py IKLLM_CLI SHARED_DIR MODEL_STEM [MODEL_STEM ...]
For each refdata/models/STEM.gguf (48 tokens of refs/STEM/tokens.txt in one batch):
  - hidden states h (--pooling none): W_out . h equals our own `ikllm logits` (rms_rel <= 1e-5: the
    LM head is exactly that product) and the reference engine's logits (float class, rms_rel <= 3e-3);
    h equals the least-squares solution of W_out . h = reference logits (W_out is 2000 x n_embd, well
    conditioned), i.e. the reference's own final hidden state (rms_rel <= 3e-3);
  - pooled vectors (mean / cls / last, with and without L2) equal numpy's pooling of h.
Then, on the first model: several text lines decoded together (one sequence each) equal each line
embedded alone, and the default pooling comes from `<arch>.pooling_type` (a copy of the model with the
key added; 4 = rank must be refused unless --pooling is given).
Exits 77 (skip) when the reference data is absent.
"""
import json, os, subprocess, sys, tempfile

import numpy as np


def rms_rel(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2) / np.mean(b ** 2)))


class Checker:
    def __init__(self, cli):
        self.cli, self.ok, self.bad = cli, 0, 0

    def expect(self, what, cond, detail=''):
        if cond:
            self.ok += 1
        else:
            self.bad += 1
            print(f'FAIL {what} {detail}')

    def run(self, *args, check=True):
        r = subprocess.run([self.cli, *args, '-t', '2'], capture_output=True, text=True, timeout=600)
        if check and r.returncode != 0:
            raise RuntimeError(f'{" ".join(args)}: {r.stderr[-400:]}')
        return r

    def tsv(self, *args):
        """Rows of `embed --format tsv` without their index columns."""
        out = self.run('embed', '--format', 'tsv', *args).stdout
        none = '--pooling' in args and args[args.index('--pooling') + 1] == 'none'
        return np.array([[float(x) for x in line.split('\t')[2 if none else 1:]] for line in out.strip().split('\n')])


def output_matrix(reader):
    names = {t[0] for t in reader.tensors}
    return reader.tensor('output.weight' if 'output.weight' in names else 'token_embd.weight').astype(np.float64)


def check_model(c, R, stem, d):
    import gguf
    model, ref = f'{R}/models/{stem}.gguf', f'{R}/refs/{stem}'
    toks = f'{ref}/tokens.txt'
    W = output_matrix(gguf.Reader(model))                               # [n_vocab, n_embd]
    H = c.tsv('-m', model, '--tokens', toks, '--pooling', 'none')         # [48, n_embd]
    T = len(open(toks).read().split())
    c.expect(f'{stem} hidden shape', H.shape == (T, W.shape[1]), str(H.shape))
    c.run('logits', '-m', model, '--tokens', toks, '--out', f'{d}/l.f32')
    ours = np.fromfile(f'{d}/l.f32', np.float32).reshape(T, -1).astype(np.float64)
    refl = np.fromfile(f'{ref}/logits.f32', np.float32).reshape(T, -1).astype(np.float64)
    P = H @ W.T
    e_ours, e_ref = rms_rel(P, ours), rms_rel(P, refl)
    h_ref = np.linalg.lstsq(W, refl.T, rcond=None)[0].T
    e_h = rms_rel(H, h_ref)
    c.expect(f'{stem} W.h = our logits', e_ours <= 1e-5, f'rms_rel {e_ours:.2e}')
    c.expect(f'{stem} W.h = reference logits', e_ref <= 3e-3, f'rms_rel {e_ref:.2e}')
    c.expect(f'{stem} h = reference hidden state', e_h <= 3e-3, f'rms_rel {e_h:.2e}')
    want = {'mean': H.mean(axis=0), 'cls': H[0], 'last': H[-1]}
    worst = 0.0
    for pooling, v in want.items():
        for norm in ('--normalize', '--no-normalize'):
            got = c.tsv('-m', model, '--tokens', toks, '--pooling', pooling, norm)
            exp = v / np.linalg.norm(v) if norm == '--normalize' else v
            e = rms_rel(got[0], exp)
            worst = max(worst, e)
            c.expect(f'{stem} pooling {pooling} {norm}', got.shape == (1, H.shape[1]) and e <= 1e-6, f'rms_rel {e:.2e}')
    print(f'{stem}: W.h vs ours {e_ours:.1e}, vs reference {e_ref:.1e}; h vs reference {e_h:.1e}; pooling {worst:.1e}')


def check_batching(c, model, d):
    lines = ['The quick brown fox jumps over the lazy dog.', 'Hello', 'Once upon a time, in a land far away',
             'Embeddings of several lines decoded together']
    with open(f'{d}/lines.txt', 'w') as f:
        f.write('\n'.join(lines[:2]) + '\n\n' + '\n'.join(lines[2:]) + '\n')   # a blank line is skipped
    for pooling in ('mean', 'last'):
        doc = json.loads(c.run('embed', '-m', model, '-f', f'{d}/lines.txt', '--pooling', pooling).stdout)
        together = np.array([e['embedding'] for e in doc['data']])
        c.expect(f'batched {pooling}: one vector per non-blank line', together.shape[0] == len(lines), str(together.shape))
        for i, line in enumerate(lines):
            with open(f'{d}/one.txt', 'w') as f:
                f.write(line)
            alone = c.tsv('-m', model, '-f', f'{d}/one.txt', '--whole', '--pooling', pooling)[0]
            e = rms_rel(together[i], alone)
            c.expect(f'batched {pooling} line {i} = alone', e <= 1e-5, f'rms_rel {e:.2e}')
            c.expect(f'batched {pooling} line {i} unit length', abs(np.linalg.norm(together[i]) - 1) < 1e-5)


def check_default_pooling(c, model, d):
    import gguf
    rd = gguf.Reader(model)
    arch = rd.get('general.architecture')
    sizes = {gguf.GGML_F32: 4, gguf.GGML_F16: 2}

    def copy_with(pooling_type):
        w = gguf.Writer(rd.get('general.alignment', 32))
        for k, (t, v, et) in rd.kv.items():
            w.add(k, t, v, et)
        w.u32(f'{arch}.pooling_type', pooling_type)
        for name, dims, ty, off in rd.tensors:
            n = int(np.prod(dims)) * sizes[ty]
            w.tensor(name, None, ty, dims, rd.buf[rd.data_start + off: rd.data_start + off + n])
        path = f'{d}/pooling{pooling_type}.gguf'
        w.write(path)
        return path

    with open(f'{d}/text.txt', 'w') as f:
        f.write('A sentence to embed\n')
    base = c.tsv('-m', model, '-f', f'{d}/text.txt', '--pooling', 'last')[0]
    p3 = copy_with(3)
    doc = json.loads(c.run('embed', '-m', p3, '-f', f'{d}/text.txt').stdout)
    c.expect('default pooling from pooling_type 3', doc['pooling'] == 'last', doc['pooling'])
    e = rms_rel(np.array(doc['data'][0]['embedding']), base)
    c.expect('default pooling 3 = --pooling last', e <= 1e-6, f'rms_rel {e:.2e}')
    doc = json.loads(c.run('embed', '-m', model, '-f', f'{d}/text.txt').stdout)
    c.expect('no pooling_type key: pooling none', doc['pooling'] == 'none', doc['pooling'])
    p4 = copy_with(4)
    r = c.run('embed', '-m', p4, '-f', f'{d}/text.txt', check=False)
    c.expect('pooling_type 4 (rank) refused', r.returncode != 0 and 'rank' in r.stderr, r.stderr[-200:])
    r = c.run('embed', '-m', p4, '-f', f'{d}/text.txt', '--pooling', 'mean', check=False)
    c.expect('pooling_type 4 overridden by --pooling', r.returncode == 0, r.stderr[-200:])


def main():
    cli, shared, stems = sys.argv[1], sys.argv[2], sys.argv[3:]
    R = os.path.join(shared, 'refdata')
    if not os.path.exists(os.path.join(shared, 'tools', 'gguf.py')) or not os.path.isdir(R):
        print('reference data not present; skipping')
        return 77
    sys.path.insert(0, os.path.join(shared, 'tools'))
    c = Checker(cli)
    with tempfile.TemporaryDirectory() as d:
        for stem in stems:
            check_model(c, R, stem, d)
        check_batching(c, f'{R}/models/{stems[0]}.gguf', d)
        check_default_pooling(c, f'{R}/models/{stems[0]}.gguf', d)
    print(f'{c.ok} passed, {c.bad} failed')
    return 1 if c.bad else 0


if __name__ == '__main__':
    sys.exit(main())
