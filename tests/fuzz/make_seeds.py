#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, made from small reference files (../shared/refdata).

usage: make_seeds.py SHARED_DIR OUT_DIR
Writes OUT_DIR/<target>/<seed> for every target in tests/fuzz. Everything is derived at run time
(nothing big is committed): GGUF files are shrunk (arrays and strings cut, tensors reduced to one
block), tiny models of every supported architecture are built with the refdata vocabulary, and the
tokenizer / template seeds come from the refdata test strings and chat templates. Deterministic.
Missing reference data only means fewer seeds.
"""
import glob
import json
import os
import random
import struct
import sys

# GGUF value types (docs/gguf.md §3).
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f', BOOL: '<?',
              U64: '<Q', I64: '<q', F64: '<d'}

# Tensor types used here: id -> (block elements, bytes per block, row-meta bytes) (docs/gguf.md §8).
T_F32, T_F16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_IQ4_NL, T_BF16, T_Q6_0 = 0, 1, 2, 3, 6, 7, 8, 20, 30, 133
GEOMETRY = {
    0: (1, 4, 0), 1: (1, 2, 0), 2: (32, 18, 0), 3: (32, 20, 0), 6: (32, 22, 0), 7: (32, 24, 0), 8: (32, 34, 0),
    10: (256, 84, 0), 11: (256, 110, 0), 12: (256, 144, 0), 13: (256, 176, 0), 14: (256, 210, 0),
    16: (256, 66, 0), 17: (256, 74, 0), 18: (256, 98, 0), 19: (256, 50, 0), 20: (32, 18, 0), 21: (256, 110, 0),
    22: (256, 82, 0), 23: (256, 136, 0), 24: (1, 1, 0), 25: (1, 2, 0), 26: (1, 4, 0), 27: (1, 8, 0),
    28: (1, 8, 0), 29: (256, 56, 0), 30: (1, 2, 0), 39: (32, 17, 0), 133: (32, 26, 0), 134: (64, 13, 2),
    135: (64, 16, 4), 137: (256, 76, 0), 138: (256, 110, 0), 139: (256, 144, 0), 140: (256, 176, 0),
    141: (256, 212, 0), 144: (256, 136, 4), 145: (256, 70, 2), 146: (256, 128, 4), 152: (256, 168, 4),
    153: (256, 68, 4), 154: (256, 100, 4), 155: (256, 128, 4), 156: (256, 102, 2), 157: (256, 86, 2),
    158: (256, 56, 4), 202: (32, 18, 0), 206: (32, 22, 0), 208: (32, 34, 0), 212: (256, 144, 0),
    220: (32, 18, 0), 230: (1, 2, 0), 339: (256, 144, 0),
}
INTERLEAVE = {202: 8, 206: 4, 208: 8, 212: 4, 220: 4, 230: 16, 339: 4}
SPLIT_SEPARATOR = b'IKLLMSPLIT'

# Order of the default vocabularies in fuzz_common.h (byte 0 of tokenizer/detok inputs selects one).
VOCABS = ['vocab/ggml-vocab-llama-spm.gguf', 'vocab/ggml-vocab-llama-bpe.gguf', 'vocab/ggml-vocab-qwen2.gguf',
          'vocab/ggml-vocab-gpt-2.gguf', 'vocab/ggml-vocab-deepseek-coder.gguf', 'vocab/ggml-vocab-falcon.gguf',
          'vocab/ggml-vocab-bert-bge.gguf', 'vocab/ggml-vocab-phi-3.gguf', 'models/llama-tiny-f16.gguf']


# ---- minimal GGUF reading and writing ----------------------------------------------------------
class Reader:
    """Header, metadata (key -> (type, value, elem_type)) and tensor infos of a GGUF file."""

    def __init__(self, path):
        with open(path, 'rb') as f:
            self.b = f.read()
        self.p = 0
        magic, self.version, n_t, n_kv = struct.unpack_from('<IIQQ', self.b, 0)
        assert magic == 0x46554747, path
        self.p = 24
        self.kv = {}
        for _ in range(n_kv):
            k = self._str()
            t = self._u('<I')
            if t == ARR:
                et, n = self._u('<I'), self._u('<Q')
                self.kv[k] = (t, [self._val(et) for _ in range(n)], et)
            else:
                self.kv[k] = (t, self._val(t), None)
        self.tensors = []
        for _ in range(n_t):
            name = self._str()
            nd = self._u('<I')
            dims = [self._u('<Q') for _ in range(nd)]
            self.tensors.append((name, dims, self._u('<I'), self._u('<Q')))

    def _u(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def _str(self):
        n = self._u('<Q')
        s = self.b[self.p:self.p + n]
        self.p += n
        return s.decode('utf-8', 'surrogateescape')

    def _val(self, t):
        return self._str() if t == STR else self._u(SCALAR_FMT[t])

    def get(self, k, default=None):
        return self.kv[k][1] if k in self.kv else default


def enc_str(s):
    b = s.encode('utf-8', 'surrogateescape') if isinstance(s, str) else s
    return struct.pack('<Q', len(b)) + b


def enc_val(t, v):
    return enc_str(v) if t == STR else struct.pack(SCALAR_FMT[t], v)


class Writer:
    def __init__(self, align=32):
        self.align, self.kvs, self.tensors = align, [], []

    def add(self, k, t, v, et=None):
        self.kvs.append((k, t, v, et))

    def u32(self, k, v): self.add(k, U32, int(v))
    def f32(self, k, v): self.add(k, F32, float(v))
    def string(self, k, v): self.add(k, STR, v)
    def boolean(self, k, v): self.add(k, BOOL, bool(v))

    def tensor(self, name, ttype, dims, data):
        self.tensors.append((name, ttype, list(dims), bytes(data)))

    def bytes(self):
        out = bytearray(struct.pack('<IIQQ', 0x46554747, 3, len(self.tensors), len(self.kvs)))
        for k, t, v, et in self.kvs:
            out += enc_str(k) + struct.pack('<I', t)
            if t == ARR:
                out += struct.pack('<IQ', et, len(v)) + b''.join(enc_val(et, x) for x in v)
            else:
                out += enc_val(t, v)
        off = 0
        offsets = []
        for name, ttype, dims, data in self.tensors:
            offsets.append(off)
            off += (len(data) + self.align - 1) // self.align * self.align
        for (name, ttype, dims, data), o in zip(self.tensors, offsets):
            out += enc_str(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
            out += struct.pack('<IQ', ttype, o)
        out += b'\0' * (-len(out) % self.align)
        for name, ttype, dims, data in self.tensors:
            out += data + b'\0' * (-len(data) % self.align)
        return bytes(out)


# ---- tensor data --------------------------------------------------------------------------------
def nbytes(ttype, dims):
    be, bb, meta = GEOMETRY[ttype]
    rows = 1
    for d in dims[1:]:
        rows *= d
    return rows * (meta + dims[0] // be * bb)


def tensor_data(rng, ttype, dims, kind='mat'):
    """Sane values: floats of modest size; quant blocks with a small f16 scale and random codes."""
    n = 1
    for d in dims:
        n *= d
    if ttype == T_F32:
        vals = [1.0 + 0.1 * rng.uniform(-1, 1) if kind == 'norm' else rng.uniform(-0.5, 0.5) for _ in range(n)]
        return struct.pack('<%df' % n, *vals)
    if ttype == T_F16:
        return struct.pack('<%de' % n, *[rng.uniform(-0.5, 0.5) for _ in range(n)])
    if ttype == T_BF16:
        return b''.join(struct.pack('<f', rng.uniform(-0.5, 0.5))[2:] for _ in range(n))
    be, bb, meta = GEOMETRY[ttype]
    scale = struct.pack('<e', 0.01)
    out = bytearray()
    for _ in range(nbytes(ttype, dims) // bb):
        blk = bytearray(rng.getrandbits(8) for _ in range(bb))
        blk[0:2] = scale
        if ttype in (T_Q4_1, T_Q5_1):
            blk[2:4] = struct.pack('<e', -0.05)
        out += blk
    return bytes(out)


# ---- tiny models ------------------------------------------------------------------------------
def vocab_kvs(w, vocab, n_vocab):
    """Tokenizer keys of a refdata model, truncated to n_vocab tokens."""
    w.string('tokenizer.ggml.model', vocab.get('tokenizer.ggml.model'))
    if 'tokenizer.ggml.pre' in vocab.kv:
        w.string('tokenizer.ggml.pre', vocab.get('tokenizer.ggml.pre'))
    w.add('tokenizer.ggml.tokens', ARR, vocab.get('tokenizer.ggml.tokens')[:n_vocab], STR)
    if 'tokenizer.ggml.scores' in vocab.kv:
        w.add('tokenizer.ggml.scores', ARR, vocab.get('tokenizer.ggml.scores')[:n_vocab], F32)
    w.add('tokenizer.ggml.token_type', ARR, vocab.get('tokenizer.ggml.token_type')[:n_vocab], I32)
    for k in ('bos_token_id', 'eos_token_id', 'unknown_token_id'):
        v = vocab.get('tokenizer.ggml.' + k)
        if v is not None and v < n_vocab:
            w.u32('tokenizer.ggml.' + k, v)
    w.string('tokenizer.chat_template', "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}")


def tiny_model(vocab, c, mat_type=T_F16, seed=1):
    rng = random.Random(seed)
    arch, E, H, KV, D, F, V, L = c['arch'], c['embd'], c['heads'], c['kv_heads'], c['head_dim'], c['ff'], c['vocab'], c['layers']
    w = Writer()
    w.string('general.architecture', arch)
    w.string('general.name', 'fuzz-seed-' + c['name'])
    P = arch + '.'
    w.u32(P + 'context_length', 256)
    w.u32(P + 'embedding_length', E)
    w.u32(P + 'block_count', L)
    w.u32(P + 'feed_forward_length', F)
    w.u32(P + 'attention.head_count', H)
    w.u32(P + 'attention.head_count_kv', KV)
    w.f32(P + 'attention.layer_norm_rms_epsilon', 1e-5)
    w.f32(P + 'rope.freq_base', 10000.0)
    w.u32(P + 'vocab_size', V)
    for k, (t, v) in c.get('extra', {}).items():
        w.add(P + k, t, v)
    vocab_kvs(w, vocab, V)

    def mat(name, cols, rows, *more):
        dims = [cols, rows] + list(more)
        w.tensor(name, mat_type, dims, tensor_data(rng, mat_type, dims))

    def vec(name, n, kind='norm'):
        w.tensor(name, T_F32, [n], tensor_data(rng, T_F32, [n], kind))

    mat('token_embd.weight', E, V)
    vec('output_norm.weight', E)
    if not c.get('tied'):
        mat('output.weight', E, V)
    for i in range(L):
        b = 'blk.%d.' % i
        vec(b + 'attn_norm.weight', E)
        vec(b + 'ffn_norm.weight', E)
        if arch == 'deepseek2':
            dn, dr, dv, rq, rkv = c['d_nope'], c['d_rope'], c['d_v'], c.get('q_lora', 0), c['kv_lora']
            if rq:
                mat(b + 'attn_q_a.weight', E, rq)
                vec(b + 'attn_q_a_norm.weight', rq)
                mat(b + 'attn_q_b.weight', rq, H * (dn + dr))
            else:
                mat(b + 'attn_q.weight', E, H * (dn + dr))
            mat(b + 'attn_kv_a_mqa.weight', E, rkv + dr)
            vec(b + 'attn_kv_a_norm.weight', rkv)
            if c.get('split_kb'):
                mat(b + 'attn_k_b.weight', dn, rkv, H)
                mat(b + 'attn_v_b.weight', rkv, dv, H)
            else:
                mat(b + 'attn_kv_b.weight', rkv, H * (dn + dv))
            mat(b + 'attn_output.weight', H * dv, E)
        else:
            mat(b + 'attn_q.weight', E, H * D)
            mat(b + 'attn_k.weight', E, KV * D)
            mat(b + 'attn_v.weight', E, KV * D)
            mat(b + 'attn_output.weight', H * D, E)
            if arch == 'qwen2':
                for n, rows in (('attn_q', H * D), ('attn_k', KV * D), ('attn_v', KV * D)):
                    vec(b + n + '.bias', rows, 'bias')
            if arch in ('qwen3', 'qwen3moe'):
                vec(b + 'attn_q_norm.weight', D)
                vec(b + 'attn_k_norm.weight', D)
        X = c.get('experts', 0)
        if X and i >= c.get('dense_lead', 0):
            FX = c['expert_ff']
            mat(b + 'ffn_gate_inp.weight', E, X)
            mat(b + 'ffn_gate_exps.weight', E, FX, X)
            mat(b + 'ffn_up_exps.weight', E, FX, X)
            mat(b + 'ffn_down_exps.weight', FX, E, X)
            if c.get('shared'):
                S = FX * c['shared']
                mat(b + 'ffn_gate_shexp.weight', E, S)
                mat(b + 'ffn_up_shexp.weight', E, S)
                mat(b + 'ffn_down_shexp.weight', S, E)
            if c.get('exp_probs_b'):
                vec(b + 'exp_probs_b.bias', X, 'bias')
        else:
            mat(b + 'ffn_gate.weight', E, F)
            mat(b + 'ffn_up.weight', E, F)
            mat(b + 'ffn_down.weight', F, E)
    return w


def model_configs():
    base = dict(embd=32, heads=4, kv_heads=2, head_dim=8, ff=64, vocab=64, layers=1)
    ds_extra = {'leading_dense_block_count': (U32, 1), 'attention.kv_lora_rank': (U32, 32),
                'attention.key_length': (U32, 24), 'attention.value_length': (U32, 16),
                'rope.dimension_count': (U32, 8), 'expert_count': (U32, 4), 'expert_used_count': (U32, 2),
                'expert_feed_forward_length': (U32, 16), 'expert_shared_count': (U32, 1),
                'expert_weights_scale': (F32, 2.5), 'expert_weights_norm': (BOOL, True),
                'expert_gating_func': (U32, 2), 'rope.scaling.type': (STR, 'yarn'),
                'rope.scaling.factor': (F32, 4.0), 'rope.scaling.original_context_length': (U32, 64),
                'rope.scaling.yarn_log_multiplier': (F32, 0.1)}
    ds = dict(base, arch='deepseek2', heads=2, kv_heads=2, layers=2, experts=4, expert_ff=16, shared=1,
              dense_lead=1, d_nope=16, d_rope=8, d_v=16, kv_lora=32, exp_probs_b=True)
    return [
        dict(base, name='llama', arch='llama', vocab=300),  # all byte tokens: byte fallback
        dict(base, name='llama-tied', arch='llama', tied=True, layers=2),
        dict(base, name='qwen2', arch='qwen2'),
        dict(base, name='qwen3', arch='qwen3', head_dim=16,
             extra={'attention.key_length': (U32, 16), 'attention.value_length': (U32, 16)}),
        dict(base, name='qwen3moe', arch='qwen3moe', experts=4, expert_ff=16,
             extra={'expert_count': (U32, 4), 'expert_used_count': (U32, 2), 'expert_feed_forward_length': (U32, 16)}),
        dict(ds, name='deepseek2', q_lora=16, extra=dict(ds_extra, **{'attention.q_lora_rank': (U32, 16)})),
        dict(ds, name='deepseek2-lite', exp_probs_b=False,
             extra=dict(ds_extra, **{'expert_gating_func': (U32, 1), 'expert_weights_norm': (BOOL, False)})),
        # Newer converters' MLA layout: head_count_kv 1, per-head sizes in *_mla keys, 3-D attn_k_b/attn_v_b.
        dict(ds, name='deepseek2-split', split_kb=True, q_lora=16, kv_heads=1,
             extra=dict(ds_extra, **{'attention.q_lora_rank': (U32, 16), 'attention.key_length': (U32, 40),
                                     'attention.value_length': (U32, 32), 'attention.key_length_mla': (U32, 24),
                                     'attention.value_length_mla': (U32, 16)})),
    ]


# ---- shrinking real files ---------------------------------------------------------------------
def shrink(reader, max_items=24, max_str=512, max_tensors=6):
    """The file's metadata with arrays/strings cut, and its first tensors reduced to one block."""
    rng = random.Random(7)
    w = Writer(reader.get('general.alignment', 32) if reader.kv.get('general.alignment', (None,))[0] == U32 else 32)
    for k, (t, v, et) in reader.kv.items():
        if t == ARR:
            v = [x[:max_str] if et == STR else x for x in v[:max_items]]
        elif t == STR:
            v = v[:max_str]
        w.add(k, t, v, et)
    for name, dims, ttype, _ in reader.tensors[:max_tensors]:
        if ttype not in GEOMETRY:
            continue
        d = [GEOMETRY[ttype][0]] + [1] * (len(dims) - 1)
        if len(d) > 1:
            d[1] = INTERLEAVE.get(ttype, 1)
        w.tensor(name, ttype, d, tensor_data(rng, ttype, d) if ttype in (T_F32, T_F16) else bytes(nbytes(ttype, d)))
    return w.bytes()


