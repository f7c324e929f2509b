// Errors carrying the library's status: err.code is the status name (e.g. 'IKLLM_ERR_IO').
'use strict';
const abi = require('./abi.g.js');

class IkllmError extends Error {
  constructor(status, message, call) {
    const code = abi.STATUS_NAMES[status] || `IKLLM_STATUS_${status}`;
    super(`${call ? call + ': ' : ''}${message || code} [${code}]`);
    this.name = 'IkllmError';
    this.code = code;
    this.status = status;
    this.nativeMessage = message || '';
  }
}

// Throws for a failed raw call result ({status, error}); returns the result otherwise.
function check(result, call) {
  if (result.status !== abi.IKLLM_OK) throw new IkllmError(result.status, result.error, call);
  return result;
}

module.exports = { IkllmError, check };
