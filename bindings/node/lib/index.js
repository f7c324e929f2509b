// Node binding of ikllm: an N-API addon over libikllm's C ABI (lib/abi.g.js and src/abi.g.cc are
// generated from bindings/abi.json) plus this small hand-written layer.
'use strict';
const abi = require('./abi.g.js');
const native = require('./native.js');
const { IkllmError, check } = require('./errors.js');
const { CancelFlag, Library, Model, readText } = require('./model.js');
const { listOptions } = require('./options.js');
const { Detokenizer, Sampler, Session, generate, generateSync } = require('./session.js');
const { withOptions } = require('./options.js');

function version() { return native.ikllm_version_string(); }
function abiVersion() { return native.ikllm_abi_version(); }
function statusName(status) { return native.ikllm_status_name(status); }

// Renders messages with a Jinja chat template (template text, or the model's default one).
function renderChat(messages, { template = null, model = null, addGenerationPrompt = true, tools = null,
                                extraVars = null, now } = {}) {
  const json = (v) => (v == null ? null : JSON.stringify(v));
  return withOptions('chat', now ? { now } : {}, (o) =>
    readText((b) => native.ikllm_chat_render(model ? model.handle : null, template, json(messages), json(tools),
                                             json(extraVars), addGenerationPrompt ? 1 : 0, o, b), 'ikllm_chat_render'));
}

// GBNF text for a JSON Schema (object or JSON text).
function jsonSchemaToGrammar(schema) {
  const text = typeof schema === 'string' ? schema : JSON.stringify(schema);
  return check(native.ikllm_json_schema_to_grammar(text), 'ikllm_json_schema_to_grammar').out_gbnf;
}

module.exports = {
  abi, version, abiVersion, statusName, listOptions, IkllmError, CancelFlag, Library, Model, Session, Sampler,
  Detokenizer, generate, generateSync, renderChat, jsonSchemaToGrammar,
};
