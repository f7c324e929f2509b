#!/usr/bin/env node
// Prints the greedy continuation of a prompt exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0`;
// generation runs off the main thread. Usage: node generate.js MODEL PROMPT N
'use strict';
const ikllm = require('../lib/index.js');

async function main([modelPath, prompt, n]) {
  if (n === undefined) throw new Error('usage: generate.js MODEL PROMPT N');
  const model = await ikllm.Model.load(modelPath);
  try {
    process.stdout.write(prompt);
    for await (const piece of ikllm.generate(model, prompt, Number(n), { sampler: { temperature: 0 } }))
      process.stdout.write(piece);
    process.stdout.write('\n');
  } finally {
    model.close();
  }
}

main(process.argv.slice(2)).catch((e) => {
  console.error(e.message);
  process.exit(1);
});
