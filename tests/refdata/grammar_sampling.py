#!/usr/bin/env python3
"""Grammar-constrained sampling, checked by independent parsers.

Loads the random-weight reference models (real Llama-2 vocabulary with byte-fallback tokens, so
tokens split UTF-8 characters) through the public C API (ctypes on libikllm.so), samples many
outputs at high temperature under several GBNF grammars and JSON schemas, and checks that every
output
  - ended properly: an end-of-generation token while the grammar was complete, or the grammar
    reached IKLLM_GRAMMAR_DONE; never by running out of tokens (every grammar here is bounded,
    and max_tokens exceeds its longest text in bytes);
  - is valid UTF-8 and is accepted by an independent checker: Python `re` for the GBNF cases,
    Python `json` plus the small JSON Schema validator below for the schema cases.

usage: grammar_sampling.py LIBIKLLM_SO [SHARED_DIR] [--runs N]
Exit 0 on success, 1 on any failure, 77 (skip) when the reference models are absent.
"""
import ctypes as C
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- the C API ------------------------------------------------------------------------------
IKLLM_OPTIONS_MODEL, IKLLM_OPTIONS_SESSION, IKLLM_OPTIONS_SAMPLER = 0, 1, 2
IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR = 1
GRAMMAR_INCOMPLETE, GRAMMAR_COMPLETE, GRAMMAR_DONE, GRAMMAR_FAILED = 1, 2, 3, 4


class Api:
    def __init__(self, path):
        L = C.CDLL(path)
        P = C.c_void_p
        sig = {
            'ikllm_lib_create': (C.c_int32, [C.c_uint32, C.POINTER(P)]),
            'ikllm_options_create': (C.c_int32, [C.c_int32, C.POINTER(P)]),
            'ikllm_options_free': (None, [P]),
            'ikllm_options_set_int': (C.c_int32, [P, C.c_char_p, C.c_int64]),
            'ikllm_options_set_float': (C.c_int32, [P, C.c_char_p, C.c_double]),
            'ikllm_options_set_string': (C.c_int32, [P, C.c_char_p, C.c_char_p]),
            'ikllm_model_load': (C.c_int32, [P, C.c_char_p, P, P, P, P, C.POINTER(P)]),
            'ikllm_model_n_vocab': (C.c_int32, [P]),
            'ikllm_session_create': (C.c_int32, [P, P, C.POINTER(P)]),
            'ikllm_session_free': (None, [P]),
            'ikllm_session_clear': (C.c_int32, [P]),
            'ikllm_session_decode': (C.c_int32, [P, C.POINTER(C.c_int32), P, P, P, C.c_int32, C.c_uint32]),
            'ikllm_sampler_create': (C.c_int32, [P, P, C.POINTER(P)]),
            'ikllm_sampler_free': (None, [P]),
            'ikllm_sampler_sample': (C.c_int32, [P, P, C.c_int32, C.POINTER(C.c_int32)]),
            'ikllm_sampler_accept_v2': (C.c_int32, [P, C.POINTER(C.c_int32), C.c_size_t, C.c_uint32]),
            'ikllm_sampler_grammar_state': (C.c_int32, [P, C.POINTER(C.c_int32)]),
            'ikllm_token_is_eog': (C.c_int32, [P, C.c_int32]),
            'ikllm_token_to_piece': (C.c_int32, [P, C.c_int32, C.c_uint32, C.c_char_p, C.c_size_t, C.POINTER(C.c_size_t)]),
            'ikllm_tokenize': (C.c_int32, [P, C.c_char_p, C.c_size_t, C.c_uint32, C.POINTER(C.c_int32), C.c_size_t,
                                           C.POINTER(C.c_size_t)]),
            'ikllm_last_error': (C.c_char_p, []),
        }
        for name, (res, args) in sig.items():
            f = getattr(L, name)
            f.restype, f.argtypes = res, args
            setattr(self, name[6:], f)

    def ok(self, st, what):
        if st != 0:
            raise RuntimeError(f'{what}: status {st}: {self.last_error().decode(errors="replace")}')


