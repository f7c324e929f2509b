#!/usr/bin/python3
"""`ikllm perplexity` and its KL-divergence mode against an independent numpy evaluation.

For refdata's llama-q model (F32) and some of its quantized variants, on generated text:
  - tokenizes with `ikllm tokenize`, cuts CTX-token windows (BOS first), dumps every position's logits
    of each window with `ikllm logits` (one batch), and computes in float64 the perplexity, its error,
    and against the F32 logits: KLD (mean, median, percentiles, max), PPL ratio, mean dp, same top;
  - runs `ikllm perplexity --format jsonl` and compares every figure (agreement to float rounding).
    The F32 model runs in micro-batches smaller than the window (its numerics do not depend on the
    batch size); quantized ones in one batch per window as `ikllm logits` did, because several
    quantized kernels, like the reference's, switch numerics at 32 tokens per call;
  - checks the u16-encoded base file approximates the lossless f32 one closely, that the F32 model
    against its own base gives KLD 0, and that a truncated base file is refused.

usage: check_perplexity.py IKLLM_CLI [SHARED_DIR]   exit 0 pass, 1 fail, 77 skip (no reference data)
"""
import json, os, subprocess, sys, tempfile
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_text import make_text  # noqa: E402

# Windows of 48 tokens keep every call below the 64-token prompt-batch switch (tile-unit matmuls and
# attention, whose bf16 numerics differ from the per-token kernels), so the F32 model's micro-batches
# reproduce `ikllm logits`' single batch to float rounding.
CTX, CHUNKS, BATCH = 48, 5, 24
QUANTS = ('Q8_0', 'Q4_0', 'IQ2_XS')
fails = []
worst = [0.0, '']  # largest relative deviation from numpy among exact (f32) comparisons


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


