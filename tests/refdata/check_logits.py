#!/usr/bin/python3
"""Runs `ikllm logits` on reference models and checks them with ../shared/tools/compare_logits.py.

usage: check_logits.py IKLLM_CLI SHARED_DIR [--args "EXTRA CLI ARGS"] MODEL_STEM [MODEL_STEM ...]
A stem names refdata/{models,quant}/STEM.gguf and refdata/refs/STEM/; the stem --all-quant stands
for every quantized model of refdata/quant with references. Prints 'N passed, M failed'.
Exits 0 (with a message) when the reference data is absent.
"""
import os, subprocess, sys, tempfile

def main():
    cli, shared, stems = sys.argv[1], sys.argv[2], sys.argv[3:]
    extra = []
    if stems[:1] == ['--args']:  # e.g. placement flags: --args "-ngl 99 -ot exps=CPU"
        extra, stems = stems[1].split(), stems[2:]
    R = os.path.join(shared, 'refdata')
    cmp = os.path.join(shared, 'tools', 'compare_logits.py')
    if not os.path.exists(cmp):
        print('reference data not present; skipping')
        print('0 passed, 0 failed')
        return 0
    if '--all-quant' in stems:
        quant = sorted(f[:-5] for f in os.listdir(f'{R}/quant') if f.endswith('.gguf'))
        stems = [s for s in stems if s != '--all-quant'] + [q for q in quant if os.path.exists(f'{R}/refs/{q}/logits.f32')]
    ok = bad = 0
    for stem in stems:
        model = next((p for p in (f'{R}/quant/{stem}.gguf', f'{R}/models/{stem}.gguf') if os.path.exists(p)), None)
        ref = f'{R}/refs/{stem}'
        kind = 'float' if stem.endswith(('-f16', '-f32', '-F16')) else 'quant'
        n_vocab = os.path.getsize(f'{ref}/logits.f32') // 4 // len(open(f'{ref}/tokens.txt').read().split())
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([cli, 'logits', '-m', model, '--tokens', f'{ref}/tokens.txt', '--out', f'{d}/l.f32',
                                '--then', f'{ref}/greedy.txt', '--then-out', f'{d}/s.f32', '-t', '2'] + extra,
                               capture_output=True, timeout=600)
            if r.returncode != 0:
                print(f'FAIL {stem}: {r.stderr.decode()[-300:]}')
                bad += 1
                continue
            verdicts = []
            for a, b in (('logits.f32', 'l.f32'), ('steps.f32', 's.f32')):
                c = subprocess.run([sys.executable, cmp, f'{ref}/{a}', f'{d}/{b}', str(n_vocab), kind],
                                   capture_output=True, text=True)
                verdicts.append(c.stdout.strip())
            good = all(v.endswith('PASS') for v in verdicts)
            print(('ok   ' if good else 'FAIL ') + stem + ': ' + ' | '.join(verdicts))
            ok, bad = ok + good, bad + (not good)
    print(f'{ok} passed, {bad} failed')
    return 1 if bad else 0

if __name__ == '__main__':
    sys.exit(main())
