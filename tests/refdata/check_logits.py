#!/usr/bin/python3
"""Runs `ikllm logits` on reference models and checks them with ../shared/tools/compare_logits.py.

usage: check_logits.py IKLLM_CLI SHARED_DIR [--args "EXTRA CLI ARGS"] [--cpu-spread [--spread-factor F]]
                       MODEL_STEM [MODEL_STEM ...]
A stem names refdata/{models,quant}/STEM.gguf and refdata/refs/STEM/; the stem --all-quant stands
for every quantized model of refdata/quant with references. Prints 'N passed, M failed'.
Exits 0 (with a message) when the reference data is absent.

--cpu-spread (for GPU placements): a model that misses its class is run again on the CPU alone
with the CPU backend's other kernel sets: IKLLM_ISA=avx2 and scalar (the same math in other
summation orders; their plain kernels reproduce the reference's logits on every reference model),
each also with -rtr (the reference's interleaved kernels: the same products summed in another
order, Q4_K_R4 also rounding activations per 256 columns, as the reference's own -rtr does). If
one of those misses the same part (batch or steps) of the reference by as much or more, the model
amplifies rounding-level differences beyond what the class can judge, and the line says so
('ok~', counted as passed, both numbers shown); otherwise it stays a failure. Our own kernel set
(this CPU's ISA with the same arguments) is no witness. --spread-factor F: a witness that misses
by F times ours or more (default 1; the -rtr check takes 0.8: on CPUs without AVX-512 -rtr gives
the reference's interleaved forms, whose AVX2 and scalar kernels sum in different orders).
"""
import os, re, subprocess, sys, tempfile

PARTS = (('logits.f32', 'l.f32', 'batch'), ('steps.f32', 's.f32', 'steps'))


def run_model(cli, model, ref, extra, cmp, n_vocab, kind, env=None):
    """Verdict lines per part, or an error string."""
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([cli, 'logits', '-m', model, '--tokens', f'{ref}/tokens.txt', '--out', f'{d}/l.f32',
                            '--then', f'{ref}/greedy.txt', '--then-out', f'{d}/s.f32', '-t', '2'] + extra,
                           capture_output=True, timeout=600, env=env)
        if r.returncode != 0:
            return r.stderr.decode()[-300:]
        verdicts = []
        for a, b, _ in PARTS:
            c = subprocess.run([sys.executable, cmp, f'{ref}/{a}', f'{d}/{b}', str(n_vocab), kind],
                               capture_output=True, text=True)
            verdicts.append(c.stdout.strip())
        return verdicts


def rms_of(verdict):
    m = re.search(r'rms_rel=([0-9.e+-]+)', verdict)
    return float(m.group(1)) if m else float('inf')


def own_isa():
    """The kernel set our own run takes: IKLLM_ISA, else AVX-512 where the CPU has every extension
    the AVX-512 kernels need (kernels/matmul.cpp), else AVX2."""
    if os.environ.get('IKLLM_ISA'):
        return os.environ['IKLLM_ISA']
    try:
        flags = set(next(l for l in open('/proc/cpuinfo') if l.startswith('flags')).split())
    except (OSError, StopIteration):
        return 'avx2'
    need = {'avx512f', 'avx512bw', 'avx512vl', 'avx512dq', 'avx512_vnni', 'avx512_bf16', 'avx512vbmi'}
    return 'avx512' if need <= flags else 'avx2'


def cpu_spread(cli, model, ref, cmp, n_vocab, kind, ours, extra, factor):
    """A CPU kernel set that misses every part we miss by at least as much (factor x ours), as a
    note; else None. Our own kernel set (this CPU's ISA with our arguments) is not a witness."""
    bad = [i for i, v in enumerate(ours) if not v.endswith('PASS')]
    for isa, args in (('avx2', []), ('scalar', []), ('avx2', ['-rtr']), ('scalar', ['-rtr'])):
        if isa == own_isa() and args == extra:
            continue
        v = run_model(cli, model, ref, args, cmp, n_vocab, kind, env=dict(os.environ, IKLLM_ISA=isa))
        if isinstance(v, str):
            continue
        if all(not v[i].endswith('PASS') and rms_of(v[i]) >= factor * rms_of(ours[i]) for i in bad):
            what = ', '.join(f'{PARTS[i][2]} rms_rel {rms_of(v[i]):.2e} vs ours {rms_of(ours[i]):.2e}' for i in bad)
            how = ' '.join([f'IKLLM_ISA={isa}'] + args)
            return f'within the CPU backend\'s own spread: {how} on the CPU misses too ({what})'
    return None


def main():
    cli, shared, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    extra, stems, spread, factor = [], [], False, 1.0
    while rest:  # options anywhere among the stems
        a = rest.pop(0)
        if a == '--args' and rest:  # e.g. placement flags: --args "-ngl 99 -ot exps=CPU"
            extra = rest.pop(0).split()
        elif a == '--cpu-spread':
            spread = True
        elif a == '--spread-factor' and rest:
            factor = float(rest.pop(0))
        else:
            stems.append(a)
    R = os.path.join(shared, 'refdata')
    cmp = os.path.join(shared, 'tools', 'compare_logits.py')
    if not os.path.exists(cmp):
        print('reference data not present; skipping')
        print('0 passed, 0 failed')
        return 0
    if '--all-quant' in stems:
        quant = sorted(f[:-5] for f in os.listdir(f'{R}/quant') if f.endswith('.gguf'))
        stems = [s for s in stems if s != '--all-quant'] + [q for q in quant if os.path.exists(f'{R}/refs/{q}/logits.f32')]
    ok = bad = spread_ok = 0
    for stem in stems:
        model = next((p for p in (f'{R}/quant/{stem}.gguf', f'{R}/models/{stem}.gguf') if os.path.exists(p)), None)
        ref = f'{R}/refs/{stem}'
        kind = 'float' if stem.endswith(('-f16', '-f32', '-F16')) else 'quant'
        n_vocab = os.path.getsize(f'{ref}/logits.f32') // 4 // len(open(f'{ref}/tokens.txt').read().split())
        verdicts = run_model(cli, model, ref, extra, cmp, n_vocab, kind)
        if isinstance(verdicts, str):
            print(f'FAIL {stem}: {verdicts}')
            bad += 1
            continue
        good = all(v.endswith('PASS') for v in verdicts)
        note = None if good or not spread else cpu_spread(cli, model, ref, cmp, n_vocab, kind, verdicts, extra, factor)
        tag = 'ok   ' if good else ('ok~  ' if note else 'FAIL ')
        print(tag + stem + ': ' + ' | '.join(verdicts) + (f'  [{note}]' if note else ''))
        spread_ok += note is not None
        good = good or note is not None
        ok, bad = ok + good, bad + (not good)
    print(f'{ok} passed' + (f' ({spread_ok} ok~: within the CPU\'s own spread)' if spread_ok else '') + f', {bad} failed')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
