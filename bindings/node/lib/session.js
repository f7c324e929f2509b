// Sessions (KV cache, batched decode, logits), samplers, the streaming detokenizer, generation.
'use strict';
const abi = require('./abi.g.js');
const native = require('./native.js');
const { check } = require('./errors.js');
const { Owned } = require('./handles.js');
const { withOptions } = require('./options.js');

function perToken(values, n, what) {
  if (values == null) return null;
  if (values.length !== n) throw new RangeError(`${what} has ${values.length} entries for ${n} tokens`);
  return Int32Array.from(values, Number);
}
function wantLogits(logits, n) {
  if (logits === 'last' || logits == null) return null;
  if (logits === 'all') return new Int32Array(n).fill(1);
  return perToken(logits.map((x) => (x ? 1 : 0)), n, 'logits');
}

// A context over a model; one operation at a time (await async calls before the next one).
class Session extends Owned {
  constructor(model, options = {}) {
    const h = withOptions('session', options, (o) =>
      check(native.ikllm_session_create(model.handle, o), 'ikllm_session_create').out_session);
    super(h, 'ikllm_session_free', model);
    this.model = model;
    this._cancel = null;
  }

  get nCtx() { return native.ikllm_session_n_ctx(this.handle); }

  _decodeArgs(tokens, { positions, seqIds, logits } = {}) {
    const n = tokens.length;
    return [this.handle, Int32Array.from(tokens), perToken(positions, n, 'positions'), perToken(seqIds, n, 'seqIds'),
            wantLogits(logits, n), 0];
  }

  // Decodes one batch. logits: 'last' (default), 'all' or per-token booleans.
  decode(tokens, opts) {
    check(native.ikllm_session_decode(...this._decodeArgs(tokens, opts)), 'ikllm_session_decode');
  }

  // The same on the libuv thread pool.
  async decodeAsync(tokens, opts) {
    check(await native.ikllm_session_decode_async(...this._decodeArgs(tokens, opts)), 'ikllm_session_decode');
  }

  // Logits of batch token `index` of the last decode (-1: the last with logits), copied.
  logits(index = -1) {
    return check(native.ikllm_session_logits(this.handle, index), 'ikllm_session_logits').out_logits;
  }

  // A CancelFlag polled during decode (IKLLM_CANCELLED, cache unchanged); null removes it.
  setCancelFlag(flag) {
    this._cancel = flag;  // the library keeps a pointer into flag.array: keep it alive
    check(native.ikllm_session_set_cancel_flag(this.handle, flag ? flag.array : null), 'ikllm_session_set_cancel_flag');
  }

  seqPosMax(seqId = 0) { return native.ikllm_session_seq_pos_max(this.handle, seqId); }
  seqRemove(seqId, p0 = 0, p1 = -1) { check(native.ikllm_session_seq_remove(this.handle, seqId, p0, p1), 'ikllm_session_seq_remove'); }
  clear() { check(native.ikllm_session_clear(this.handle), 'ikllm_session_clear'); }
}

// A sampler chain: temperature (0 = greedy), top_k, ..., grammar or json_schema.
class Sampler extends Owned {
  constructor(model, options = {}) {
    const h = withOptions('sampler', options, (o) =>
      check(native.ikllm_sampler_create(model.handle, o), 'ikllm_sampler_create').out_sampler);
    super(h, 'ikllm_sampler_free', model);
  }

  sample(session, index = -1) {
    return check(native.ikllm_sampler_sample(this.handle, session.handle, index), 'ikllm_sampler_sample').out_token;
  }

  async sampleAsync(session, index = -1) {
    const r = await native.ikllm_sampler_sample_async(this.handle, session.handle, index);
    return check(r, 'ikllm_sampler_sample').out_token;
  }

  sampleLogits(logits) {
    return check(native.ikllm_sampler_sample_logits(this.handle, Float32Array.from(logits)), 'ikllm_sampler_sample_logits').out_token;
  }

  // Records tokens for penalties (and the grammar unless grammar is false, as for a prompt).
  accept(tokens, { grammar = true } = {}) {
    check(native.ikllm_sampler_accept_v2(this.handle, Int32Array.from(tokens), grammar ? 0 : abi.IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR),
          'ikllm_sampler_accept_v2');
  }

  reset() { check(native.ikllm_sampler_reset(this.handle), 'ikllm_sampler_reset'); }

