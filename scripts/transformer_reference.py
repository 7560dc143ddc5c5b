#!/usr/bin/env python3
"""The yardstick for lmkit's causal Transformer: the same model and training step in plain PyTorch.
Not part of lmkit.

Model (runtime/models/transformer_encoder.h): token embedding + learned positions, dropout, pre-LayerNorm
blocks of causal multi-head attention (one qkv Linear; F.scaled_dot_product_attention where this
PyTorch has it, else the masked softmax written out) and a GELU MLP, final LayerNorm, a decoder tied to
the embedding with a bias, log_softmax + NLL. Step: loss, backward, clip_grad_norm_(1.0), AdamW
(lr 3e-3, weight decay 0.1 on parameters of 2+ dimensions, none on the rest), warm-up + cosine
(LambdaLR), windows of `context` tokens starting afresh. The training tokens are lmkit's
(scripts/bench_transformer.lua --set tokens_file=F writes them; batchified as lmkit.data.batchify does).
tokens/s: the median over intervals of `interval` steps after the first, as the lmkit side counts it.
Prints one JSON line: {"impl": "pytorch", "tokens_per_s": ..., ...}.

  /usr/bin/python3 scripts/transformer_reference.py --tokens /tmp/t.pt --size tiny --threads 2
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {"tiny": (1000, 64, 2, 4, 256, 64, 20), "small": (10000, 256, 4, 4, 1024, 128, 16)}


class Block(nn.Module):
    def __init__(self, d, heads, ff, dropout, attention_dropout):
        super().__init__()
        self.heads, self.dropout, self.attention_dropout = heads, dropout, attention_dropout
        self.attention_norm, self.mlp_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.attention_out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp_in, self.mlp_out = nn.Linear(d, ff), nn.Linear(ff, d)

    def attention(self, q, k, v):
        p = self.attention_dropout if self.training else 0.0
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        S = q.size(-2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        mask = torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1)
        weights = F.dropout(torch.softmax(scores.masked_fill(mask, float("-inf")), -1), p, self.training)
        return weights @ v

    def forward(self, x):
        B, S, d = x.shape
        qkv = self.qkv(self.attention_norm(x)).view(B, S, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attended = self.attention(qkv[0], qkv[1], qkv[2]).transpose(1, 2).reshape(B, S, d)
        x = x + F.dropout(self.attention_out(attended), self.dropout, self.training)
        return x + F.dropout(self.mlp_out(F.gelu(self.mlp_in(self.mlp_norm(x)))), self.dropout, self.training)


class TransformerLm(nn.Module):
    def __init__(self, vocab, d, layers, heads, ff, context, dropout=0.1, attention_dropout=0.1):
        super().__init__()
        self.dropout = dropout
        self.embedding = nn.Parameter(torch.randn(vocab, d) * 0.02)
        self.positions = nn.Parameter(torch.randn(context, d) * 0.01)
        self.blocks = nn.ModuleList([Block(d, heads, ff, dropout, attention_dropout) for _ in range(layers)])
        self.final_norm = nn.LayerNorm(d)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, ids):  # ids [T, B] → log-probabilities [T·B, N] (row t·B + b)
        T, B = ids.shape
        x = F.embedding(ids.t(), self.embedding) + self.positions[:T]
        x = F.dropout(x, self.dropout, self.training)
        for block in self.blocks:
            x = block(x)
        h = self.final_norm(x).transpose(0, 1).reshape(T * B, -1)
        return F.log_softmax(F.linear(h, self.embedding, self.decoder_bias), -1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", required=True, help="the file scripts/bench_transformer.lua wrote (tokens_file)")
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--interval", type=int, default=10)
    ap.add_argument("--seed", type=int, default=141)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    vocab, d, layers, heads, ff, context, bsz = SIZES[args.size]
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    tokens = torch.load(args.tokens)["train"]
    rows = tokens.numel() // bsz
    data = tokens[: rows * bsz].view(bsz, rows).t().contiguous().to(device)  # lmkit.data.batchify
    model = TransformerLm(vocab, d, layers, heads, ff, context).to(device).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
    steps = (rows - 2 + context - 1) // context
    warmup, floor = 10, 0.1

    def factor(s):
        if s < warmup:
            return (s + 1) / warmup
        progress = min(1.0, (s - warmup) / max(1, steps - warmup))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    schedule = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    rates, interval_start, nll = [], None, float("nan")
    for step in range(steps):
        if step % args.interval == 0:
            sync()
            interval_start = time.perf_counter()
        i = step * context
        n = min(context, rows - 1 - i)
        ids, targets = data[i:i + n], data[i + 1:i + 1 + n].reshape(-1)
        opt.zero_grad()
        loss = F.nll_loss(model(ids), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        nll = loss.item()
        if (step + 1) % args.interval == 0:
            sync()
            rates.append(args.interval * bsz * context / (time.perf_counter() - interval_start))
    rate = statistics.median(rates[1:])
    print(json.dumps({
        "impl": "pytorch", "size": args.size, "bsz": bsz, "context": context, "steps": steps, "threads": args.threads,
        "device": args.device, "parameters": sum(p.numel() for p in model.parameters()),
        "tokens_per_s": round(rate, 1), "step_ms": round(1000 * bsz * context / rate, 2), "final_nll": round(nll, 4),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
