#!/usr/bin/env python3
"""Builds the demo model's corpus from Debian's `fortunes`/`fortunes-min` packages.

Cleaning: skips the offensive (off/) and ASCII-art collections, drops attribution lines ("-- Name"),
drops fortunes that look like art/code/tables, reflows wrapped lines into paragraphs. The split is
deterministic (md5 of the text), so the same packages always give the same held-out set.

Output (under --out): train.txt and heldout.txt, documents separated by a blank line, plus
chat.txt: a share of the training fortunes wrapped as "User: ...\nAssistant: ..." so the chat samples
have something that answers (the assistant turn is always a real fortune).
"""
import argparse
import hashlib
import os
import re

FORTUNE_DIR = "/usr/share/games/fortunes"
SKIP_FILES = {"art", "ascii-art", "translate-me"}  # pictures and non-English text

# Category file -> topic used in the chat-style prompts.
TOPICS = {
    "computers": "computers", "cookie": "life", "debian": "Debian", "definitions": "words",
    "drugs": "coffee", "education": "school", "food": "food", "fortunes": "life",
    "humorists": "humor", "kids": "kids", "law": "the law", "linux": "Linux", "linuxcookie": "Linux",
    "literature": "books", "love": "love", "magic": "magic", "medicine": "doctors",
    "men-women": "men and women", "miscellaneous": "life", "news": "the news", "people": "people",
    "pets": "pets", "platitudes": "life", "politics": "politics", "riddles": "riddles",
    "science": "science", "songs-poems": "poetry", "sports": "sports", "startrek": "Star Trek",
    "tao": "the Tao", "wisdom": "wisdom", "work": "work", "zippy": "Zippy",
}
PROMPTS = ["Tell me something about {t}.", "Say something about {t}.", "Give me a quote about {t}.",
           "What do you think about {t}?", "Tell me a fortune about {t}.", "Any wisdom about {t}?"]
GENERIC = ["Tell me a fortune.", "Say something wise.", "Tell me something funny.", "Give me a quote."]

ATTRIBUTION = re.compile(r"^\s*(--|---|-)\s*\S")
ALLOWED = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:'\"!?()-\n")


def digest(text):
    return int(hashlib.md5(text.encode("utf-8")).hexdigest(), 16)


def split_fortunes(raw):
    doc, out = [], []
    for line in raw.split("\n"):
        if line.strip() == "%":
            out.append(doc)
            doc = []
        else:
            doc.append(line.rstrip())
    out.append(doc)
    return out


def clean(lines):
    """Returns the reflowed fortune text, or None when it does not look like prose."""
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and ATTRIBUTION.match(lines[-1]) and lines[-1].startswith((" ", "\t", "-")):
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return None
    raw = "\n".join(lines)
    if any(ord(c) > 126 or (ord(c) < 32 and c not in "\n\t") for c in raw):
        return None  # overstrike/escape sequences and non-ASCII text
    if re.search(r"[_=*#|/\\<>~^]{3,}|[|]\s|\t\S.*\t", raw):
        return None  # ASCII art, tables, boxes
    if sum(c in ALLOWED or c == "\t" for c in raw) < 0.97 * len(raw):
        return None  # code, shell sessions, maths
    paras, cur = [], []
    for line in lines:
        s = line.strip()
        if s:
            cur.append(s)
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    text = "\n".join(re.sub(r"\s+", " ", p) for p in paras)
    if len(text) < 20 or len(text) > 1500:
        return None
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (a build folder; never committed)")
    ap.add_argument("--heldout-percent", type=int, default=2)
    ap.add_argument("--chat-percent", type=int, default=20)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    seen, train, heldout, chat, stats = set(), [], [], [], {}
    for name in sorted(os.listdir(FORTUNE_DIR)):
        path = os.path.join(FORTUNE_DIR, name)
        if name in SKIP_FILES or "." in name or not os.path.isfile(path) or os.path.islink(path):
            continue  # off/ is a folder; .dat indexes and .u8 links are skipped
        with open(path, encoding="utf-8", errors="replace") as f:
            docs = split_fortunes(f.read())
        kept = 0
        for lines in docs:
            text = clean(lines)
            if text is None or text in seen:
                continue
            seen.add(text)
            kept += 1
            h = digest(text)
            if h % 100 < args.heldout_percent:
                heldout.append(text)
                continue
            train.append(text)
            if (h // 100) % 100 < args.chat_percent:
                topic = TOPICS.get(name)
                choices = [p.format(t=topic) for p in PROMPTS] if topic else GENERIC
                prompt = choices[(h // 10000) % len(choices)]
                chat.append("User: %s\nAssistant: %s" % (prompt, text))
        stats[name] = (len(docs), kept)

    for fname, docs in (("train.txt", train), ("heldout.txt", heldout), ("chat.txt", chat)):
        with open(os.path.join(args.out, fname), "w", encoding="utf-8") as f:
            f.write("\n\n".join(docs) + "\n")
    for name, (n, k) in stats.items():
        print("%-14s %5d fortunes, %5d kept" % (name, n, k))
    print("train %d docs (%d chars), heldout %d docs (%d chars), chat %d docs" % (
        len(train), sum(map(len, train)), len(heldout), sum(map(len, heldout)), len(chat)))


if __name__ == "__main__":
    main()
