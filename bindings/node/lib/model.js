// Library instance, model loading (progress and cancel), metadata, tokenization, chat templates.
'use strict';
const abi = require('./abi.g.js');
const native = require('./native.js');
const { check, IkllmError } = require('./errors.js');
const { Owned } = require('./handles.js');
const { withOptions, withOptionsAsync } = require('./options.js');

// A flag the library polls; cancel() (or an AbortSignal given to link()) stops a load or decode.
class CancelFlag {
  constructor(signal) {
    this.array = new Int32Array(new SharedArrayBuffer(4));
    if (signal) this.link(signal);
  }
  cancel() { Atomics.store(this.array, 0, 1); }
  reset() { Atomics.store(this.array, 0, 0); }
  get cancelled() { return Atomics.load(this.array, 0) !== 0; }
  link(signal) {
    if (signal.aborted) this.cancel();
    else signal.addEventListener('abort', () => this.cancel(), { once: true });
    return this;
  }
}

class Library extends Owned {
  constructor({ defaultThreads } = {}) {
    super(check(native.ikllm_lib_create(0), 'ikllm_lib_create').out_lib, 'ikllm_lib_free');
    if (defaultThreads !== undefined)
      check(native.ikllm_lib_set_default_threads(this.handle, defaultThreads), 'ikllm_lib_set_default_threads');
  }
}

// Caller-buffer convention: query the size with a null buffer, then fill.
function readBuffer(call, what, make = (n) => Buffer.alloc(n)) {
  let r = call(null);
  if (r.status !== abi.IKLLM_OK && r.status !== abi.IKLLM_ERR_BUFFER_TOO_SMALL) check(r, what);
  const count = r.needed ?? r.n_tokens;
  const buf = make(Math.max(count, 1));
  r = check(call(buf), what);
  return { buf, count: r.needed ?? r.n_tokens };
}
function readText(call, what) {
  const { buf, count } = readBuffer(call, what);
  return buf.toString('utf8', 0, Math.max(count - 1, 0));
}

function progressAdapter(progress, errors) {
  if (!progress) return null;
  return (p) => {
    try {
      return progress(p) === false ? 1 : 0;  // returning false cancels
    } catch (e) {
      errors.push(e);
      return 1;
    }
  };
}

// A loaded GGUF model: immutable, shareable. close() it (or rely on garbage collection).
class Model extends Owned {
  // Synchronous load: progress(p) runs on the JS thread and may return false to cancel.
  constructor(path, { options, progress, cancel, signal, library, ownsLibrary } = {}, _handle) {
    const lib = library || new Library();
    let handle = _handle;
    if (!handle) {
      const flag = cancel || (signal ? new CancelFlag(signal) : null);
      const errors = [];
      const r = withOptions('model', options, (o) =>
        native.ikllm_model_load(lib.handle, path, o, progressAdapter(progress, errors), flag && flag.array));
      if (errors.length) {
        if (!library) lib.close();
        throw errors[0];
      }
      if (r.status !== abi.IKLLM_OK) {
        if (!library) lib.close();
        throw new IkllmError(r.status, r.error, `cannot load model '${path}'`);
      }
      handle = r.out_model;
    }
    super(handle, 'ikllm_model_free', lib);
    this.library = lib;
    this._ownsLibrary = ownsLibrary ?? !library;
    this.path = path;
  }

  // Loads on the libuv thread pool. progress(p) is called asynchronously (its return value is
  // ignored); cancel with a CancelFlag or an AbortSignal.
  static async load(path, { options, progress, cancel, signal, library } = {}) {
    const lib = library || new Library();
    const flag = cancel || (signal ? new CancelFlag(signal) : null);
    const r = await withOptionsAsync('model', options, (o) =>
      native.ikllm_model_load_async(lib.handle, path, o, progress || null, flag && flag.array));
    // Progress calls are queued from the loading thread: let them run before returning.
    await new Promise((resolve) => setImmediate(resolve));
    if (r.status !== abi.IKLLM_OK) {
      if (!library) lib.close();
      throw new IkllmError(r.status, r.error, `cannot load model '${path}'`);
    }
    return new Model(path, { library: lib, ownsLibrary: !library }, r.out_model);
  }

  close() {
    super.close();
    if (this._ownsLibrary) this.library.close();
  }

  get architecture() { return native.ikllm_model_architecture(this.handle); }
  get name() { return native.ikllm_model_name(this.handle); }
  get nVocab() { return native.ikllm_model_n_vocab(this.handle); }
  get nCtxTrain() { return native.ikllm_model_n_ctx_train(this.handle); }
  get nEmbd() { return native.ikllm_model_n_embd(this.handle); }
  get nLayer() { return native.ikllm_model_n_layer(this.handle); }
  get nParams() { return native.ikllm_model_n_params(this.handle); }

  metadata({ full = false } = {}) {
    const out = {};
    for (let i = 0; i < native.ikllm_model_meta_count(this.handle); i++) {
      const key = native.ikllm_model_meta_key(this.handle, i);
      out[key] = readText((b) => native.ikllm_model_meta_value(this.handle, key, full ? abi.IKLLM_META_FULL : 0, b),
                          'ikllm_model_meta_value');
    }
    return out;
  }

  specialToken(which) {
    const t = native.ikllm_model_special_token(this.handle, which);
    return t < 0 ? null : t;
  }
  get bos() { return this.specialToken(abi.IKLLM_TOKEN_BOS); }
  get eos() { return this.specialToken(abi.IKLLM_TOKEN_EOS); }
  isEog(token) { return native.ikllm_token_is_eog(this.handle, token); }

  tokenize(text, { addSpecial = true, parseSpecial = false } = {}) {
    const flags = (addSpecial ? abi.IKLLM_TOKENIZE_ADD_SPECIAL : 0) | (parseSpecial ? abi.IKLLM_TOKENIZE_PARSE_SPECIAL : 0);
    const { buf, count } = readBuffer((b) => native.ikllm_tokenize(this.handle, text, flags, b), 'ikllm_tokenize',
                                      (n) => new Int32Array(n));
    return Array.from(buf.subarray(0, count));
  }

  detokenize(tokens, { renderSpecial = false } = {}) {
    const arr = Int32Array.from(tokens);
    return readText((b) => native.ikllm_detokenize(this.handle, arr, renderSpecial ? abi.IKLLM_DETOK_RENDER_SPECIAL : 0, b),
                    'ikllm_detokenize');
  }

  // The default chat template (name undefined) or a named one; null when the model has none.
  chatTemplate(name = null) {
    const r = native.ikllm_model_chat_template(this.handle, name);
    if (r.status === abi.IKLLM_ERR_NOT_FOUND) return null;
    return check(r, 'ikllm_model_chat_template').out_template;
  }
}

module.exports = { CancelFlag, Library, Model, readBuffer, readText };