  get grammarState() {
    return check(native.ikllm_sampler_grammar_state(this.handle), 'ikllm_sampler_grammar_state').out_state;
  }
}

// Incremental detokenizer: push() returns only complete UTF-8 text.
class Detokenizer extends Owned {
  constructor(model, { keepLeadingSpace = true, renderSpecial = false } = {}) {
    const flags = (keepLeadingSpace ? abi.IKLLM_DETOK_KEEP_LEADING_SPACE : 0) | (renderSpecial ? abi.IKLLM_DETOK_RENDER_SPECIAL : 0);
    super(check(native.ikllm_detok_create(model.handle, flags), 'ikllm_detok_create').out_detok, 'ikllm_detok_free', model);
  }
  push(token) { return check(native.ikllm_detok_push(this.handle, token), 'ikllm_detok_push').out_text; }
  flush() { return check(native.ikllm_detok_flush(this.handle), 'ikllm_detok_flush').out_text; }
}

// The loop of `ikllm run`, with the native steps behind `step` (sync or async).
function* steps(model, prompt, nPredict, session, sampler, detok, parseSpecial) {
  const toks = model.tokenize(prompt, { parseSpecial });
  if (toks.length === 0) throw new RangeError('the prompt produced no tokens');
  sampler.accept(toks, { grammar: false });
  yield { decode: toks };
  for (let i = 0; i < nPredict; i++) {
    const tok = yield { sample: true };
    if (model.isEog(tok)) break;
    const piece = detok.push(tok);
    if (piece) yield { piece };
    if (sampler.grammarState === abi.IKLLM_GRAMMAR_DONE) break;
    const r = yield { decodeOne: tok };
    if (r.status === abi.IKLLM_CONTEXT_FULL) break;
    check(r, 'ikllm_session_decode');
  }
  const tail = detok.flush();
  if (tail) yield { piece: tail };
}

function setup(model, sampler, sessionOptions, signal) {
  const session = new Session(model, { n_ctx: 4096, n_seq_max: 1, ...sessionOptions });
  const smp = new Sampler(model, sampler);
  const detok = new Detokenizer(model);
  if (signal) {
    const { CancelFlag } = require('./model.js');
    session.setCancelFlag(new CancelFlag(signal));
  }
  return { session, smp, detok, close: () => { detok.close(); smp.close(); session.close(); } };
}

// Streams the continuation of prompt as text pieces, as `ikllm run` does (BOS as the vocabulary
// asks; the prompt recorded in the sampler but not its grammar; stop at end of generation, a
// completed grammar, a full context or nPredict tokens). Every decode and sample runs on the libuv
// thread pool. Options: sampler (e.g. {temperature: 0}), session, signal (AbortSignal).
async function* generate(model, prompt, nPredict, { sampler = {}, session: sessionOptions = {}, signal, parseSpecial = false } = {}) {
  const s = setup(model, sampler, sessionOptions, signal);
  try {
    const it = steps(model, prompt, nPredict, s.session, s.smp, s.detok, parseSpecial);
    let input;
    for (let step = it.next(); !step.done; step = it.next(input)) {
      const w = step.value;
      input = undefined;
      if (w.decode) await s.session.decodeAsync(w.decode);
      else if (w.sample) input = await s.smp.sampleAsync(s.session);
      else if (w.decodeOne !== undefined)
        input = await native.ikllm_session_decode_async(s.session.handle, Int32Array.of(w.decodeOne), null, null, null, 0);
      else yield w.piece;
    }
  } finally {
    s.close();
  }
}

// The same on the calling thread.
function* generateSync(model, prompt, nPredict, { sampler = {}, session: sessionOptions = {}, parseSpecial = false } = {}) {
  const s = setup(model, sampler, sessionOptions, null);
  try {
    const it = steps(model, prompt, nPredict, s.session, s.smp, s.detok, parseSpecial);
    let input;
    for (let step = it.next(); !step.done; step = it.next(input)) {
      const w = step.value;
      input = undefined;
      if (w.decode) s.session.decode(w.decode);
      else if (w.sample) input = s.smp.sample(s.session);
      else if (w.decodeOne !== undefined)
        input = native.ikllm_session_decode(s.session.handle, Int32Array.of(w.decodeOne), null, null, null, 0);
      else yield w.piece;
    }
  } finally {
    s.close();
  }
}

module.exports = { Session, Sampler, Detokenizer, generate, generateSync };
