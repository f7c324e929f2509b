#!/usr/bin/python3
"""`ikllm plan` smoke test: the JSON is valid, its numbers are consistent, the suggestion respects the budget, the table form runs, bad input fails cleanly.

usage: check_plan_cli.py IKLLM_CLI [SHARED_DIR]   exit 0 pass, 1 fail, 77 skip (no reference data)
"""
import json, subprocess

from cli_check import CliCheck

c = CliCheck('models/qwen3moe-tiny-f16.gguf')
cli, model, check, fails = c.cli, c.model, c.check, c.fails


def plan(*args):
    r = subprocess.run([cli, 'plan', '-m', model] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


rc, out, err = plan('-c', '1000', '-ngl', '1', '-ot', 'exps=CPU', '-ot', 'nothing=CPU', '--vram-budget', '4M',
                    '--json')
check(rc == 0, 'plan --json exits 0 (%s)' % err)
j = json.loads(out)
req = j['requested']
check(req['tensor_placement'] == 'exps=CPU,nothing=CPU', '-ot pieces joined with ","')
check(req['n_gpu_layers'] == 1, 'n_gpu_layers passed')
check(any('nothing=CPU' in line for line in req['report']), 'unmatched rule reported')
for d in req['devices'] + j['suggestion']['devices']:
    check(d['total'] == d['weights'] + d['kv'] + d['scratch'], 'total = weights + kv + scratch (%s)' % d)
check(sum(d['kv'] for d in req['devices']) == j['kv_bytes_per_token'] * 1000, 'KV bytes = per token x n_ctx')
sug = j['suggestion']
check(sug['vram_budget'] == 4 * 1024 * 1024, 'size suffix M = MiB')
gpu = [d for d in sug['devices'] if d['name'] == j['gpu']][0]
check(sug['fits'] == (gpu['total'] <= sug['vram_budget']), 'fits agrees with the numbers')
check(gpu['total'] <= sug['vram_budget'] or sug['n_gpu_layers'] == 0, 'suggestion within the budget')
# The suggestion, passed back as options, plans the same GPU total.
args = ['-c', '1000', '-ngl', str(sug['n_gpu_layers']), '--json']
if sug['tensor_placement']:
    args += ['-ot', sug['tensor_placement']]
rc, out2, err2 = plan(*args)
check(rc == 0, 'suggested flags accepted (%s)' % err2)
if rc == 0:
    again = [d for d in json.loads(out2)['requested']['devices'] if d['name'] == j['gpu']][0]
    check(again == gpu, 'suggested flags reproduce the suggested plan')
rc, out, err = plan('-c', '512', '--vram-budget', '1G')
check(rc == 0 and 'CUDA0' in out and 'suggestion' in out, 'table form prints devices and the suggestion')
rc, out, err = plan('-ot', 'exps=GPU')
check(rc != 0 and "unknown device 'GPU'" in err, 'bad rule fails naming it (%s)' % err.strip())
rc, out, err = plan('--vram-budget', '12x')
check(rc != 0 and '--vram-budget' in err, 'bad size fails')
c.finish('check_plan_cli')