class Model:
    def __init__(self, api, path):
        self.api = api
        lib = C.c_void_p()
        api.ok(api.lib_create(0, C.byref(lib)), 'lib')
        self.model = C.c_void_p()
        api.ok(api.model_load(lib, path.encode(), None, None, None, None, C.byref(self.model)), 'load')
        so = C.c_void_p()
        api.ok(api.options_create(IKLLM_OPTIONS_SESSION, C.byref(so)), 'options')
        api.ok(api.options_set_int(so, b'n_ctx', 1024), 'n_ctx')
        api.ok(api.options_set_int(so, b'n_threads', 1), 'n_threads')
        self.session = C.c_void_p()
        api.ok(api.session_create(self.model, so, C.byref(self.session)), 'session')
        api.options_free(so)
        n = api.model_n_vocab(self.model)
        self.pieces = []
        buf = C.create_string_buffer(256)
        need = C.c_size_t()
        for t in range(n):
            api.ok(api.token_to_piece(self.model, t, 0, buf, 256, C.byref(need)), 'piece')
            self.pieces.append(buf.raw[:need.value - 1])
        self.eog = [api.token_is_eog(self.model, t) != 0 for t in range(n)]
        prompt = b'Output:'
        ids = (C.c_int32 * 64)()
        cnt = C.c_size_t()
        api.ok(api.tokenize(self.model, prompt, len(prompt), 1, ids, 64, C.byref(cnt)), 'tokenize')
        self.prompt = list(ids[:cnt.value])

    def generate(self, key, text, seed, max_tokens):
        """Returns (bytes, how it ended)."""
        api = self.api
        o = C.c_void_p()
        api.ok(api.options_create(IKLLM_OPTIONS_SAMPLER, C.byref(o)), 'options')
        api.ok(api.options_set_string(o, key.encode(), text.encode()), key)
        api.ok(api.options_set_int(o, b'seed', seed), 'seed')
        api.ok(api.options_set_float(o, b'temperature', 1.5), 'temperature')
        api.ok(api.options_set_int(o, b'top_k', 0), 'top_k')
        api.ok(api.options_set_float(o, b'top_p', 1.0), 'top_p')
        api.ok(api.options_set_float(o, b'min_p', 0.0), 'min_p')
        smp = C.c_void_p()
        api.ok(api.sampler_create(self.model, o, C.byref(smp)), 'sampler')
        api.options_free(o)
        try:
            api.ok(api.session_clear(self.session), 'clear')
            toks = (C.c_int32 * len(self.prompt))(*self.prompt)
            api.ok(api.sampler_accept_v2(smp, toks, len(self.prompt), IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR), 'accept')
            api.ok(api.session_decode(self.session, toks, None, None, None, len(self.prompt), 0), 'decode')
            out = b''
            tok = C.c_int32()
            state = C.c_int32()
            for _ in range(max_tokens):
                api.ok(api.sampler_sample(smp, self.session, -1, C.byref(tok)), 'sample')
                api.ok(api.sampler_grammar_state(smp, C.byref(state)), 'state')
                if self.eog[tok.value]:
                    return out, ('eog' if state.value in (GRAMMAR_COMPLETE, GRAMMAR_DONE) else f'eog in state {state.value}')
                out += self.pieces[tok.value]
                if state.value == GRAMMAR_DONE:
                    return out, 'done'
                if state.value == GRAMMAR_FAILED:
                    return out, 'failed'
                one = (C.c_int32 * 1)(tok.value)
                api.ok(api.session_decode(self.session, one, None, None, None, 1, 0), 'decode')
            return out, 'ran out of tokens'
        finally:
            api.sampler_free(smp)


# ---- an independent JSON Schema check (the keywords the cases use) ----------------------------
FORMATS = {
    'date': r'[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])',
    'time': r'([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])',
    'uuid': r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}',
}
FORMATS['date-time'] = FORMATS['date'] + 'T' + FORMATS['time']


def resolve(root, ref):
    node = root
    for part in ref[2:].split('/') if ref != '#' else []:
        node = node[part.replace('~1', '/').replace('~0', '~')]
    return node


