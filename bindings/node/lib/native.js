// Loads the N-API addon (built by build.sh) and, through it, libikllm from IKLLM_LIB (default: the
// project's build). The addon refuses a library with another ABI major (code IKLLM_ABI_MISMATCH).
'use strict';
const fs = require('fs');
const path = require('path');
const abi = require('./abi.g.js');

const pkg = path.join(__dirname, '..');
const repoBuild = path.join(pkg, '..', '..', 'build');

function firstExisting(candidates) {
  return candidates.find((p) => p && fs.existsSync(p));
}

function addonPath() {
  const found = firstExisting([
    process.env.IKLLM_NODE_ADDON,
    process.env.IKLLM_BUILD_DIR && path.join(process.env.IKLLM_BUILD_DIR, 'bindings', 'node', 'ikllm.node'),
    path.join(repoBuild, 'bindings', 'node', 'ikllm.node'),
    path.join(pkg, 'build', 'ikllm.node'),
  ]);
  if (!found) {
    const err = new Error('ikllm: the native addon is not built; run bindings/node/build.sh (or npm install)');
    err.code = 'IKLLM_ADDON_MISSING';
    throw err;
  }
  return found;
}

function libraryPath() {
  return process.env.IKLLM_LIB || firstExisting([path.join(repoBuild, 'libikllm.so')]) ||
         `libikllm.so.${abi.ABI_VERSION}`;
}

const native = require(addonPath());
native.load(libraryPath());

module.exports = native;
