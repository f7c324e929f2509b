#!/usr/bin/python3
"""`ikllm chat` driven through piped stdin (one user message per line) on a reference model.

usage: check_chat_cli.py IKLLM_CLI SHARED_DIR
Uses refdata/models/qwen3-tiny-f16.gguf with the real Qwen3 chat template (the refdata models carry no
tokenizer.chat_template) and greedy sampling. Checks: exit status 0 and a reply line per turn; the second
turn reuses the KV cache of the first (and the reply equals the one computed without reuse); /reset
clears the cache; /save then /load in a new process continues the conversation with the same reply as
without the round trip (and reuses the restored cache); the same input gives the same output;
without a template the ChatML fallback is used. Exit 0 = pass, 1 = fail, 77 = reference data absent.
"""
import os, re, subprocess, sys, tempfile

TURN = re.compile(r'\[turn (\d+): prompt (\d+) tokens, reused (\d+), decoded (\d+) in [0-9.]+ s; generated (\d+) in')


def chat(cli, model, lines, *extra):
    r = subprocess.run([cli, 'chat', '-m', model, '-n', '16', '--temp', '0', '-t', '2', '--stats', *extra],
                       input='\n'.join(lines) + '\n', capture_output=True, text=True, timeout=600)
    turns = [tuple(int(x) for x in m.groups()) for m in TURN.finditer(r.stderr)]
    return r, turns


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    cli, shared = sys.argv[1], sys.argv[2]
    model = os.path.join(shared, 'refdata', 'models', 'qwen3-tiny-f16.gguf')
    tmpl = os.path.join(shared, 'refdata', 'templates', 'Qwen-Qwen3-0.6B.jinja')
    if not (os.path.exists(model) and os.path.exists(tmpl)):
        print('reference data not present; skipping')
        return 77
    failures = []

    def expect(cond, what):
        print(('ok   ' if cond else 'FAIL ') + what)
        if not cond:
            failures.append(what)

    tmpdir = tempfile.mkdtemp(prefix='ikllm_chat_')
    state = os.path.join(tmpdir, 'state.bin')
    lines = ['Hello there!', 'What is 2 + 2? Answer in 日本語.', f'/save {state}', f'/load {state}', '/reset',
             'Once more.']
    r, turns = chat(cli, model, lines, '--template', tmpl, '--system', 'Be brief.')
    expect(r.returncode == 0, f'exit status 0 (got {r.returncode}: {r.stderr[-300:]})')
    expect(len(turns) == 3, f'three turns answered (stats: {turns})')
    expect(r.stdout.count('\n') >= 3 and r.stdout.strip() != '', 'a reply line per turn on stdout')
    if len(turns) == 3:
        (_, p1, u1, _, g1), (_, p2, u2, d2, _), (_, _, u3, _, _) = turns
        expect(u1 == 0, 'first turn decodes the whole prompt')
        expect(0 < u2 <= p1 + g1 and d2 == p2 - u2, f'second turn reuses the cached prefix ({u2} of {p2} tokens)')
        expect(u3 == 0, 'after /reset nothing is reused')
    expect('(saved' in r.stderr and '(loaded' in r.stderr, '/save and /load report what they did')

    # Save after one turn, load in a new process, ask the second question: same reply as in one run.
    one, _ = chat(cli, model, ['Hello there!', f'/save {state}', 'And then?'], '--template', tmpl, '--system', 'Be brief.')
    two, two_turns = chat(cli, model, [f'/load {state}', 'And then?'], '--template', tmpl, '--system', 'Be brief.')
    expect(one.returncode == 0 and two.returncode == 0, 'save / load runs exit 0')
    expect(len(two_turns) == 1 and two_turns[0][2] > 0, f'the loaded cache is reused ({two_turns})')
    last = lambda out: [l for l in out.splitlines() if l.strip()][-1:] 
    expect(last(one.stdout) == last(two.stdout) and last(two.stdout), 'the reply after /load equals the uninterrupted one')

    again, _ = chat(cli, model, lines, '--template', tmpl, '--system', 'Be brief.')
    expect(again.stdout == r.stdout, 'same input, same output (greedy)')
    fresh, fresh_turns = chat(cli, model, lines, '--template', tmpl, '--system', 'Be brief.', '--no-reuse')
    expect(fresh.returncode == 0 and all(t[2] == 0 for t in fresh_turns), '--no-reuse decodes every prompt in full')
    expect(fresh.stdout == r.stdout, 'replies with KV-cache reuse equal replies computed from scratch')

    plain, plain_turns = chat(cli, model, ['Hi', 'Bye'])
    expect(plain.returncode == 0 and len(plain_turns) == 2 and 'ChatML' in plain.stderr,
           'without a template the ChatML fallback answers')

    for f in os.listdir(tmpdir):
        os.remove(os.path.join(tmpdir, f))
    os.rmdir(tmpdir)
    print(f'{len(failures)} failed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
