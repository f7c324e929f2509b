#!/usr/bin/env python3
"""Trains the demo llama on the prepared corpus within a time (--minutes) or step (--steps) budget.

The learning rate warms up, then follows a cosine down to 10% driven by the budget's progress
(the larger of steps done / --steps and time used / --minutes), so a time-limited run still anneals.
Writes OUT/ckpt.pt (every --ckpt-minutes and at the end; resumable with --resume) and OUT/loss.csv.
"""
import argparse
import csv
import math
import os
import random
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")  # before torch loads its BLAS

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

from model import Config, Llama


def read_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in f.read().split("\n\n") if d.strip()]


def token_stream(sp, docs):
    """Every document as BOS + pieces + EOS, concatenated."""
    ids = []
    for d in docs:
        ids.append(sp.bos_id())
        ids.extend(sp.encode(d.strip("\n")))
        ids.append(sp.eos_id())
    return torch.tensor(ids, dtype=torch.long)


def batch(stream, n, ctx, rng):
    starts = [rng.randrange(0, len(stream) - ctx - 1) for _ in range(n)]
    x = torch.stack([stream[s:s + ctx + 1] for s in starts])
    return x[:, :-1], x[:, 1:]


@torch.no_grad()
def heldout_loss(model, stream, ctx, device):
    """Mean next-token loss over consecutive non-overlapping windows of the held-out stream."""
    model.eval()
    total, count = 0.0, 0
    for s in range(0, len(stream) - ctx - 1, ctx):
        x = stream[s:s + ctx + 1].to(device)
        logits = model(x[None, :-1])
        total += F.cross_entropy(logits[0], x[1:], reduction="sum").item()
        count += ctx
    model.train()
    return total / max(count, 1)


def lr_at(progress, step, base_lr, warmup):
    if step < warmup:
        return base_lr * (step + 1) / warmup
    return base_lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def save(path, model, opt, cfg, state):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "config": cfg.to_dict(), **state}, tmp)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="folder from prepare_data.py + train_tokenizer.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=60.0, help="wall-time budget")
    ap.add_argument("--steps", type=int, default=1000000, help="step budget")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-kv-head", type=int, default=2)
    ap.add_argument("--n-ff", type=int, default=384)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--ckpt-minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--device", default="auto", help="auto, cpu or cuda")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    os.makedirs(args.out, exist_ok=True)

    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.data, "tokenizer.model"))
    docs = read_docs(os.path.join(args.data, "train.txt")) + read_docs(os.path.join(args.data, "chat.txt"))
    random.Random(args.seed).shuffle(docs)
    train = token_stream(sp, docs)
    held = token_stream(sp, read_docs(os.path.join(args.data, "heldout.txt")))
    print("train tokens %d, heldout tokens %d" % (len(train), len(held)), flush=True)

    cfg = Config(vocab=sp.get_piece_size(), n_embd=args.n_embd, n_layer=args.n_layer, n_head=args.n_head,
                 n_kv_head=args.n_kv_head, n_ff=args.n_ff, ctx=args.ctx, dropout=args.dropout)
    model = Llama(cfg).to(device)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    state = {"step": 0, "tokens": 0, "elapsed": 0.0}
    ckpt_path = os.path.join(args.out, "ckpt.pt")
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location=device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        state = {k: ck[k] for k in state}
    n_params = sum(p.numel() for p in model.parameters())
    print("params %d (%s), device %s" % (n_params, cfg.to_dict(), device), flush=True)

    log_path = os.path.join(args.out, "loss.csv")
    new_log = not (args.resume and os.path.exists(log_path))
    log = open(log_path, "w" if new_log else "a", newline="")
    writer = csv.writer(log)
    if new_log:
        writer.writerow(["step", "tokens", "elapsed_s", "lr", "train_loss", "heldout_loss"])

    start = time.time() - state["elapsed"]
    last_ckpt = time.time()
    budget = args.minutes * 60.0
    model.train()
    while True:
        elapsed = time.time() - start
        progress = max(state["step"] / args.steps, elapsed / budget)
        if progress >= 1.0:
            break
        lr = lr_at(progress, state["step"], args.lr, args.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch(train, args.batch, args.ctx, rng)
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x).reshape(-1, cfg.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        state["step"] += 1
        state["tokens"] += x.numel()
        state["elapsed"] = time.time() - start
        held_loss = ""
        if state["step"] % args.eval_every == 0:
            held_loss = "%.4f" % heldout_loss(model, held, args.ctx, device)
            print("step %d tokens %d %.0fs lr %.2e loss %.4f heldout %s (%.0f tok/s)" % (
                state["step"], state["tokens"], state["elapsed"], lr, loss.item(), held_loss,
                state["tokens"] / max(state["elapsed"], 1e-9)), flush=True)
        writer.writerow([state["step"], state["tokens"], "%.1f" % state["elapsed"], "%.3e" % lr,
                         "%.4f" % loss.item(), held_loss])
        if held_loss:
            log.flush()  # lets a watcher follow the run
        if time.time() - last_ckpt > args.ckpt_minutes * 60:
            log.flush()
            save(ckpt_path, model, opt, cfg, state)
            last_ckpt = time.time()

    state["final_heldout_loss"] = heldout_loss(model, held, args.ctx, device)
    writer.writerow([state["step"], state["tokens"], "%.1f" % state["elapsed"], "0", "",
                     "%.4f" % state["final_heldout_loss"]])
    log.close()
    save(ckpt_path, model, opt, cfg, state)
    print("done: step %d tokens %d %.0fs (%.0f tok/s) heldout loss %.4f" % (
        state["step"], state["tokens"], state["elapsed"], state["tokens"] / state["elapsed"],
        state["final_heldout_loss"]), flush=True)


if __name__ == "__main__":
    main()