def errors(v, s, root, path='$'):
    """List of reasons v does not satisfy schema s (empty = valid)."""
    if s is True:
        return []
    if '$ref' in s:
        return errors(v, resolve(root, s['$ref']), root, path)
    out = []
    if 'const' in s and v != s['const']:
        out.append(f'{path}: {v!r} != const')
    if 'enum' in s and not any(v == e and type(v) == type(e) for e in s['enum']):
        out.append(f'{path}: {v!r} not in enum')
    if 'allOf' in s:
        for sub in s['allOf']:
            out += errors(v, sub, root, path)
    if 'anyOf' in s and not any(not errors(v, sub, root, path) for sub in s['anyOf']):
        out.append(f'{path}: matches no anyOf branch')
    if 'oneOf' in s and sum(1 for sub in s['oneOf'] if not errors(v, sub, root, path)) != 1:
        out.append(f'{path}: does not match exactly one oneOf branch')
    t = s.get('type')
    if t is not None:
        types = t if isinstance(t, list) else [t]
        def is_t(name):
            return {'null': v is None, 'boolean': isinstance(v, bool),
                    'integer': isinstance(v, int) and not isinstance(v, bool),
                    'number': isinstance(v, (int, float)) and not isinstance(v, bool),
                    'string': isinstance(v, str), 'array': isinstance(v, list), 'object': isinstance(v, dict)}[name]
        if not any(is_t(x) for x in types):
            return out + [f'{path}: {v!r} is not of type {t}']
    if isinstance(v, str):
        if len(v) < s.get('minLength', 0) or len(v) > s.get('maxLength', 1 << 60):
            out.append(f'{path}: length {len(v)}')
        if 'pattern' in s and not re.search(s['pattern'], v):
            out.append(f'{path}: {v!r} does not match {s["pattern"]}')
        if s.get('format') in FORMATS and not re.fullmatch(FORMATS[s['format']], v):
            out.append(f'{path}: {v!r} is not a {s["format"]}')
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if 'minimum' in s and v < s['minimum']: out.append(f'{path}: {v} < minimum')
        if 'maximum' in s and v > s['maximum']: out.append(f'{path}: {v} > maximum')
        if 'exclusiveMinimum' in s and v <= s['exclusiveMinimum']: out.append(f'{path}: {v} <= exclusiveMinimum')
        if 'exclusiveMaximum' in s and v >= s['exclusiveMaximum']: out.append(f'{path}: {v} >= exclusiveMaximum')
    if isinstance(v, list):
        if len(v) < s.get('minItems', 0) or len(v) > s.get('maxItems', 1 << 60):
            out.append(f'{path}: {len(v)} items')
        prefix = s.get('prefixItems', [])
        for i, x in enumerate(v):
            sub = prefix[i] if i < len(prefix) else s.get('items', True)
            if sub is False:
                out.append(f'{path}[{i}]: no item allowed here')
            else:
                out += errors(x, sub, root, f'{path}[{i}]')
    if isinstance(v, dict):
        props = s.get('properties', {})
        for r in s.get('required', []):
            if r not in v:
                out.append(f'{path}: missing {r}')
        for k, x in v.items():
            if k in props:
                out += errors(x, props[k], root, f'{path}.{k}')
            else:
                ap = s.get('additionalProperties', True)
                if ap is False:
                    out.append(f'{path}: unexpected key {k!r}')
                else:
                    out += errors(x, ap, root, f'{path}.{k}')
    return out


def no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError(f'duplicate keys {keys}')
    return dict(pairs)


# ---- the cases ---------------------------------------------------------------------------------
# (name, GBNF, Python regex for the whole text, max tokens)
GBNF_CASES = [
    ('record', r'root ::= "{\"n\": " [0-9]{1,3} ", \"s\": \"" [a-zé€😀 ]{0,8} "\"}"',
     r'\{"n": [0-9]{1,3}, "s": "[a-zé€😀 ]{0,8}"\}', 80),
    ('items', 'root ::= item ("," item){0,4}\n'
              'item ::= "(" [A-Z]{1,3} ")"\n'
              '       | "[" [^\\]\\n"\\\\]{0,5} "]"  # anything but ] newline quote backslash\n'
              '       | "x"',
     r'(\([A-Z]{1,3}\)|\[[^\]\n"\\]{0,5}\]|x)(,(\([A-Z]{1,3}\)|\[[^\]\n"\\]{0,5}\]|x)){0,4}', 160),
    ('any-chars', 'root ::= "<" .{1,6} ">" [\\u0400-\\u04FF\\U0001F600-\\U0001F64F]{0,3} tail\n'
                  'tail ::= ("!" | "?"){2}',
     r'<.{1,6}>[\u0400-\u04FF\U0001F600-\U0001F64F]{0,3}[!?]{2}', 80),
    ('nested', 'root ::= e2\n'
               'e2 ::= t2 ([+*] t2){0,2}\n'
               't2 ::= [0-9]{1,2} | "(" e1 ")"\n'
               'e1 ::= t1 ([+*] t1){0,2}\n'
               't1 ::= [0-9]{1,2} | "-" [0-9]',
     None, 120),
]
T1 = r'([0-9]{1,2}|-[0-9])'
E1 = f'{T1}([+*]{T1}){{0,2}}'
T2 = rf'([0-9]{{1,2}}|\({E1}\))'
GBNF_CASES[3] = GBNF_CASES[3][:2] + (f'{T2}([+*]{T2}){{0,2}}', 120)

