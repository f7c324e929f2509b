#!/usr/bin/python3
"""Deterministic English-like text for the quality tools' tests and tables (no data files needed).

usage: gen_text.py N_WORDS [SEED] > text.txt   (or import make_text)
"""
import random, sys

WORDS = ('the of and to in is that it was for on are as with his they at be this from have or by one had not '
         'but what all were when we there can an your which their said if do will each about how up out them '
         'then she many some so these would other into has more her two like him see time could no make than '
         'first been its who now people my made over did down only way find use may water long little very '
         'after words called just where most know get through back much before go good new write our used me '
         'man too any day same right look think also around another came come work three word must because '
         'does part even place well such here take why things help put years different away again off went '
         'old number great tell men say small every found still between name should home big give air line '
         'set own under read last never us left end along while might next sound below saw something thought '
         'both few those always looked show large often together asked house world going want school important '
         'until form food keep children feet land side without boy once animals life enough took sometimes four '
         'head above kind began almost live page got earth need far hand high year mother light parts country '
         'father let night following picture being study second eyes soon times story boys since white days '
         'ever paper hard near sentence better best across during today others sure means knew its try told '
         'young miles sun ways thing whole hear example heard several change answer room sea against top turned '
         'learn point city play toward five using himself usually money seen car morning given trees body '
         'family later order book').split()


def make_text(n_words, seed=1):
    rng = random.Random(seed)
    out, sentence = [], []
    for _ in range(n_words):
        sentence.append(rng.choice(WORDS))
        if len(sentence) >= rng.randint(6, 16):
            s = ' '.join(sentence)
            out.append(s[0].upper() + s[1:] + rng.choice(('.', '.', '.', '?', '!')))
            sentence = []
    if sentence:
        out.append(' '.join(sentence) + '.')
    # Paragraphs of a few sentences.
    paras = [' '.join(out[i:i + 5]) for i in range(0, len(out), 5)]
    return '\n\n'.join(paras) + '\n'


if __name__ == '__main__':
    sys.stdout.write(make_text(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1))
