#!/usr/bin/env python3
"""Writes the training corpus's common words (lower-case, letters and apostrophes, seen >= --min-count
times), one per line: the CI test checks that the shipped model's greedy output is made of them."""
import argparse
import collections
import re


def words(text):
    return re.findall(r"[a-z]+(?:'[a-z]+)?", text.lower())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--text", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-count", type=int, default=5)
    args = ap.parse_args()
    counts = collections.Counter(words(open(args.text, encoding="utf-8").read()))
    keep = sorted(w for w, c in counts.items() if c >= args.min_count)
    with open(args.out, "w") as f:
        f.write("\n".join(keep) + "\n")
    print("%d words (of %d distinct)" % (len(keep), len(counts)))


if __name__ == "__main__":
    main()
