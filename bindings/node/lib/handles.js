// Ownership of native handles: close() frees at once (children first: a model closes its
// sessions); a FinalizationRegistry frees what was forgotten. The registry's held value keeps the
// parent object (e.g. the model of a session) reachable until the child is freed, so native
// objects are always freed children first.
'use strict';
const native = require('./native.js');

const registry = new FinalizationRegistry((held) => {
  if (!held.closed) native[held.free](held.handle);
});

class Owned {
  constructor(handle, free, parent) {
    this._held = { handle, free, parent: parent || null, closed: false };
    this._children = new Set();
    if (parent) parent._children.add(new WeakRef(this));
    registry.register(this, this._held, this._held);
  }

  get handle() {
    if (this._held.closed) throw new Error(`${this.constructor.name} is closed`);
    return this._held.handle;
  }

  close() {
    if (this._held.closed) return;
    this._held.closed = true;
    for (const ref of this._children) ref.deref()?.close();
    this._children.clear();
    registry.unregister(this._held);
    native[this._held.free](this._held.handle);
  }

  [Symbol.dispose]() {
    this.close();
  }
}

module.exports = { Owned };
