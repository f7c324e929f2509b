#!/usr/bin/env python3
"""Checks the engine against PyTorch on an F32 export: tokenization and logits.

1. `ikllm tokenize` of the held-out text must equal BOS + SentencePiece's own encoding.
2. `ikllm logits` (one batch, f32 KV cache) vs this repo's PyTorch forward pass for the same tokens:
   rms_rel = rms(engine - torch) / rms(torch) must be <= --max-rms-rel (1e-4).
"""
import argparse
import json
import sys

import numpy as np
import sentencepiece as spm
import torch

import ikllm_cli
from model import load_checkpoint


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--gguf", required=True, help="F32 export of --ckpt")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--text", required=True, help="held-out text")
    ap.add_argument("--ikllm", default="build/ikllm")
    ap.add_argument("--n-tokens", type=int, default=0, help="tokens for the logits check (0: the context)")
    ap.add_argument("--max-rms-rel", type=float, default=1e-4)
    ap.add_argument("--json-out", help="also write the result here")
    args = ap.parse_args()
    torch.set_num_threads(2)
    model, _ = load_checkpoint(args.ckpt)
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    text = open(args.text, encoding="utf-8").read()

    ref = [sp.bos_id()] + sp.encode(text)
    got = ikllm_cli.tokenize(args.ikllm, args.gguf, text)
    first_diff = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), None)
    tok_ok = ref == got
    print("tokenize: %d tokens, engine %s sentencepiece%s" % (
        len(ref), "==" if tok_ok else "!=", "" if tok_ok else " (first difference at %s)" % first_diff))

    n = args.n_tokens or model.cfg.ctx
    ids = ref[:n]
    with torch.no_grad():
        want = model(torch.tensor([ids]))[0].double().numpy()
    have = ikllm_cli.logits(args.ikllm, args.gguf, ids, model.cfg.vocab, model.cfg.ctx).astype(np.float64)
    rms_rel = float(np.sqrt(np.mean((have - want) ** 2)) / np.sqrt(np.mean(want ** 2)))
    max_abs = float(np.max(np.abs(have - want)))
    same_top = float(np.mean(have.argmax(-1) == want.argmax(-1)))
    ok = tok_ok and rms_rel <= args.max_rms_rel
    res = {"tokenize_match": tok_ok, "tokens_compared": len(ref), "logits_positions": len(ids),
           "rms_rel": rms_rel, "max_abs": max_abs, "same_argmax": same_top, "ok": ok}
    print(json.dumps(res))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
