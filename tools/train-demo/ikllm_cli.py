"""Small helpers that run the `ikllm` CLI (the engine under test) from the training scripts."""
import os
import subprocess
import tempfile

import numpy as np


def run(ikllm, *args):
    r = subprocess.run([ikllm, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (ikllm, " ".join(args), r.returncode, r.stderr[-2000:]))
    return r.stdout


def tokenize(ikllm, model, text):
    """Token ids of text as the engine tokenizes it (BOS added per the model)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        return [int(t) for t in run(ikllm, "tokenize", "-m", model, "-f", f.name).split()]
    finally:
        os.unlink(f.name)


def logits(ikllm, model, ids, n_vocab, ctx):
    """[len(ids), n_vocab] logits of one batch with an f32 KV cache (so only float rounding differs)."""
    with tempfile.TemporaryDirectory() as d:
        ids_path, out = os.path.join(d, "ids.txt"), os.path.join(d, "logits.f32")
        with open(ids_path, "w") as f:
            f.write(" ".join(map(str, ids)))
        run(ikllm, "logits", "-m", model, "--tokens", ids_path, "--out", out, "--kv-type", "f32",
            "-c", str(ctx), "-t", "2")
        return np.fromfile(out, dtype=np.float32).reshape(len(ids), n_vocab)


def dequant(ikllm, model, name):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.f32")
        run(ikllm, "dequant", "-m", model, "--tensor", name, "--out", out)
        return np.fromfile(out, dtype=np.float32)


def perplexity(ikllm, model, text_file, ctx):
    """The engine's final perplexity estimate (sliding windows of ctx, second half scored)."""
    out = run(ikllm, "perplexity", "-m", model, "-f", text_file, "-c", str(ctx), "-t", "2")
    for line in out.splitlines():
        if "Final estimate" in line:
            return float(line.split("PPL =")[1].split()[0])
    raise RuntimeError("no final estimate in: " + out[-500:])
