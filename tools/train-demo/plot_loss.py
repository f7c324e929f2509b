#!/usr/bin/env python3
"""Draws the training/held-out loss curve from train.py's loss.csv into a PNG."""
import argparse
import csv

import matplotlib
matplotlib.use("Agg")  # no display on build machines
import matplotlib.pyplot as plt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="ikllm-demo training")
    args = ap.parse_args()
    tok, train, htok, held = [], [], [], []
    with open(args.csv) as f:
        for row in csv.DictReader(f):
            t = int(row["tokens"]) / 1e6
            if row["train_loss"]:
                tok.append(t)
                train.append(float(row["train_loss"]))
            if row["heldout_loss"]:
                htok.append(t)
                held.append(float(row["heldout_loss"]))
    k = 10  # trailing mean over k steps: per-step losses of 8 sequences are noisy
    smooth = [sum(train[max(0, i - k + 1):i + 1]) / (i + 1 - max(0, i - k + 1)) for i in range(len(train))]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(tok, train, color="#bbbbbb", linewidth=0.6, label="train (per step)")
    ax.plot(tok, smooth, color="#1f77b4", label="train (mean of 10 steps)")
    ax.plot(htok, held, "o-", color="#d62728", markersize=3, label="held-out")
    ax.set_xlabel("tokens seen (millions)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(args.title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
