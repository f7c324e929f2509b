#!/usr/bin/env python3
"""Writes a training checkpoint + SentencePiece tokenizer as an F32 llama GGUF (tied embeddings).

Quantize the result with `ikllm quantize F32.gguf OUT.gguf TYPE`.
"""
import argparse
import os

import sentencepiece as spm

import gguf_writer as gw
from model import load_checkpoint

# A plain "User:/Assistant:" template that mirrors the chat-style training documents
# (BOS "User: question\nAssistant: answer" EOS); a later user turn starts a new BOS document.
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ m['content'] }}\n"
    "{% elif m['role'] == 'user' %}"
    "{% if loop.index0 > 0 and messages[loop.index0 - 1]['role'] == 'assistant' %}{{ bos_token }}{% endif %}"
    "User: {{ m['content'] }}\n"
    "{% elif m['role'] == 'assistant' %}Assistant: {{ m['content'] }}{{ eos_token }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}")


def token_type(sp, i):
    if sp.is_unknown(i):
        return 2
    if sp.is_control(i):
        return 3
    if sp.is_byte(i):
        return 6
    return 1


def add_metadata(w, cfg, sp, name, description):
    w.add("general.architecture", gw.STRING, "llama")
    w.add("general.name", gw.STRING, name)
    w.add("general.description", gw.STRING, description)
    w.add("general.license", gw.STRING, "BSD-3-Clause")
    w.add("general.file_type", gw.U32, 0)
    w.add("llama.vocab_size", gw.U32, cfg.vocab)
    w.add("llama.context_length", gw.U32, cfg.ctx)
    w.add("llama.embedding_length", gw.U32, cfg.n_embd)
    w.add("llama.block_count", gw.U32, cfg.n_layer)
    w.add("llama.feed_forward_length", gw.U32, cfg.n_ff)
    w.add("llama.attention.head_count", gw.U32, cfg.n_head)
    w.add("llama.attention.head_count_kv", gw.U32, cfg.n_kv_head)
    w.add("llama.attention.layer_norm_rms_epsilon", gw.F32, cfg.eps)
    w.add("llama.rope.dimension_count", gw.U32, cfg.n_embd // cfg.n_head)
    w.add("llama.rope.freq_base", gw.F32, cfg.rope_base)
    n = sp.get_piece_size()
    w.add("tokenizer.ggml.model", gw.STRING, "llama")
    w.add_array("tokenizer.ggml.tokens", gw.STRING, [sp.id_to_piece(i) for i in range(n)])
    w.add_array("tokenizer.ggml.scores", gw.F32, [sp.get_score(i) for i in range(n)])
    w.add_array("tokenizer.ggml.token_type", gw.I32, [token_type(sp, i) for i in range(n)])
    w.add("tokenizer.ggml.bos_token_id", gw.U32, sp.bos_id())
    w.add("tokenizer.ggml.eos_token_id", gw.U32, sp.eos_id())
    w.add("tokenizer.ggml.unknown_token_id", gw.U32, sp.unk_id())
    w.add("tokenizer.ggml.add_bos_token", gw.BOOL, True)
    w.add("tokenizer.ggml.add_eos_token", gw.BOOL, False)
    w.add("tokenizer.ggml.add_space_prefix", gw.BOOL, True)
    w.add("tokenizer.chat_template", gw.STRING, CHAT_TEMPLATE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", required=True, help="tokenizer.model from train_tokenizer.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="ikllm-demo")
    args = ap.parse_args()
    model, ck = load_checkpoint(args.ckpt)
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    assert sp.get_piece_size() == model.cfg.vocab
    w = gw.GGUFWriter()
    add_metadata(w, model.cfg, sp, args.name,
                 "ikllm's demo model: a %d-layer llama trained on Debian's fortunes (%d steps, %d tokens)"
                 % (model.cfg.n_layer, ck["step"], ck["tokens"]))
    for name, arr in model.gguf_tensors():
        w.add_tensor(name, arr)
    w.write(args.out)
    print("wrote %s (%d bytes, step %d)" % (args.out, os.path.getsize(args.out), ck["step"]))


if __name__ == "__main__":
    main()
