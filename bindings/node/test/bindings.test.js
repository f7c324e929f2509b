// Tests of the Node binding against the C API (through the `ikllm` CLI) on ../shared/refdata
// models; tests that need a model skip when the reference data is absent.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const ikllm = require('../lib/index.js');
const { abi } = ikllm;

const repo = path.resolve(__dirname, '..', '..', '..');
const llama = path.resolve(repo, '..', 'shared', 'refdata', 'models', 'llama-tiny-f16.gguf');
const cli = process.env.IKLLM_CLI || path.join(repo, 'build', 'ikllm');
const haveModel = fs.existsSync(llama);
const needModel = haveModel ? {} : { skip: `reference model ${llama} absent` };
const PROMPT = 'The quick brown fox';

function runCli(...args) {
  return execFileSync(cli, args);
}
function tmpFile(name) {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ikllm-node-')), name);
}
async function collect(iter) {
  const out = [];
  for await (const p of iter) out.push(p);
  return out;
}

test('version info', () => {
  assert.strictEqual(ikllm.abiVersion(), abi.ABI_VERSION);
  assert.strictEqual(ikllm.version(), abi.VERSION);
  assert.strictEqual(ikllm.statusName(abi.IKLLM_ERR_IO), 'IKLLM_ERR_IO');
});

test('a library with another ABI major is refused at load', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ikllm-node-'));
  const so = path.join(dir, 'libfake_ikllm.so');
  execFileSync('cc', ['-shared', '-fPIC', '-o', so, '-x', 'c', '-'], { input: 'int ikllm_abi_version(void) { return 99; }\n' });
  const script = "try { require('./lib/index.js') } catch (e) { console.log(e.code + ' ' + e.message) }";
  const out = execFileSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '..'),
                                                               env: { ...process.env, IKLLM_LIB: so } }).toString();
  assert.match(out, /^IKLLM_ABI_MISMATCH .*has ABI major 99/);
});

test('options listing', () => {
  const sampler = ikllm.listOptions('sampler');
  assert.ok(sampler.some((o) => o.name === 'temperature' && o.type === 'float'));
  assert.ok(ikllm.listOptions('session').some((o) => o.name === 'n_ctx'));
});

test('bad option', { skip: needModel.skip }, () => {
  const model = new ikllm.Model(llama);
  try {
    assert.throws(() => new ikllm.Session(model, { no_such_option: 1 }), (e) =>
      e instanceof ikllm.IkllmError && ['IKLLM_ERR_NOT_FOUND', 'IKLLM_ERR_INVALID_ARGUMENT'].includes(e.code) &&
      e.message.includes('no_such_option'));
    assert.throws(() => new ikllm.Session(model, { n_ctx: -5 }), { code: 'IKLLM_ERR_INVALID_ARGUMENT' });
  } finally {
    model.close();
  }
});

test('missing file', async () => {
  assert.throws(() => new ikllm.Model('/nonexistent/model.gguf'), (e) =>
    e instanceof ikllm.IkllmError && e.code === 'IKLLM_ERR_IO' && e.status === abi.IKLLM_ERR_IO && e.nativeMessage.length > 0);
  await assert.rejects(ikllm.Model.load('/nonexistent/model.gguf'), { code: 'IKLLM_ERR_IO' });
});

test('corrupt file', () => {
  const f = tmpFile('corrupt.gguf');
  const b = Buffer.alloc(4 + 4 + 8 + 8 + 32);
  b.write('GGUF', 0);
  b.writeUInt32LE(3, 4);
  b.writeBigUInt64LE(1n << 60n, 8);
  b.writeBigUInt64LE(1n << 60n, 16);
  fs.writeFileSync(f, b);
  assert.throws(() => new ikllm.Model(f), { code: 'IKLLM_ERR_INVALID_FILE' });
});

test('raw layer rejects a handle of the wrong kind', () => {
  const lib = new ikllm.Library();
  try {
    assert.throws(() => require('../lib/native.js').ikllm_model_n_vocab(lib.handle), { code: 'ERR_INVALID_ARG_TYPE' });
  } finally {
    lib.close();
  }
});

