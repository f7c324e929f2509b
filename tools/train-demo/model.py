"""The demo model in PyTorch: a llama (RMSNorm, RoPE, SwiGLU, GQA, tied embeddings).

RoPE is computed in the GGUF/llama "NORM" convention (adjacent pairs (2j, 2j+1) rotated together), so the
trained q/k weights are written to the GGUF as they are, with no permutation. GQA: query head h uses
KV head h // (n_head / n_head_kv), as the engine does.
"""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab: int = 2048
    n_embd: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_kv_head: int = 2
    n_ff: int = 384
    ctx: int = 256
    eps: float = 1e-5
    rope_base: float = 10000.0
    dropout: float = 0.0

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_tables(ctx, head_dim, base, device=None, dtype=torch.float32):
    """cos/sin of shape [ctx, head_dim/2]: angle p * base^(-2j/head_dim) for pair j."""
    j = torch.arange(head_dim // 2, dtype=torch.float64, device=device)
    inv = base ** (-2.0 * j / head_dim)
    ang = torch.arange(ctx, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x: [B, T, H, D]; rotates the adjacent pairs (x[2j], x[2j+1]) by the angle of position t."""
    a, b = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg.n_embd // cfg.n_head
        self.cfg, self.head_dim = cfg, d
        self.attn_norm = RMSNorm(cfg.n_embd, cfg.eps)
        self.attn_q = nn.Linear(cfg.n_embd, cfg.n_head * d, bias=False)
        self.attn_k = nn.Linear(cfg.n_embd, cfg.n_kv_head * d, bias=False)
        self.attn_v = nn.Linear(cfg.n_embd, cfg.n_kv_head * d, bias=False)
        self.attn_output = nn.Linear(cfg.n_head * d, cfg.n_embd, bias=False)
        self.ffn_norm = RMSNorm(cfg.n_embd, cfg.eps)
        self.ffn_gate = nn.Linear(cfg.n_embd, cfg.n_ff, bias=False)
        self.ffn_up = nn.Linear(cfg.n_embd, cfg.n_ff, bias=False)
        self.ffn_down = nn.Linear(cfg.n_ff, cfg.n_embd, bias=False)
        self.drop = nn.Dropout(cfg.dropout)

    def attention(self, x, cos, sin, mask):
        B, T, _ = x.shape
        cfg, d = self.cfg, self.head_dim
        q = apply_rope(self.attn_q(x).view(B, T, cfg.n_head, d), cos, sin)
        k = apply_rope(self.attn_k(x).view(B, T, cfg.n_kv_head, d), cos, sin)
        v = self.attn_v(x).view(B, T, cfg.n_kv_head, d)
        rep = cfg.n_head // cfg.n_kv_head
        # consecutive query heads share one KV head (expand+reshape: cheaper backward than an index)
        k = k[:, :, :, None, :].expand(B, T, cfg.n_kv_head, rep, d).reshape(B, T, cfg.n_head, d)
        v = v[:, :, :, None, :].expand(B, T, cfg.n_kv_head, rep, d).reshape(B, T, cfg.n_head, d)
        q = q * (1.0 / math.sqrt(d))  # scaling q is cheaper than scaling the T x T scores
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, T, D]
        att = torch.baddbmm(mask.expand(B * cfg.n_head, T, T), q.reshape(B * cfg.n_head, T, d),
                            k.reshape(B * cfg.n_head, T, d).transpose(1, 2)).view(B, cfg.n_head, T, T)
        o = F.softmax(att, dim=-1) @ v
        return self.attn_output(o.transpose(1, 2).reshape(B, T, cfg.n_head * d))

    def forward(self, x, cos, sin, mask):
        a = self.attention(self.attn_norm(x), cos, sin, mask)
        h = x + (self.drop(a) if self.cfg.dropout > 0 else a)
        w = self.ffn_norm(h)
        f = self.ffn_down(F.silu(self.ffn_gate(w)) * self.ffn_up(w))
        return h + (self.drop(f) if self.cfg.dropout > 0 else f)


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.token_embd = nn.Embedding(cfg.vocab, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.output_norm = RMSNorm(cfg.n_embd, cfg.eps)
        self.reset_parameters()

    def reset_parameters(self):
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02
                if name.endswith(("attn_output.weight", "ffn_down.weight")):
                    std = 0.02 / math.sqrt(2 * self.cfg.n_layer)  # keeps the residual stream's scale
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens):
        """tokens [B, T] (positions 0..T-1) -> logits [B, T, vocab]; the output matrix is token_embd."""
        T = tokens.shape[1]
        cfg = self.cfg
        cos, sin = rope_tables(T, cfg.n_embd // cfg.n_head, cfg.rope_base, tokens.device)
        mask = torch.full((T, T), float("-inf"), device=tokens.device).triu(1)
        x = self.token_embd(tokens)
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        return self.output_norm(x) @ self.token_embd.weight.t()

    def gguf_tensors(self):
        """(gguf name, float32 numpy array in PyTorch [rows, cols] layout) for every weight."""
        out = [("token_embd.weight", self.token_embd.weight)]
        for i, b in enumerate(self.blocks):
            for name in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                         "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
                out.append(("blk.%d.%s.weight" % (i, name), getattr(b, name).weight))
        out.append(("output_norm.weight", self.output_norm.weight))
        return [(n, t.detach().float().cpu().contiguous().numpy()) for n, t in out]

    def load_gguf_tensors(self, tensors):
        """Inverse of gguf_tensors: tensors is a dict name -> array shaped like the parameter."""
        with torch.no_grad():
            for name, p in self.gguf_parameter_map().items():
                p.copy_(torch.as_tensor(tensors[name], dtype=p.dtype).reshape(p.shape))

    def gguf_parameter_map(self):
        m = {"token_embd.weight": self.token_embd.weight, "output_norm.weight": self.output_norm.weight}
        for i, b in enumerate(self.blocks):
            for name in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                         "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
                m["blk.%d.%s.weight" % (i, name)] = getattr(b, name).weight
        return m


def load_checkpoint(path, map_location="cpu"):
    ck = torch.load(path, map_location=map_location)
    cfg = Config(**ck["config"])
    model = Llama(cfg)
    model.load_state_dict(ck["model"])
    model.eval()
    return model, ck
