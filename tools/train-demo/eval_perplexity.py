#!/usr/bin/env python3
"""Held-out perplexity of a GGUF as ikllm computes it vs PyTorch on the same (dequantized) weights.

PyTorch uses ikllm's definition (docs/quality-tools.md): the text is tokenized once with BOS, cut into
n_tokens // ctx windows whose first token is replaced by BOS, and only the second half of each window is
scored (logits at [ctx/2, ctx-1) predict tokens [ctx/2 + 1, ctx)). Optionally also the float checkpoint.
"""
import argparse
import json
import math
import sys

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

import ikllm_cli
from model import Llama, load_checkpoint


def sliding_ppl(model, ids, ctx, bos):
    first = ctx // 2
    nll = []
    with torch.no_grad():
        for w in range(len(ids) // ctx):
            win = list(ids[w * ctx:(w + 1) * ctx])
            win[0] = bos
            x = torch.tensor([win])
            logp = F.log_softmax(model(x)[0].double(), dim=-1)
            for i in range(first, ctx - 1):
                nll.append(-logp[i, win[i + 1]].item())
    return math.exp(sum(nll) / len(nll)), len(nll)


def model_from_gguf(ikllm, gguf, cfg):
    """A PyTorch model holding the engine's dequantized weights of gguf."""
    model = Llama(cfg)
    tensors = {name: ikllm_cli.dequant(ikllm, gguf, name) for name in model.gguf_parameter_map()}
    model.load_gguf_tensors(tensors)
    return model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--ckpt", required=True, help="training checkpoint (config, and the float weights)")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--ctx", type=int, default=0, help="window (0: the model's context)")
    ap.add_argument("--ikllm", default="build/ikllm")
    ap.add_argument("--max-rel-diff", type=float, default=0.01)
    ap.add_argument("--json-out", help="also write the result here")
    args = ap.parse_args()
    torch.set_num_threads(2)
    float_model, _ = load_checkpoint(args.ckpt)
    cfg = float_model.cfg
    ctx = args.ctx or cfg.ctx
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    ids = [sp.bos_id()] + sp.encode(open(args.text, encoding="utf-8").read())

    engine = ikllm_cli.perplexity(args.ikllm, args.gguf, args.text, ctx)
    torch_deq, n = sliding_ppl(model_from_gguf(args.ikllm, args.gguf, cfg), ids, ctx, sp.bos_id())
    torch_float, _ = sliding_ppl(float_model, ids, ctx, sp.bos_id())
    rel = abs(engine - torch_deq) / torch_deq
    res = {"ctx": ctx, "scored_tokens": n, "ppl_ikllm": engine, "ppl_torch_dequantized": torch_deq,
           "ppl_torch_float": torch_float, "rel_diff_ikllm_vs_torch": rel,
           "rel_diff_dequantized_vs_float": (torch_deq - torch_float) / torch_float,
           "ok": rel <= args.max_rel_diff}
    print(json.dumps(res, indent=1))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
