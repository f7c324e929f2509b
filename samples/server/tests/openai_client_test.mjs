// Drives ikllm-server with the official `openai` npm client. Environment: BASE_URL (server root),
// API_KEY, MODEL_ID. The model has random weights: checks are about shapes, constraints and
// consistency, never about the words. Exits non-zero on the first failure.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.BASE_URL + '/v1', apiKey: process.env.API_KEY, maxRetries: 0, timeout: 60000 });
const MODEL = process.env.MODEL_ID;
let passed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log('ok   ' + name);
  } catch (e) {
    console.log('FAIL ' + name);
    console.log(e);
    process.exit(1);
  }
}

const greedy = { model: MODEL, temperature: 0, max_tokens: 16, cache_prompt: false };
const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Name three colours.' }];

await check('models.list', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, MODEL);
  assert.equal(list.data[0].object, 'model');
  assert.equal((await client.models.retrieve(MODEL)).id, MODEL);
  await assert.rejects(client.models.retrieve('no-such-model'), (e) => e instanceof OpenAI.NotFoundError);
});

let wholeText;
await check('chat completion', async () => {
  const r = await client.chat.completions.create({ ...greedy, messages });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  wholeText = r.choices[0].message.content;
});

await check('chat streaming carries the same text, usage last', async () => {
  const stream = await client.chat.completions.create({ ...greedy, messages, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks >= 3);
  assert.equal(text, wholeText);
  assert.ok(finish);
  assert.ok(usage && usage.completion_tokens > 0);
});

await check('prompt prefix is reused', async () => {
  const a = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 4 });
  const b = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 4 });
  assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(b.usage));
});

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, celsius: { type: 'boolean' } },
      required: ['city', 'celsius'],
      additionalProperties: false,
    },
  },
}, {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'], additionalProperties: false } },
}];

function checkCall(call) {
  assert.equal(call.type, 'function');
  assert.ok(call.id);
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') {
    assert.ok(['Paris', 'Oslo'].includes(args.city));
    assert.equal(typeof args.celsius, 'boolean');
  } else {
    assert.equal(call.function.name, 'get_time');
    assert.ok(['UTC', 'CET'].includes(args.zone));
  }
}

await check('tools: tool_choice required gives a parsed tool call', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice: 'required', max_tokens: 200, seed: 7,
  });
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.ok(m.tool_calls.length >= 1);
  m.tool_calls.forEach(checkCall);
});

await check('tools: named function, streamed', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Time?' }], tools,
    tool_choice: { type: 'function', function: { name: 'get_time' } }, max_tokens: 200, stream: true,
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      for (const d of c.delta?.tool_calls ?? []) {
        calls[d.index] ??= { id: d.id, type: 'function', function: { name: '', arguments: '' } };
        calls[d.index].function.name += d.function?.name ?? '';
        calls[d.index].function.arguments += d.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.name, 'get_time');
  checkCall(calls[0]);
});

await check('tools: a conversation with a tool result renders', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, max_tokens: 4, tools,
    messages: [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo","celsius":true}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 3}' },
    ],
  });
  assert.equal(r.choices[0].message.role, 'assistant');
});

const schema = {
  type: 'object',
  properties: {
    colour: { type: 'string', enum: ['red', 'green', 'blue'] },
    count: { type: 'integer', minimum: 0, maximum: 99 },
    ok: { type: 'boolean' },
  },
  required: ['colour', 'count', 'ok'],
  additionalProperties: false,
};

await check('response_format json_schema output parses and matches', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model: MODEL, messages, seed, max_tokens: 200,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    });
    const v = JSON.parse(r.choices[0].message.content);
    assert.deepEqual(Object.keys(v).sort(), ['colour', 'count', 'ok']);
    assert.ok(schema.properties.colour.enum.includes(v.colour));
    assert.ok(Number.isInteger(v.count) && v.count >= 0 && v.count <= 99);
    assert.equal(typeof v.ok, 'boolean');
  }
});

await check('response_format json_object, streamed', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages, max_tokens: 300, seed: 5, stream: true, response_format: { type: 'json_object' },
    // a small object: random weights would otherwise ramble until max_tokens
    temperature: 0.7,
  });
  let text = '', finish = null;
  for await (const chunk of stream) for (const c of chunk.choices) { text += c.delta?.content ?? ''; finish = c.finish_reason ?? finish; }
  if (finish === 'stop') assert.equal(typeof JSON.parse(text), 'object');
  else assert.ok(text.startsWith('{'));
});

await check('logprobs with top_logprobs', async () => {
  const r = await client.chat.completions.create({ ...greedy, messages, max_tokens: 5, logprobs: true, top_logprobs: 3 });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const e of lp) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 3);
    assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[2].logprob);
    // greedy: the chosen token is the most likely one
    assert.ok(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-5);
  }
});

await check('stop strings end the text before them', async () => {
  const full = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', temperature: 0, max_tokens: 24, cache_prompt: false });
  const text = full.choices[0].text;
  const stop = text.slice(8, 12);
  assert.ok(stop.length === 4);
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', temperature: 0, max_tokens: 24, stop: [stop], cache_prompt: false });
  assert.equal(r.choices[0].text, text.slice(0, text.indexOf(stop)));
  assert.equal(r.choices[0].finish_reason, 'stop');
});

await check('legacy completions, streamed equals whole', async () => {
  const p = { model: MODEL, prompt: 'The capital of France is', temperature: 0, max_tokens: 12, cache_prompt: false };
  const whole = await client.completions.create(p);
  assert.equal(whole.object, 'text_completion');
  let text = '';
  for await (const c of await client.completions.create({ ...p, stream: true })) text += c.choices[0]?.text ?? '';
  assert.equal(text, whole.choices[0].text);
});

await check('embeddings (base64 default of the client, and float)', async () => {
  const r = await client.embeddings.create({ model: MODEL, input: ['hello world', 'goodbye'] });
  assert.equal(r.data.length, 2);
  const n = r.data[0].embedding.length;
  assert.ok(n > 0);
  const norm = Math.sqrt(r.data[0].embedding.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-3, 'normalised: ' + norm);
  const f = await client.embeddings.create({ model: MODEL, input: 'hello world', encoding_format: 'float' });
  assert.equal(f.data[0].embedding.length, n);
  for (let i = 0; i < n; i++) assert.ok(Math.abs(f.data[0].embedding[i] - r.data[0].embedding[i]) < 1e-6);
  assert.ok(f.usage.prompt_tokens > 0);
});

await check('errors: wrong API key is 401', async () => {
  const bad = new OpenAI({ baseURL: process.env.BASE_URL + '/v1', apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});

await check('errors: bad parameters are 400 with the param named', async () => {
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages, temperature: 'hot' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages');
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages, n: 2 }), (e) => e.status === 400);
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', not: {} } } } }),
    (e) => e.status === 400 && e.param === 'response_format');
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [{ role: 'wizard', content: 'x' }] }), (e) => e.status === 400);
  await assert.rejects(client.embeddings.create({ model: MODEL, input: 42 }), (e) => e.status === 400);
});

await check('errors: unknown route is 404', async () => {
  await assert.rejects(client.get('/no/such/route'), (e) => e instanceof OpenAI.NotFoundError);
});

await check('errors: prompt longer than the slot context is 400', async () => {
  await assert.rejects(client.completions.create({ model: MODEL, prompt: 'word '.repeat(3000), max_tokens: 1 }),
    (e) => e.status === 400 && e.code === 'context_length_exceeded');
});

console.log(`${passed} checks passed`);
