#!/usr/bin/env python3
"""Writes samples/models/ikllm-demo.json: data, tokenizer, shape, training run and the measured checks."""
import argparse
import csv
import json
import os
import subprocess

import sentencepiece as spm
import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True, help="build/train-demo")
    ap.add_argument("--model", required=True, help="the shipped GGUF")
    ap.add_argument("--quant", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reproduce", required=True)
    ap.add_argument("--sample-prompt", required=True)
    ap.add_argument("--sample-output", required=True, help="file holding the greedy sample")
    args = ap.parse_args()
    ck = torch.load(os.path.join(args.work, "run", "ckpt.pt"), map_location="cpu")
    cfg = ck["config"]
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.work, "data", "tokenizer.model"))
    with open(os.path.join(args.work, "run", "loss.csv")) as f:
        rows = list(csv.DictReader(f))
    last = [float(r["train_loss"]) for r in rows if r["train_loss"]][-50:]
    held = [float(r["heldout_loss"]) for r in rows if r["heldout_loss"]]
    final_held = ck.get("final_heldout_loss", held[-1] if held else float("nan"))  # absent mid-training
    verify = json.load(open(os.path.join(args.work, "verify.json")))
    ppl = json.load(open(os.path.join(args.work, "eval.json")))

    def count_docs(name):
        with open(os.path.join(args.work, "data", name), encoding="utf-8") as f:
            return sum(1 for d in f.read().split("\n\n") if d.strip())

    manifest = {
        "model": os.path.basename(args.model),
        "bytes": os.path.getsize(args.model),
        "quantization": args.quant,
        "architecture": "llama (RMSNorm, RoPE, SwiGLU, GQA, tied embeddings)",
        "shape": cfg,
        "parameters": sum(v.numel() for v in ck["model"].values()),
        "data": {
            "sources": "Debian packages fortunes and fortunes-min (/usr/share/games/fortunes), "
                       "without the offensive (off/) and ASCII-art collections",
            "license": "BSD (see /usr/share/doc/fortunes/copyright); the held-out text committed next to "
                       "the model is an excerpt of the same files",
            "cleaning": "attribution lines dropped, art/code/tables/non-ASCII fortunes dropped, "
                        "lines reflowed, duplicates removed",
            "train_documents": count_docs("train.txt"),
            "chat_documents": count_docs("chat.txt"),
            "heldout_documents": count_docs("heldout.txt"),
            "split": "md5(text) % 100 < 2 is held out",
        },
        "tokenizer": {"kind": "SentencePiece BPE, byte fallback (GGUF tokenizer.ggml.model = llama)",
                      "vocab": sp.get_piece_size(), "bos": sp.bos_id(), "eos": sp.eos_id(),
                      "unk": sp.unk_id()},
        "chat_template": "User: ...\\nAssistant: ... (plain text; the assistant turn ends with </s>)",
        "training": {
            "steps": ck["step"], "tokens_seen": ck["tokens"], "wall_time_s": round(ck["elapsed"], 1),
            "tokens_per_s": round(ck["tokens"] / ck["elapsed"], 1),
            "batch": "8 x 256 tokens",
            "optimizer": "AdamW (0.9, 0.95), weight decay 0.1, lr 4e-3, 20 warm-up steps, cosine to 10% "
                         "over the time budget",
            "hardware": "2 shared CPU cores, PyTorch %s with OpenBLAS" % torch.__version__,
            "final_train_loss_mean_last_50_steps": round(sum(last) / len(last), 4),
            "final_heldout_loss": round(final_held, 4),
        },
        "checks": {"engine_vs_torch_logits_f32": verify, "heldout_perplexity": ppl},
        "sample": {"prompt": args.sample_prompt, "greedy_output": open(args.sample_output).read().strip()},
        "loss_curve": "ikllm-demo-loss.png",
        "reproduce": args.reproduce,
    }
    with open(args.out, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
