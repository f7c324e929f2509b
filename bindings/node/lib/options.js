// Options objects built from plain JS objects, and the library's listing of every option key.
'use strict';
const abi = require('./abi.g.js');
const native = require('./native.js');
const { check } = require('./errors.js');

const KINDS = {
  model: abi.IKLLM_OPTIONS_MODEL, session: abi.IKLLM_OPTIONS_SESSION, sampler: abi.IKLLM_OPTIONS_SAMPLER,
  quantize: abi.IKLLM_OPTIONS_QUANTIZE, chat: abi.IKLLM_OPTIONS_CHAT,
};
const TYPES = { [abi.IKLLM_OPTION_INT]: 'int', [abi.IKLLM_OPTION_FLOAT]: 'float', [abi.IKLLM_OPTION_STRING]: 'string' };

function listOptions(kind) {
  const k = KINDS[kind];
  const out = [];
  for (let i = 0; i < native.ikllm_option_count(k); i++) {
    const r = check(native.ikllm_option_info(k, i), 'ikllm_option_info');
    out.push({ name: r.out_name, type: TYPES[r.out_type], default: r.out_default, min: r.out_min,
               max: r.out_max, doc: r.out_doc });
  }
  return out;
}

function setOption(h, key, value) {
  const what = `option '${key}'`;
  if (typeof value === 'boolean') check(native.ikllm_options_set_int(h, key, value ? 1 : 0), what);
  else if (typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value)))
    check(native.ikllm_options_set_int(h, key, value), what);
  else if (typeof value === 'number') check(native.ikllm_options_set_float(h, key, value), what);
  else if (typeof value === 'string') check(native.ikllm_options_set_string(h, key, value), what);
  else throw new TypeError(`${what}: unsupported value type ${typeof value}`);
}

// Calls fn(handle) with an options object of `kind` holding `values`, freed afterwards.
function withOptions(kind, values, fn) {
  if (!(kind in KINDS)) throw new TypeError(`unknown options kind '${kind}'`);
  const h = check(native.ikllm_options_create(KINDS[kind]), 'ikllm_options_create').out_options;
  try {
    for (const [k, v] of Object.entries(values || {})) setOption(h, k, v);
    return fn(h);
  } finally {
    native.ikllm_options_free(h);
  }
}

async function withOptionsAsync(kind, values, fn) {
  const h = check(native.ikllm_options_create(KINDS[kind]), 'ikllm_options_create').out_options;
  try {
    for (const [k, v] of Object.entries(values || {})) setOption(h, k, v);
    return await fn(h);
  } finally {
    native.ikllm_options_free(h);
  }
}

module.exports = { listOptions, withOptions, withOptionsAsync, KINDS };