SCHEMA_CASES = [
    ('person', {
        'type': 'object',
        'properties': {
            'name': {'type': 'string', 'minLength': 1, 'maxLength': 12},
            'age': {'type': 'integer', 'minimum': 18, 'maximum': 120},
            'role': {'enum': ['admin', 'user', None, 7]},
            'active': {'type': 'boolean'},
            'tags': {'type': 'array', 'items': {'type': 'string', 'maxLength': 4}, 'minItems': 1, 'maxItems': 3},
            'address': {'type': 'object', 'properties': {'zip': {'type': 'string', 'pattern': '^[0-9]{5}$'},
                                                         'city': {'type': 'string', 'maxLength': 8}},
                        'required': ['zip'], 'additionalProperties': False},
        },
        'required': ['name', 'age'], 'additionalProperties': False}, 400),
    ('tuple-formats', {
        'type': 'array',
        'prefixItems': [{'type': 'string', 'format': 'date'}, {'type': 'string', 'format': 'uuid'},
                        {'type': 'string', 'format': 'date-time'}, {'type': 'integer', 'exclusiveMinimum': -5,
                                                                     'exclusiveMaximum': 250}],
        'items': False, 'minItems': 2}, 400),
    ('alternatives', {
        'type': 'object',
        'properties': {
            'v': {'anyOf': [{'type': 'number', 'minimum': -2.5, 'maximum': 3}, {'const': 'none'},
                            {'type': ['boolean', 'null']}]},
            'w': {'oneOf': [{'type': 'integer', 'minimum': 0, 'maximum': 9}, {'type': 'string', 'maxLength': 2}]},
            'p': {'type': 'string', 'pattern': '^(ab{1,3}c|x[0-9]?y)$'},
        },
        'required': ['v', 'w', 'p'], 'additionalProperties': False}, 400),
    ('recursive', {
        '$defs': {'node': {'type': 'object',
                           'properties': {'v': {'type': 'integer', 'minimum': 0, 'maximum': 99},
                                          'next': {'anyOf': [{'$ref': '#/$defs/node'}, {'type': 'null'}]}},
                           'required': ['v', 'next'], 'additionalProperties': False}},
        '$ref': '#/$defs/node'}, 600),
    ('merged', {
        'allOf': [{'type': 'object', 'properties': {'id': {'type': 'integer', 'minimum': 1, 'maximum': 9}},
                   'required': ['id']},
                  {'properties': {'ok': {'type': 'boolean'}}, 'required': ['ok']}]}, 400),
]


def main():
    args = [a for a in sys.argv[1:]]
    runs = 60
    if '--runs' in args:
        i = args.index('--runs')
        runs = int(args[i + 1])
        del args[i:i + 2]
    if not args:
        print(__doc__)
        return 2
    libpath = args[0]
    shared = args[1] if len(args) > 1 else os.environ.get('IKLLM_SHARED', os.path.join(HERE, '..', '..', '..', 'shared'))
    models = [os.path.join(shared, 'refdata', 'models', m) for m in ('llama-tiny-f16.gguf', 'qwen3-tiny-f16.gguf')]
    if not all(os.path.exists(m) for m in models):
        print(f'SKIP: reference models not found under {shared}/refdata/models')
        return 77
    api = Api(libpath)
    t0 = time.time()
    total, bad = 0, []
    endings = {}
    for mi, path in enumerate(models):
        m = Model(api, path)
        for name, gbnf, rx, max_tokens in GBNF_CASES:
            for r in range(runs):
                seed = 1000 * mi + r
                out, how = m.generate('grammar', gbnf, seed, max_tokens)
                total += 1
                endings[how] = endings.get(how, 0) + 1
                try:
                    text = out.decode('utf-8')
                except UnicodeDecodeError as e:
                    bad.append(f'{name} seed {seed}: invalid UTF-8 {out!r}: {e}')
                    continue
                if how not in ('eog', 'done'):
                    bad.append(f'{name} seed {seed}: ended by "{how}": {text!r}')
                elif not re.fullmatch(rx, text, re.DOTALL):
                    bad.append(f'{name} seed {seed}: {text!r} does not match {rx}')
        for name, schema, max_tokens in SCHEMA_CASES:
            schema_text = json.dumps(schema)
            for r in range(runs):
                seed = 1000 * mi + r
                out, how = m.generate('json_schema', schema_text, seed, max_tokens)
                total += 1
                endings[how] = endings.get(how, 0) + 1
                try:
                    text = out.decode('utf-8')
                    value = json.loads(text, object_pairs_hook=no_duplicate_keys)
                except (UnicodeDecodeError, ValueError) as e:
                    bad.append(f'{name} seed {seed}: not JSON ({e}): {out!r}')
                    continue
                if how not in ('eog', 'done'):
                    bad.append(f'{name} seed {seed}: ended by "{how}": {text!r}')
                    continue
                errs = errors(value, schema, schema)
                if errs:
                    bad.append(f'{name} seed {seed}: {text!r}: {errs}')
    for b in bad[:20]:
        print('FAIL', b)
    print(f'{total} outputs, {len(bad)} failures, endings {endings}, {time.time() - t0:.1f} s')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
