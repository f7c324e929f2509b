#!/usr/bin/env python3
"""Trains the demo model's SentencePiece BPE tokenizer (byte fallback) on the prepared corpus.

BPE (not unigram) because a llama-style GGUF tokenizer ("tokenizer.ggml.model = llama") merges by piece
score, which reproduces SentencePiece's BPE encoding exactly; identity normalization and no whitespace
folding so that the engine (which does no normalization) sees the same text SentencePiece saw.
Ids: 0 <unk>, 1 <s> (BOS), 2 </s> (EOS), then 256 byte pieces <0x00>..<0xFF>, then merged pieces.
"""
import argparse
import os

import sentencepiece as spm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="folder written by prepare_data.py")
    ap.add_argument("--vocab", type=int, default=2048)
    args = ap.parse_args()
    inputs = [os.path.join(args.data, f) for f in ("train.txt", "chat.txt")]
    spm.SentencePieceTrainer.train(
        input=",".join(inputs), model_prefix=os.path.join(args.data, "tokenizer"),
        model_type="bpe", vocab_size=args.vocab, byte_fallback=True, character_coverage=1.0,
        normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True,
        split_digits=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        max_sentence_length=8192, num_threads=2, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.data, "tokenizer.model"))
    print("vocab", sp.get_piece_size(), "example", sp.encode("Hello, world! A fortune a day.", out_type=str))


if __name__ == "__main__":
    main()
