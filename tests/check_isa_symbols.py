#!/usr/bin/env python3
"""Code compiled for one instruction set must not stand in for code compiled for another.

The kernel files *_avx2.cpp, *_avxvnni.cpp, *_avx512.cpp and *_amx.cpp (*_neon.cpp on AArch64)
are compiled with their ISA's flags and called only after a run-time CPU check. An inline
function or template instantiation that such a file emits as a weak symbol, and that a file of
another ISA (or a baseline file) emits too, is kept once by the linker: possibly the AVX-512
copy, which then runs on a CPU without AVX-512 (SIGILL). Static or anonymous-namespace helpers
are immune; std::vector<...> members, inline header functions that were not inlined, and so
on are not. This check lists every weak code symbol (nm type W) defined by objects of two or
more ISA classes.

usage: check_isa_symbols.py OBJECT... | --selftest CXX
Exit 0 when none is shared, 1 (with the symbols and their objects) otherwise.
"""
import os, re, subprocess, sys, tempfile

ISA = re.compile(r'_(avx2|avxvnni|avx512|amx|neon)\.(cpp|cc)\.o$')


def isa_class(path):
    # The AMX files are compiled with the AVX-512 flags plus the tile ones, whose instructions
    # come only from intrinsics: their other code needs what an AVX-512 file's needs.
    m = ISA.search(os.path.basename(path))
    return ('avx512' if m.group(1) == 'amx' else m.group(1)) if m else 'baseline'


def weak_code_symbols(obj):
    out = subprocess.run([os.environ.get('NM', 'nm'), '--defined-only', '-P', obj], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if len(line.split()) >= 2 and line.split()[1] == 'W'}


def shared_symbols(objects):
    where = {}
    for obj in objects:
        cls = isa_class(obj)
        for sym in weak_code_symbols(obj):
            where.setdefault(sym, {}).setdefault(cls, []).append(os.path.basename(obj))
    return {s: w for s, w in where.items() if len(w) > 1}


def demangle(names):
    if not names:
        return []
    p = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True, text=True)
    return p.stdout.splitlines() if p.returncode == 0 else names


def report(shared):
    names = sorted(shared)
    for name, pretty in zip(names, demangle(names)):
        classes = ', '.join(f'{c}: {" ".join(sorted(set(o)))}' for c, o in sorted(shared[name].items()))
        print(f'  {pretty}\n      {classes}')


def selftest(cxx):
    """A helper emitted by an AVX-512 object and a baseline one must be reported; static ones not."""
    # Taking the addresses keeps both helpers out of line (emitted, not inlined or cloned).
    src = ('inline float shared_helper(const float* x) { return x[0] * 2.0f; }\n'
           'static float own_helper(const float* x) { return x[0] + 1.0f; }\n'
           'float (*NAME[2])(const float*) = {shared_helper, own_helper};\n')
    with tempfile.TemporaryDirectory() as d:
        objs = []
        for name, flags in (('kern_avx512', ['-mavx512f']), ('plain', [])):
            path = os.path.join(d, name + '.cpp')
            with open(path, 'w') as f:
                f.write(src.replace('NAME', 'entry_' + name))
            subprocess.run([cxx, '-O2', '-c', path, '-o', path + '.o'] + flags, check=True)
            objs.append(path + '.o')
        shared = shared_symbols(objs)
        found = [s for s in demangle(sorted(shared)) if 'shared_helper' in s]
        stray = [s for s in demangle(sorted(shared)) if 'own_helper' in s]
        ok = len(found) == 1 and not stray
        print(f'selftest: shared inline helper reported: {bool(found)}, static helper reported: {bool(stray)}'
              f' -> {"ok" if ok else "FAIL"}')
        return 0 if ok else 1


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    if args[0] == '--selftest':
        return selftest(args[1])
    shared = shared_symbols(args)
    n_isa = sum(1 for a in args if isa_class(a) != 'baseline')
    if shared:
        print(f'{len(shared)} weak code symbol(s) defined under more than one ISA class:')
        report(shared)
        return 1
    print(f'isa symbols: ok ({len(args)} objects, {n_isa} ISA-specific; no weak code symbol shared across ISA classes)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