test('model tests', needModel, async (t) => {
  const model = await ikllm.Model.load(llama);
  t.after(() => model.close());

  await t.test('load progress and cancel', async () => {
    const seen = [];
    const m = new ikllm.Model(llama, { progress: (p) => seen.push(p) });
    m.close();
    assert.ok(seen.length > 0 && seen[seen.length - 1] === 1);
    assert.throws(() => new ikllm.Model(llama, { progress: () => false }), { code: 'IKLLM_CANCELLED' });
    const flag = new ikllm.CancelFlag();
    flag.cancel();
    assert.throws(() => new ikllm.Model(llama, { cancel: flag }), { code: 'IKLLM_CANCELLED' });
    await assert.rejects(ikllm.Model.load(llama, { signal: AbortSignal.abort() }), { code: 'IKLLM_CANCELLED' });
    assert.throws(() => new ikllm.Model(llama, { progress: () => { throw new SyntaxError('from callback'); } }), SyntaxError);
  });

  await t.test('metadata', () => {
    assert.strictEqual(model.architecture, 'llama');
    assert.strictEqual(model.metadata()['general.architecture'], 'llama');
    assert.ok(model.nVocab > 0);
    assert.strictEqual(model.chatTemplate(), null);
  });

  await t.test('tokenize / detokenize', () => {
    const toks = model.tokenize(PROMPT);
    assert.strictEqual(toks[0], model.bos);
    assert.strictEqual(model.detokenize(toks).trim(), PROMPT);
    assert.deepStrictEqual(model.tokenize(PROMPT, { addSpecial: false }), toks.slice(1));
  });

  await t.test('out-of-range token', () => {
    const s = new ikllm.Session(model, { n_ctx: 64 });
    try {
      for (const bad of [model.nVocab, -1]) assert.throws(() => s.decode([bad]), { code: 'IKLLM_ERR_INVALID_ARGUMENT' });
      assert.throws(() => model.detokenize([model.nVocab + 7]), { code: 'IKLLM_ERR_INVALID_ARGUMENT' });
    } finally {
      s.close();
    }
  });

  await t.test('logits equal the C API', () => {
    const toks = model.tokenize(PROMPT);
    const ids = tmpFile('ids.txt');
    const out = tmpFile('out.f32');
    fs.writeFileSync(ids, toks.join(' '));
    runCli('logits', '-m', llama, '--tokens', ids, '--out', out);
    const ref = fs.readFileSync(out);
    const n = model.nVocab;
    const s = new ikllm.Session(model, { n_ctx: 512, n_batch: toks.length });
    try {
      s.decode(toks, { logits: 'all' });
      for (let i = 0; i < toks.length; i++) {
        const lg = s.logits(i);
        assert.ok(lg instanceof Float32Array && lg.length === n);
        assert.ok(Buffer.from(lg.buffer, lg.byteOffset, lg.byteLength).equals(ref.subarray(i * n * 4, (i + 1) * n * 4)),
                  `logits row ${i}`);
      }
    } finally {
      s.close();
    }
  });

  await t.test('batched decode of two sequences', async () => {
    const a = model.tokenize('Hello world');
    const b = model.tokenize(PROMPT);
    const alone = [];
    for (const toks of [a, b]) {
      const s = new ikllm.Session(model, { n_ctx: 128 });
      await s.decodeAsync(toks);
      alone.push(s.logits());
      s.close();
    }
    const s = new ikllm.Session(model, { n_ctx: 128, n_seq_max: 2 });
    try {
      const want = new Array(a.length + b.length).fill(false);
      want[a.length - 1] = want[a.length + b.length - 1] = true;
      s.decode(a.concat(b), { seqIds: a.map(() => 0).concat(b.map(() => 1)), logits: want });
      const both = [s.logits(a.length - 1), s.logits(a.length + b.length - 1)];
      assert.strictEqual(s.seqPosMax(0), a.length - 1);
      assert.strictEqual(s.seqPosMax(1), b.length - 1);
      for (let k = 0; k < 2; k++) {
        let diff = 0;
        for (let i = 0; i < alone[k].length; i++) diff = Math.max(diff, Math.abs(alone[k][i] - both[k][i]));
        assert.ok(diff < 1e-3, `sequence ${k}: max diff ${diff}`);
      }
    } finally {
      s.close();
    }
  });

  await t.test('sampling', async () => {
    const s = new ikllm.Session(model, { n_ctx: 64 });
    const greedy = new ikllm.Sampler(model, { temperature: 0 });
    try {
      s.decode(model.tokenize(PROMPT));
      const lg = s.logits();
      let best = 0;
      for (let i = 1; i < lg.length; i++) if (lg[i] > lg[best]) best = i;
      assert.strictEqual(await greedy.sampleAsync(s), best);
      assert.strictEqual(greedy.sampleLogits(lg), best);
      const runs = [0, 1].map(() => {
        const smp = new ikllm.Sampler(model, { temperature: 1.0, seed: 7 });
        const picks = [0, 1, 2, 3, 4].map(() => smp.sampleLogits(lg));
        smp.close();
        return picks;
      });
      assert.deepStrictEqual(runs[0], runs[1]);
    } finally {
      greedy.close();
      s.close();
    }
  });

  await t.test('greedy generation equals ikllm run (async and sync)', async () => {
    for (const [prompt, n] of [[PROMPT, 24], ['Hello', 40]]) {
      const ref = runCli('run', '-m', llama, '-p', prompt, '-n', String(n), '--temp', '0');
      const pieces = await collect(ikllm.generate(model, prompt, n, { sampler: { temperature: 0 } }));
      assert.ok(pieces.length > 1);
      assert.ok(Buffer.from(prompt + pieces.join('') + '\n').equals(ref));
      const sync = [...ikllm.generateSync(model, prompt, n, { sampler: { temperature: 0 } })];
      assert.deepStrictEqual(sync, pieces);
    }
  });

  await t.test('example prints what ikllm run prints', () => {
    const ref = runCli('run', '-m', llama, '-p', PROMPT, '-n', '16', '--temp', '0');
    const got = execFileSync(process.execPath, [path.join(__dirname, '..', 'examples', 'generate.js'), llama, PROMPT, '16']);
    assert.ok(got.equals(ref));
  });

  await t.test('generation can be aborted', async () => {
    const ctl = new AbortController();
    ctl.abort();
    await assert.rejects(collect(ikllm.generate(model, PROMPT, 8, { signal: ctl.signal })), { code: 'IKLLM_CANCELLED' });
  });

  await t.test('constrained sampling', async () => {
    const yn = (await collect(ikllm.generate(model, PROMPT, 16, { sampler: { temperature: 0, grammar: 'root ::= "yes" | "no"' } }))).join('');
    assert.ok(yn === 'yes' || yn === 'no', yn);
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
    const text = (await collect(ikllm.generate(model, PROMPT, 64, { sampler: { temperature: 0, json_schema: JSON.stringify(schema) } }))).join('');
    assert.strictEqual(typeof JSON.parse(text).ok, 'boolean');
    assert.match(ikllm.jsonSchemaToGrammar(schema), /root/);
    assert.throws(() => ikllm.jsonSchemaToGrammar('{not json'), { code: 'IKLLM_ERR_GRAMMAR' });
    assert.throws(() => new ikllm.Sampler(model, { grammar: 'root ::= (' }), { code: 'IKLLM_ERR_GRAMMAR' });
  });
});

test('chat template rendering', () => {
  const template = '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}';
  const msgs = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }];
  assert.strictEqual(ikllm.renderChat(msgs, { template }), '<|system|>Be brief.\n<|user|>Hi\n<|assistant|>');
  assert.strictEqual(ikllm.renderChat(msgs, { template, addGenerationPrompt: false }), '<|system|>Be brief.\n<|user|>Hi\n');
  assert.throws(() => ikllm.renderChat([], { template: "{{ raise_exception('nope') }}" }), (e) =>
    e.code === 'IKLLM_ERR_TEMPLATE' && e.nativeMessage.includes('nope'));
});
