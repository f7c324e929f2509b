#!/usr/bin/env python3
"""Plots `ikllm bench --sweep --format jsonl` runs side by side as one SVG (no dependencies).

usage: plot_sweep.py OUT.svg RUN1.jsonl[=LABEL] [RUN2.jsonl[=LABEL] ...]
Two panels: prompt processing (S_PP t/s) and generation (S_TG t/s) against the KV depth N_KV.
"""
import json, sys

COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e']


def load(arg):
    path, _, label = arg.partition('=')
    rows = [json.loads(l) for l in open(path) if l.strip().startswith('{')]
    return label or path, rows


def panel(x0, title, key, runs, w=420, h=300):
    pts = [(r['n_kv'], r[key]) for _, rows in runs for r in rows]
    xmax = max(p[0] for p in pts) or 1
    ymax = max(p[1] for p in pts) * 1.1 or 1
    sx = lambda x: x0 + 50 + (w - 70) * x / xmax
    sy = lambda y: 30 + (h - 70) * (1 - y / ymax)
    out = [f'<text x="{x0 + w / 2}" y="18" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(xmax)}" y2="{sy(0)}" stroke="black"/>',
           f'<line x1="{sx(0)}" y1="{sy(0)}" x2="{sx(0)}" y2="{sy(ymax)}" stroke="black"/>',
           f'<text x="{x0 + w / 2}" y="{h - 8}" text-anchor="middle" font-size="11">N_KV (tokens in cache)</text>']
    for i in range(5):
        y = ymax * i / 4
        out.append(f'<text x="{sx(0) - 4}" y="{sy(y) + 4}" text-anchor="end" font-size="10">{y:.0f}</text>')
        x = xmax * i / 4
        out.append(f'<text x="{sx(x)}" y="{sy(0) + 14}" text-anchor="middle" font-size="10">{x:.0f}</text>')
    for i, (label, rows) in enumerate(runs):
        c = COLORS[i % len(COLORS)]
        path = ' '.join(f'{sx(r["n_kv"]):.1f},{sy(r[key]):.1f}' for r in rows)
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{path}"/>')
        out.append(f'<text x="{x0 + w - 10}" y="{40 + 14 * i}" text-anchor="end" font-size="11" fill="{c}">{label}</text>')
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    runs = [load(a) for a in sys.argv[2:]]
    body = panel(0, 'prompt processing (t/s)', 's_pp', runs) + panel(440, 'generation (t/s)', 's_tg', runs)
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="880" height="300" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>'] + body + ['</svg>']
    open(sys.argv[1], 'w').write('\n'.join(svg) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
