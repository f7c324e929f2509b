#!/usr/bin/python3
"""`ikllm bench` smoke test on a small reference model: the JSONL form has one object per test with
the fields external checks read, consistent numbers (bound = bandwidth / bytes per token, the
bandwidth's median not above its best), -rtr gives the same tests, the table form runs, bad
options fail cleanly. Speed itself is not judged here (benchmarks, not tests, do that).

usage: check_bench_cli.py IKLLM_CLI [SHARED_DIR]   exit 0 pass, 1 fail, 77 skip (no reference data)
"""
import json, os, subprocess

from cli_check import CliCheck

c = CliCheck('quant/llama-q-Q4_0.gguf')
cli, model, check, fails = c.cli, c.model, c.check, c.fails


def bench(*args):
    r = subprocess.run([cli, 'bench', '-m', model, '-p', '16', '-n', '8', '-t', '2', '-r', '2'] + list(args),
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


for extra in ([], ['-rtr']):
    rc, out, err = bench('--format', 'jsonl', *extra)
    check(rc == 0, 'bench --format jsonl %s exits 0 (%s)' % (extra, err))
    rows = [json.loads(line) for line in out.splitlines() if line.startswith('{')]
    check([r['test'] for r in rows] == ['pp16', 'tg8'], 'one object per test %s: %s' % (extra, rows))
    for r in rows:
        for key in ('tokens_per_s', 'stddev', 'read_bandwidth_gbs', 'read_bandwidth_median_gbs',
                    'bandwidth_bound_tg', 'bytes_per_token', 'peak_rss_mib'):
            check(key in r, 'field %s in %s' % (key, r))
        if fails:
            break
        check(r['tokens_per_s'] > 0 and r['stddev'] >= 0, 'speed and spread %s' % r)
        check(0 < r['read_bandwidth_median_gbs'] <= r['read_bandwidth_gbs'], 'median <= best bandwidth %s' % r)
        bound = r['read_bandwidth_gbs'] * 1e9 / r['bytes_per_token']
        check(abs(r['bandwidth_bound_tg'] - bound) <= 1e-3 * bound + 1e-3, 'bound = bandwidth / bytes %s' % r)
        check(r['reps'] == 2 and r['threads'] == 2, 'reps and threads echoed %s' % r)
        paired = ('bound_fraction_paired_min', 'bound_fraction_paired', 'bound_fraction_paired_max')
        if r['test'].startswith('tg'):
            check(all(k in r for k in paired), 'paired fraction fields in the tg row %s' % r)
            if not fails:
                lo, mid, hi = (r[k] for k in paired)
                check(0 < lo <= mid <= hi, 'paired fraction min <= median <= max %s' % r)
        else:
            check(not any(k in r for k in paired), 'no paired fraction in a pp row %s' % r)

# With a GPU (the CTest entry refdata_bench_cli_gpu_emu points IKLLM_CUDA_PLUGIN at the emulated one,
# which reports an H100's memory clock and bus: 3352.32 GB/s): weights split between the CPU and
# CUDA0 are reported per device, and the bound is one token's bytes on each device at its bandwidth.
if os.environ.get('IKLLM_CUDA_PLUGIN') and not fails:
    rc, out, err = bench('--format', 'jsonl', '-ngl', '99', '-ot', 'ffn_down=CPU')
    check(rc == 0, 'bench -ngl 99 -ot ffn_down=CPU exits 0 (%s)' % err)
    rows = [json.loads(line) for line in out.splitlines() if line.startswith('{')]
    for r in rows:
        check('devices' in r and 'device_bound_tg' in r, 'device fields with weights on a GPU %s' % r)
        if fails:
            break
        devs = {d['name']: d for d in r['devices']}
        check(set(devs) == {'CPU', 'CUDA0'}, 'devices CPU and CUDA0 %s' % r['devices'])
        check(devs['CPU']['bytes_per_token'] > 0 and devs['CUDA0']['bytes_per_token'] > 0, 'both read weights %s' % r)
        check(abs(sum(d['bytes_per_token'] for d in r['devices']) - r['bytes_per_token']) <= len(devs),
              'device bytes add up to bytes_per_token %s' % r)
        check(abs(devs['CUDA0']['bandwidth_gbs'] - 3352.32) < 1e-3, 'CUDA0 peak from clock and bus %s' % devs['CUDA0'])
        check(abs(devs['CPU']['bandwidth_gbs'] - r['read_bandwidth_gbs']) <= 1e-3 * r['read_bandwidth_gbs'],
              'CPU at the measured bandwidth %s' % r)
        secs = sum(d['bytes_per_token'] / (d['bandwidth_gbs'] * 1e9) for d in r['devices'])
        check(abs(r['device_bound_tg'] - 1 / secs) <= 1e-3 / secs, 'device bound = 1 / sum(bytes / bandwidth) %s' % r)
    rc, out, err = bench('-ngl', '99')
    check(rc == 0 and 'weights read per token by device:' in out and 'CUDA0' in out and
          'device-memory-bound tg' in out and '% of it' in out, 'table form with a GPU (%s)' % out[-400:])

rc, out, err = bench()
check(rc == 0 and '| tg8 |' in out and 'best of 5 passes; median' in out, 'table form (%s)' % err)
check('tg / bound of the bandwidth around each rep: median' in out, 'table form prints the paired fraction')
rc, out, err = bench('-r', '0')
check(rc != 0 and err.strip() != '', 'bad -r fails with a message')

c.finish('check_bench_cli')