def type_seeds():
    """One file per tensor type: a single tensor of one block per row (interleaved types: a row group)."""
    for t, (be, bb, meta) in sorted(GEOMETRY.items()):
        w = Writer(64)
        w.string('general.architecture', 'llama')
        w.u32('general.alignment', 64)
        rows = INTERLEAVE.get(t, 1)
        w.tensor('t%d' % t, t, [be, rows], bytes(rows * (meta + bb)))
        yield t, w.bytes()


def split_seed(w):
    """The tensors of one model in two split parts, joined by the fuzz target's separator."""
    tensors = w.tensors
    half = len(tensors) // 2
    parts = []
    for no, ts in ((0, tensors[:half]), (1, tensors[half:])):
        p = Writer()
        if no == 0:
            p.kvs = list(w.kvs)
        p.add('split.no', U16, no)
        p.add('split.count', U16, 2)
        p.add('split.tensors.count', I32, len(tensors))
        p.tensors = ts
        parts.append(p.bytes())
    return SPLIT_SEPARATOR.join(parts)


# ---- text seeds -----------------------------------------------------------------------------------
def vocab_tests(path):
    try:
        with open(path + '.inp', 'rb') as f:
            data = f.read()
    except OSError:
        return []
    return [s for s in data.split(b'\n__ggml_vocab_test__\n') if s][:40]


