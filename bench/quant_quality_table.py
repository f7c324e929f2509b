#!/usr/bin/python3
"""Quality of every quantized variant of refdata's llama-q model against its F32 file: perplexity and
KL divergence on generated text, one markdown table ordered by bits per weight.

usage: bench/quant_quality_table.py [--cli build/ikllm] [--shared ../shared] [--ctx 128] [--chunks 16]
                                    [--words 4000] [--seed 11] [--threads 2] [--out table.md]
The model has random weights, so perplexities are large (above the vocabulary size); what the table
shows is how far each type moves the F32 model's distributions, which should shrink as bits per weight
grow. bpw = 8 * bytes / elements over the 2-D weight tensors (mixes such as Q4_K_M count all types).
"""
import argparse, json, os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'refdata'))
from gen_text import make_text  # noqa: E402


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f'failed: {" ".join(args)}\n{r.stderr[-500:]}')
    return r.stdout


def weight_stats(cli, model):
    """(bits per weight over 2-D tensors, sorted set of their type names)."""
    bits = elems = 0
    types = set()
    for line in run([cli, 'info', '-m', model]).splitlines():
        m = re.match(r'\s+(\S+)\s+(\S+)\s+\[(\d+), (\d+), (\d+), (\d+)\]\s+(\d+)$', line)
        if m and int(m.group(4)) > 1:
            n = int(m.group(3)) * int(m.group(4)) * int(m.group(5)) * int(m.group(6))
            bits += 8 * int(m.group(7))
            elems += n
            types.add(m.group(2))
    return bits / elems, sorted(types)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cli', default=os.path.join(ROOT, 'build', 'ikllm'))
    ap.add_argument('--shared', default=os.path.join(ROOT, '..', 'shared'))
    ap.add_argument('--ctx', type=int, default=128)
    ap.add_argument('--chunks', type=int, default=16)
    ap.add_argument('--words', type=int, default=4000)
    ap.add_argument('--seed', type=int, default=11)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--out', default='')
    a = ap.parse_args()
    R = os.path.join(a.shared, 'refdata')
    base = os.path.join(R, 'models', 'llama-q-f32.gguf')
    if not os.path.exists(base):
        sys.exit(f'reference data not found under {R}')
    common = ['-c', str(a.ctx), '-t', str(a.threads), '--format', 'jsonl']
    rows = []
    with tempfile.TemporaryDirectory() as d:
        text, kld = os.path.join(d, 'text.txt'), os.path.join(d, 'base.kld')
        with open(text, 'w') as f:
            f.write(make_text(a.words, a.seed))
        # Base: lossless f32 logits (the vocabulary is small).
        b = json.loads(run([a.cli, 'perplexity', '-m', base, '-f', text, '--chunks', str(a.chunks), '--kl-divergence-base',
                            kld, '--kl-base-encoding', 'f32'] + common).splitlines()[-1])
        bpw, types = weight_stats(a.cli, base)
        rows.append(('F32 (base)', bpw, types, b, None))
        quant = sorted(f for f in os.listdir(os.path.join(R, 'quant')) if f.startswith('llama-q-') and f.endswith('.gguf'))
        for i, f in enumerate(quant):
            path = os.path.join(R, 'quant', f)
            print(f'[{i + 1}/{len(quant)}] {f}', file=sys.stderr)
            s = json.loads(run([a.cli, 'perplexity', '-m', path, '--kl-divergence', '--kl-divergence-base', kld] +
                               common).splitlines()[-1])
            bpw, types = weight_stats(a.cli, path)
            rows.append((f[len('llama-q-'):-len('.gguf')], bpw, types, s, True))
    rows.sort(key=lambda r: (-r[1], r[3].get('kld_mean', 0)))
    out = [f'Quantized llama-q vs llama-q-f32: {b["n_chunks"]} chunks of {a.ctx} tokens, {b["tokens_scored"]} scored '
           f'tokens of generated text (gen_text.py {a.words} words, seed {a.seed}); F32 PPL = {b["ppl"]:.2f} ± '
           f'{b["ppl_err"]:.2f}.', '',
           '| type | bpw | weight types | PPL | PPL(Q)/PPL(F32) | mean KLD | median KLD | 90% | 95% | 99% | 99.9% | max KLD | mean Δp | same top |',
           '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
    for name, bpw, types, s, q in rows:
        if not q:
            out.append(f'| {name} | {bpw:.2f} | {"+".join(types)} | {s["ppl"]:.1f} ± {s["ppl_err"]:.1f} | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 100% |')
            continue
        out.append(f'| {name} | {bpw:.2f} | {"+".join(types)} | {s["ppl"]:.1f} ± {s["ppl_err"]:.1f} | '
                   f'{s["ppl_ratio"]:.4f} ± {s["ppl_ratio_err"]:.4f} | {s["kld_mean"]:.5f} ± {s["kld_mean_err"]:.5f} | '
                   f'{s["kld_median"]:.5f} | {s["kld_p90"]:.5f} | {s["kld_p95"]:.5f} | {s["kld_p99"]:.5f} | '
                   f'{s["kld_p999"]:.5f} | {s["kld_max"]:.5f} | {100 * s["dp_mean"]:+.4f}% | {100 * s["same_top"]:.2f}% |')
    table = '\n'.join(out) + '\n'
    sys.stdout.write(table)
    if a.out:
        with open(a.out, 'w') as f:
            f.write(table)


if __name__ == '__main__':
    main()