def jsonl(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def close(name, got, want, rtol, atol=0.0):
    ok = got is not None and abs(got - want) <= atol + rtol * abs(want)
    if ok and rtol and 'u16' not in name and abs(want) > 1e-12:
        rel = abs(got - want) / abs(want)
        if rel > worst[0]:
            worst[:] = [rel, name]
    if not ok:
        fails.append(f'{name}: got {got!r}, numpy {want!r}')
    return ok


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    shared = sys.argv[2] if len(sys.argv) > 2 else os.environ.get('IKLLM_SHARED', os.path.join(HERE, '..', '..', '..', 'shared'))
    R = os.path.join(shared, 'refdata')
    base = os.path.join(R, 'models', 'llama-q-f32.gguf')
    if not os.path.exists(base):
        print(f'SKIP: reference data not found under {R}')
        return 77
    models = {'F32': base}
    models.update({q: os.path.join(R, 'quant', f'llama-q-{q}.gguf') for q in QUANTS})
    with tempfile.TemporaryDirectory() as d:
        text = os.path.join(d, 'text.txt')
        with open(text, 'w') as f:
            f.write(make_text(1200, seed=7))
        tok = run([cli, 'tokenize', '-m', base, '-f', text])
        assert tok.returncode == 0, tok.stderr
        ids = [int(x) for x in tok.stdout.split()]
        bos = ids[0]  # the model adds BOS (refdata README: BOS = 1)
        assert bos == 1 and len(ids) >= CTX * CHUNKS, (bos, len(ids))
        windows = []
        for c in range(CHUNKS):
            w = ids[c * CTX:(c + 1) * CTX]
            w[0] = bos
            windows.append(np.array(w))
        first = CTX // 2

        # numpy: log-probabilities of every scored position, per model
        lp = {}
        for name, path in models.items():
            rows = []
            for c, w in enumerate(windows):
                tf, lf = os.path.join(d, 'w.txt'), os.path.join(d, 'l.f32')
                with open(tf, 'w') as f:
                    f.write(' '.join(map(str, w)))
                # logits of the rows perplexity requests (first .. CTX-1): the LM head's numerics
                # depend on its row count (Q6_K re-encodes from 64 rows, as the reference)
                r = run([cli, 'logits', '-m', path, '--tokens', tf, '--out', lf, '-c', str(CTX), '-t', '2',
                         '--logits-from', str(first)])
                assert r.returncode == 0, r.stderr
                logits = np.fromfile(lf, dtype=np.float32).reshape(CTX - first, -1)
                rows.append(log_softmax(logits[:-1]))  # predict tokens first+1 .. CTX-1
            lp[name] = rows
        targets = [w[first + 1:] for w in windows]

        def nll_of(name):
            return np.concatenate([-rows[np.arange(len(t)), t] for rows, t in zip(lp[name], targets)])

        def ppl_err(nll):
            m = nll.mean()
            var = (nll * nll).mean() - m * m
            return np.exp(m), np.exp(m) * np.sqrt(var / (len(nll) - 1))

        # ---- perplexity of every model
        def batch_of(name):
            return BATCH if name == 'F32' else CTX

        for name, path in models.items():
            r = run([cli, 'perplexity', '-m', path, '-f', text, '-c', str(CTX), '-b', str(batch_of(name)), '--chunks',
                     str(CHUNKS), '-t', '2', '--format', 'jsonl'])
            if r.returncode != 0:
                fails.append(f'perplexity {name}: {r.stderr[-300:]}')
                continue
            objs = jsonl(r.stdout)
            chunks = [o for o in objs if o['type'] == 'chunk']
            summ = objs[-1]
            nll = nll_of(name)
            per = len(nll) // CHUNKS
            for c, o in enumerate(chunks):
                close(f'{name} chunk {c + 1} ppl', o['chunk_ppl'], np.exp(nll[c * per:(c + 1) * per].mean()), 1e-6)
                close(f'{name} running ppl {c + 1}', o['ppl'], np.exp(nll[:(c + 1) * per].mean()), 1e-6)
            ppl, err = ppl_err(nll)
            close(f'{name} tokens', summ['tokens_scored'], len(nll), 0)
            close(f'{name} PPL', summ['ppl'], ppl, 1e-6)
            close(f'{name} PPL err', summ['ppl_err'], err, 1e-6)
            print(f'{name:7s} PPL {summ["ppl"]:.4f} +/- {summ["ppl_err"]:.4f}  (numpy {ppl:.4f} +/- {err:.4f})')
        # text mode prints the same final figure
        r = run([cli, 'perplexity', '-m', base, '-f', text, '-c', str(CTX), '--chunks', str(CHUNKS), '-t', '2'])
        ppl, err = ppl_err(nll_of('F32'))
        line = [l for l in r.stdout.splitlines() if l.startswith('Final estimate: PPL = ')]
        if not line or abs(float(line[0].split()[4]) - ppl) > 1e-3 * ppl:
            fails.append(f'text mode final line: {line}')

        # ---- KL divergence against the F32 base
        kf32, ku16 = os.path.join(d, 'base-f32.kld'), os.path.join(d, 'base-u16.kld')
        for kf, enc in ((kf32, 'f32'), (ku16, 'u16')):
            r = run([cli, 'perplexity', '-m', base, '-f', text, '-c', str(CTX), '-b', str(BATCH), '--chunks',
                     str(CHUNKS), '-t', '2', '--kl-divergence-base', kf, '--kl-base-encoding', enc])
            assert r.returncode == 0, r.stderr
        pb = np.concatenate(lp['F32'])
        for name in ('F32',) + QUANTS:
            pq = np.concatenate(lp[name])
            kld = (np.exp(pb) * (pb - pq)).sum(axis=1)
            tgt = np.concatenate(targets)
            idx = np.arange(len(tgt))
            lb, lq = pb[idx, tgt], pq[idx, tgt]
            d_nll = lb - lq  # nll(Q) - nll(base)
            dp = np.exp(lq) - np.exp(lb)
            same = (pq.argmax(axis=1) == pb.argmax(axis=1)).mean()
            want = {'kld_mean': kld.mean(), 'kld_median': np.percentile(kld, 50), 'kld_p90': np.percentile(kld, 90),
                    'kld_p95': np.percentile(kld, 95), 'kld_p99': np.percentile(kld, 99),
                    'kld_p999': np.percentile(kld, 99.9), 'kld_max': kld.max(),
                    'ppl_ratio': np.exp(d_nll.mean()), 'ln_ppl_ratio': d_nll.mean(), 'base_ppl': np.exp(-lb.mean()),
                    'dp_mean': dp.mean(), 'same_top': same}
            # atol 1e-7 nats: the KL run's output layer sees only the scored half of the window, while numpy
            # reads `ikllm logits` of the whole window; some kernels' float order depends on the tokens per
            # call (as the reference's does), so the logits agree to float rounding, not bit for bit.
            for kf, enc, rtol, atol in ((kf32, 'f32', 1e-6, 1e-7), (ku16, 'u16', 2e-3, 1e-6)):
                r = run([cli, 'perplexity', '-m', models[name], '--kl-divergence', '--kl-divergence-base', kf,
                         '-b', str(batch_of(name)), '-t', '2', '--format', 'jsonl'])
                if r.returncode != 0:
                    fails.append(f'kld {name} {enc}: {r.stderr[-300:]}')
                    continue
                s = jsonl(r.stdout)[-1]
                for k, v in want.items():
                    # ln ratio and dp are differences of near-equal numbers: compare absolutely
                    if k in ('ln_ppl_ratio', 'dp_mean'):
                        close(f'{name} {enc} {k}', s[k], v, 0, 1e-6 if enc == 'f32' else 1e-4)
                    elif k == 'same_top' and enc == 'u16':
                        close(f'{name} {enc} {k}', s[k], v, 0, 0)  # the base's top token is stored exactly
                    else:
                        close(f'{name} {enc} {k}', s[k], v, rtol, atol)
                if enc == 'f32':
                    print(f'{name:7s} KLD mean {s["kld_mean"]:.6f} (numpy {want["kld_mean"]:.6f})  p99 {s["kld_p99"]:.6f} '
                          f'max {s["kld_max"]:.6f}  PPL ratio {s["ppl_ratio"]:.5f}  dp {100 * s["dp_mean"]:+.4f}%  '
                          f'same top {100 * s["same_top"]:.2f}%')
            if name == 'F32':
                close('F32 vs its own base: KLD', want['kld_mean'], 0.0, 0, 1e-12)

        # a truncated base file is refused with a message
        tr = os.path.join(d, 'trunc.kld')
        with open(kf32, 'rb') as f, open(tr, 'wb') as g:
            g.write(f.read()[:-10])
        r = run([cli, 'perplexity', '-m', base, '--kl-divergence', '--kl-divergence-base', tr])
        if r.returncode == 0 or 'bytes' not in r.stderr:
            fails.append(f'truncated base file accepted: rc {r.returncode} {r.stderr[-200:]}')

    print(f'largest relative deviation from numpy (lossless paths): {worst[0]:.2e} ({worst[1]})')
    for f in fails:
        print('FAIL', f)
    print('check_perplexity:', 'FAIL' if fails else 'ok')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