HAND_TEXTS = [
    b'', b' ', b'Hello world', b' Hello World!', b'<s>[INST] hi [/INST]', b'<|im_start|>user\nhi<|im_end|>',
    b'<|endoftext|>', b'[CLS] x [SEP]', b'\xe2\x96\x81\xe2\x96\x81', b'\xf0\x9f\xa6\x99 \xe4\xb8\xad\xe6\x96\x87',
    b'\xc3\x28 \xa0\xa1 \xe2\x28\xa1 \xf0\x28\x8c\xbc \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80', b'\t\n\r\x00\x01',
    b'3333333333 12345.678', b"can't won't I'm", b'a' * 300,
]


def write(out_dir, target, name, data):
    d = os.path.join(out_dir, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    shared, out = sys.argv[1], sys.argv[2]
    ref = os.path.join(shared, 'refdata')
    have_ref = os.path.isdir(ref)

    # gguf_fuzz: shrunk refdata files, every tensor type, a split set, plus the model seeds.
    if have_ref:
        for p in sorted(glob.glob(os.path.join(ref, 'vocab', '*.gguf')) + glob.glob(os.path.join(ref, 'models', '*.gguf'))):
            write(out, 'gguf_fuzz', 'shrunk-' + os.path.basename(p), shrink(Reader(p)))
    for t, data in type_seeds():
        write(out, 'gguf_fuzz', 'type-%d.gguf' % t, data)
    write(out, 'gguf_fuzz', 'header-only.gguf', struct.pack('<IIQQ', 0x46554747, 3, 0, 0))
    write(out, 'gguf_fuzz', 'header-v2.gguf', struct.pack('<IIQQ', 0x46554747, 2, 0, 1) + enc_str('a') +
          struct.pack('<I', ARR) + struct.pack('<IQ', U8, 3) + b'\x01\x02\x03')

    # model_load_fuzz: tiny models of every architecture (vocabulary of refdata's llama models).
    vocab_path = os.path.join(ref, 'models', 'llama-tiny-f16.gguf')
    if os.path.isfile(vocab_path):
        vocab = Reader(vocab_path)
        for i, c in enumerate(model_configs()):
            w = tiny_model(vocab, c, seed=i + 1)
            write(out, 'model_load_fuzz', c['name'] + '.gguf', w.bytes())
            write(out, 'gguf_fuzz', 'model-' + c['name'] + '.gguf', w.bytes())
            if c['name'] == 'llama':
                write(out, 'gguf_fuzz', 'split-llama.gguf', split_seed(w))
        llama = model_configs()[0]
        for t in (T_F32, T_BF16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_IQ4_NL, T_Q6_0):
            w = tiny_model(vocab, dict(llama, vocab=64), mat_type=t, seed=100 + t)
            write(out, 'model_load_fuzz', 'llama-type%d.gguf' % t, w.bytes())

    # tokenizer_fuzz / detok_fuzz: byte 0 = vocabulary index (VOCABS order), byte 1 = flags.
    rng = random.Random(3)
    for vi, v in enumerate(VOCABS):
        p = os.path.join(ref, v)
        if not os.path.isfile(p):
            continue
        texts = vocab_tests(p) or HAND_TEXTS
        for j, t in enumerate(texts + HAND_TEXTS[:6]):
            write(out, 'tokenizer_fuzz', 'v%d-%03d' % (vi, j), bytes([vi, 3 if j % 2 else 0]) + t)
        n_vocab = len(Reader(p).get('tokenizer.ggml.tokens'))
        mod = n_vocab + 8

        def ids(seq, vi=vi, mod=mod):
            return b''.join(struct.pack('<I', (x + 4) % mod)[:3] for x in seq)
        seqs = [list(range(0, min(n_vocab, 300))), [rng.randrange(n_vocab) for _ in range(64)],
                [-4, -1, 0, n_vocab - 1, n_vocab, n_vocab + 3, 1, 2], list(range(n_vocab - 40, n_vocab))]
        for j, s in enumerate(seqs):
            write(out, 'detok_fuzz', 'v%d-%d' % (vi, j), bytes([vi, (j * 7) & 0xFF]) + ids(s))
        write(out, 'detok_fuzz', 'v%d-extreme' % vi, bytes([vi, 1]) + b'\xff\xff\xff\xfe\xff\xff' + ids([3, 4]))

    # utf8_stream_fuzz: byte 0 seeds the chunking.
    for j, t in enumerate(HAND_TEXTS):
        write(out, 'utf8_stream_fuzz', 'hand-%02d' % j, bytes([j]) + t)
    for j, t in enumerate(vocab_tests(os.path.join(ref, 'vocab', 'ggml-vocab-qwen2.gguf'))[:20]):
        write(out, 'utf8_stream_fuzz', 'inp-%02d' % j, bytes([j]) + t)

    # chat_template_fuzz: template \0 messages \0 extra vars \0 tools; length parity = add_generation_prompt.
    tdir = os.path.join(ref, 'templates')
    cases = ['system_user', 'multi_turn', 'tool_call_hf', 'tools_available', 'content_parts', 'thinking_enabled']
    for tp in sorted(glob.glob(os.path.join(tdir, '*.jinja'))):
        name = os.path.basename(tp)[:-6]
        with open(tp, 'rb') as f:
            tmpl = f.read()
        try:
            with open(tp[:-6] + '.json') as f:
                side = {k: v for k, v in json.load(f).items() if not k.startswith('_')}
        except OSError:
            side = {}
        for cn in cases:
            try:
                with open(os.path.join(tdir, 'cases', cn + '.json')) as f:
                    case = {k: v for k, v in json.load(f).items() if not k.startswith('_')}
            except OSError:
                continue
            msgs = json.dumps(case.pop('messages', []), ensure_ascii=False).encode()
            tools = json.dumps(case.pop('tools'), ensure_ascii=False).encode() if 'tools' in case else b''
            agp = bool(case.pop('add_generation_prompt', False))
            extra = json.dumps(dict(side, **case), ensure_ascii=False).encode()
            data = tmpl + b'\0' + msgs + b'\0' + extra + b'\0' + tools
            if (len(data) & 1) != agp:
                data += b' '
            write(out, 'chat_template_fuzz', '%s-%s' % (name, cn), data)
    hand = [b"{{ messages[0]['content'] | tojson }}\0[{\"role\": \"user\", \"content\": \"hi\"}]",
            b"{% for m in messages %}{{ loop.index }}{{ m.role | upper }}{% endfor %}\0[{\"role\": \"a\"}]",
            b"{% macro f(x) %}{{ x * 2 }}{% endmacro %}{{ f(21) }}{{ raise_exception('no') }}",
            b"{{ strftime_now('%d %b %Y') }}{% set ns = namespace(a=1) %}{{ ns.a }}"]
    for j, t in enumerate(hand):
        write(out, 'chat_template_fuzz', 'hand-%d' % j, t)
    # grammar_fuzz: GBNF \0 bytes to walk; json_schema_fuzz: schema text. Hand-made (no refdata needed).
    grammars = [
        (b'root ::= "yes" | "no"', b'yes'),
        (b'root ::= [a-z]+ ("," [a-z]+)*', b'abc,de,f'),
        (b'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"', b'(1+2)-30'),
        (b'root ::= obj\nobj ::= "{" ws (pair ("," ws pair)*)? "}"\npair ::= str ":" ws val\n'
         b'val ::= str | [0-9]+ | obj\nstr ::= "\\"" [^"\\\\]* "\\""\nws ::= [ \\t\\n]*', b'{"a": {"b": 12}}'),
        (b'root ::= [^\\x00-\\x1f]{2,5} "\\u00e9" [\\U0001F600-\\U0001F64F]?', 'abc\u00e9\U0001F600'.encode()),
        (b'root ::= x{3} y{0,2} z*\nx ::= "a"\ny ::= "b"?\nz ::= . ', b'aaabbzz'),
        (b'# comment\nroot ::= item+\nitem ::= "- " [^\\n]+ "\\n"', b'- one\n- two\n'),
    ]
    for j, (g, feed) in enumerate(grammars):
        write(out, 'grammar_fuzz', 'hand-%d' % j, g + b'\0' + feed)
    schemas = [
        {'type': 'object', 'properties': {'name': {'type': 'string'}, 'age': {'type': 'integer', 'minimum': 0}},
         'required': ['name']},
        {'type': 'array', 'items': {'type': 'number'}, 'minItems': 1, 'maxItems': 3},
        {'enum': ['red', 'green', 1, None, True]},
        {'type': 'string', 'pattern': '^[A-Z][a-z]{2,8}-[0-9]+$'},
        {'type': 'string', 'format': 'date-time'},
        {'anyOf': [{'type': 'integer', 'minimum': -5, 'maximum': 120}, {'type': 'boolean'}]},
        {'$defs': {'node': {'type': 'object', 'properties': {'v': {'type': 'integer'},
                                                             'next': {'$ref': '#/$defs/node'}}}},
         '$ref': '#/$defs/node'},
        {'type': 'object', 'additionalProperties': {'type': 'string', 'maxLength': 4}},
        {'oneOf': [{'const': 'x'}, {'type': 'array', 'prefixItems': [{'type': 'string'}, {'type': 'null'}]}]},
    ]
    for j, sc in enumerate(schemas):
        write(out, 'json_schema_fuzz', 'hand-%d' % j, json.dumps(sc).encode())
    # state_load_fuzz: patches of a valid state made at start-up (see the target); a few offsets.
    for j, off in enumerate((0, 8, 64, 200, 1000)):
        write(out, 'state_load_fuzz', 'patch-%d' % j, bytes([1 | (j & 2)]) + struct.pack('<I', off) + b'\xff\x00\x7f')
    if not have_ref:
        print('make_seeds: %s not found: only hand-made seeds written' % ref, file=sys.stderr)


if __name__ == '__main__':
    main()
