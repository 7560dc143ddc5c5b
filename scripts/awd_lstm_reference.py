#!/usr/bin/env python3
"""The yardstick: a plain PyTorch AWD-LSTM, for timing lmkit's training against and for checking
lmkit.import_checkpoint / Model:export against a model of the reference structure. Not part of lmkit.

Written for this benchmark in the structure of the reference code (Merity et al.'s awd-lstm-lm and
Yang et al.'s MoS code): a weight-dropped nn.LSTM per layer (DropConnect on weight_hh through a
re-assigned attribute), embedding dropout on whole rows, locked dropout, tied decoder, and either
  softmax: log_softmax + NLL, or
  mos:     softmax over K components -> weighted sum of probabilities -> log (the B*T x K x N
           probabilities are held in memory, as the MoS code does).
Training step as in main.py: loss = NLL + AR + TAR, backward, clip_grad_norm_(0.25), SGD step
(weight decay 1.2e-6), hidden state carried and detached. Windows have a fixed length bptt (no
random window lengths) so that both programs do the same number of tokens per step.

The token stream is the same 64-bit LCG as scripts/bench_train.lua, so both programs read identical
tokens. Prints one JSON line: {"impl": "pytorch", "tokens_per_s": ..., "step_ms": ..., ...}.
--device cuda runs the model and the batches there; each timed step then begins and ends with
torch.cuda.synchronize(), so that it measures the device's work, not the queueing of it.
--cuda-graph (with --device cuda) captures the whole step (forward, backward, clipping, the SGD
update, the hidden state carried on) as one CUDA graph after the warm-up and replays it, the window
and targets copied into static buffers first: what graph replay buys this step at this size, the
upper bound of what it can buy lmkit's. The update is then SGD with weight decay written with
foreach ops (the same arithmetic as torch.optim.SGD's); a capture that fails prints its error in
the JSON line ("graph_error") instead of a time.

  /usr/bin/python3 scripts/awd_lstm_reference.py --size tiny --head softmax --threads 2
  python3 scripts/awd_lstm_reference.py --size ptb --head softmax --device cuda --steps 200 --warmup 20
  python3 scripts/awd_lstm_reference.py --size ptb --head softmax --device cuda --cuda-graph
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {  # vocab, emb, nhid, nhidlast (scripts/bench_models.lua's sizes; wt2: SPEC Table 4.3)
    ("tiny", "softmax"): (1000, 32, 64, 32),
    ("tiny", "mos"): (1000, 32, 64, 32),
    ("ptb", "softmax"): (10000, 400, 1150, 400),
    ("ptb", "mos"): (10000, 280, 960, 620),
    ("wt2", "softmax"): (33278, 400, 1150, 400),
    ("wt2", "mos"): (33278, 300, 1150, 650),
}
DROPOUTS = {  # dropout, dropouth, dropouti, dropoute, wdrop (SPEC Table 4.3; tiny uses the PTB columns)
    ("ptb", "softmax"): (0.4, 0.3, 0.4, 0.1, 0.5),
    ("ptb", "mos"): (0.4, 0.225, 0.4, 0.1, 0.5),
    ("wt2", "softmax"): (0.4, 0.2, 0.65, 0.1, 0.5),
    ("wt2", "mos"): (0.4, 0.2, 0.55, 0.1, 0.5),
}
BATCH_SIZES = {"tiny": {"softmax": 20, "mos": 20}, "ptb": {"softmax": 20, "mos": 12}, "wt2": {"softmax": 80, "mos": 15}}
DROPOUTL = 0.29


def token_stream(n, vocab, seed):
    """x <- x*6364136223846793005 + 1442695040888963407 (mod 2^64); token = (x >> 33) % vocab."""
    mask = (1 << 64) - 1
    x = seed & mask
    out = [0] * n
    for i in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & mask
        out[i] = (x >> 33) % vocab
    return torch.tensor(out, dtype=torch.long)


def embedded_dropout(embed, words, p, training):
    """Drops whole rows of the embedding matrix (one mask per call), rescaling the others."""
    weight = embed.weight
    if training and p > 0:
        mask = weight.new_empty((weight.size(0), 1)).bernoulli_(1 - p) / (1 - p)
        weight = weight * mask
    return F.embedding(words, weight)


class LockedDropout(nn.Module):
    """One dropout mask per sequence, shared over time ([T, B, H] input)."""

    def forward(self, x, p):
        if not self.training or p == 0:
            return x
        mask = x.new_empty((1, x.size(1), x.size(2))).bernoulli_(1 - p) / (1 - p)
        return x * mask


class WeightDrop(nn.Module):
    """DropConnect on an RNN's hidden-to-hidden matrix: a fresh mask each forward."""

    def __init__(self, module, names, p):
        super().__init__()
        self.module, self.names, self.p = module, names, p
        for name in names:
            w = getattr(module, name)
            del module._parameters[name]
            module.register_parameter(name + "_raw", nn.Parameter(w.data))

    def _apply_masks(self):
        for name in self.names:
            raw = getattr(self.module, name + "_raw")
            # nn.LSTM's __setattr__ puts the dropped tensor into its _flat_weights.
            setattr(self.module, name, F.dropout(raw, p=self.p, training=self.training))

    def forward(self, *args):
        self._apply_masks()
        return self.module(*args)


class AwdLstm(nn.Module):
    # The MoS code's floor under each mixture probability before the log: log(p + 1e-8). The
    # checkpoint tests set it to 0 to compare with lmkit's exact log p.
    mos_floor = 1e-8

    def __init__(self, head, vocab, emb, nhid, nhidlast, dropouts, nlayers=3, K=15):
        super().__init__()
        self.head, self.vocab, self.emb_dim, self.K = head, vocab, emb, K
        (self.dropout, self.dropouth, self.dropouti, self.dropoute, wdrop) = dropouts
        self.lockdrop = LockedDropout()
        self.encoder = nn.Embedding(vocab, emb)
        self.sizes = [nhid if l < nlayers - 1 else nhidlast for l in range(nlayers)]
        self.rnns = nn.ModuleList([
            WeightDrop(nn.LSTM(emb if l == 0 else self.sizes[l - 1], self.sizes[l], 1), ["weight_hh_l0"], wdrop)
            for l in range(nlayers)])
        if head == "mos":
            self.prior = nn.Linear(nhidlast, K, bias=False)
            self.latent = nn.Sequential(nn.Linear(nhidlast, K * emb), nn.Tanh())
        else:
            assert nhidlast == emb, "tied softmax needs nhidlast == emb"
        self.decoder = nn.Linear(emb, vocab)
        self.decoder.weight = self.encoder.weight  # tied
        self.encoder.weight.data.uniform_(-0.1, 0.1)
        self.decoder.bias.data.zero_()

    def init_hidden(self, bsz):
        device = self.encoder.weight.device
        return [(torch.zeros(1, bsz, h, device=device), torch.zeros(1, bsz, h, device=device)) for h in self.sizes]

    def forward(self, ids, hidden):
        x = embedded_dropout(self.encoder, ids, self.dropoute if self.training else 0, self.training)
        x = self.lockdrop(x, self.dropouti)
        new_hidden = []
        for l, rnn in enumerate(self.rnns):
            x, h = rnn(x, hidden[l])
            new_hidden.append(h)
            if l < len(self.rnns) - 1:
                x = self.lockdrop(x, self.dropouth)
        raw = x
        out = self.lockdrop(x, self.dropout)
        T, B = ids.shape
        if self.head == "softmax":
            log_prob = F.log_softmax(self.decoder(out.view(T * B, -1)), dim=-1)
        else:
            latent = self.lockdrop(self.latent(out), DROPOUTL)  # [T, B, K*emb]
            logit = self.decoder(latent.view(-1, self.emb_dim))  # [T*B*K, N]
            prior = F.softmax(self.prior(out).view(-1, self.K), dim=-1)  # [T*B, K]
            prob = F.softmax(logit, dim=-1).view(-1, self.K, self.vocab)  # [T*B, K, N]
            prob = (prob * prior.unsqueeze(2)).sum(1)
            log_prob = torch.log(prob.add_(self.mos_floor))
        return log_prob, raw, out, new_hidden


def graphed_steps(model, params, data, bsz, args, coefficients):
    """The step of main() captured once as a CUDA graph and replayed: (times, last nll, error)."""
    alpha, beta, clip = coefficients
    lr, weight_decay = args.lr, 1.2e-6
    static_ids = data[0:args.bptt].clone()
    static_targets = data[1:1 + args.bptt].reshape(-1).clone()
    static_hidden = model.init_hidden(bsz)

    def step():
        log_prob, raw, out, new_hidden = model(static_ids, static_hidden)
        nll = F.nll_loss(log_prob, static_targets)
        loss = nll + alpha * out.pow(2).mean() + beta * (raw[1:] - raw[:-1]).pow(2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        with torch.no_grad():
            grads = [p.grad for p in params]
            torch._foreach_add_(grads, params, alpha=weight_decay)
            torch._foreach_add_(params, grads, alpha=-lr)
            # After the backward, which reads the state this window started from.
            for (h, c), (new_h, new_c) in zip(static_hidden, new_hidden):
                h.copy_(new_h)
                c.copy_(new_c)
        return nll.detach()

    def load(step_index):
        i = step_index * args.bptt
        static_ids.copy_(data[i:i + args.bptt])
        static_targets.copy_(data[i + 1:i + 1 + args.bptt].reshape(-1))

    # Eager warm-up on a side stream (cuDNN's and cuBLAS's plans, the allocator's blocks), as
    # torch.cuda.graph asks; the gradients are then dropped so that the capture allocates its own.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for step_index in range(args.warmup):
            load(step_index)
            for p in params:
                p.grad = None
            step()
    torch.cuda.current_stream().wait_stream(side)
    for p in params:
        p.grad = None
    graph = torch.cuda.CUDAGraph()
    try:
        load(args.warmup)
        with torch.cuda.graph(graph):
            static_nll = step()
    except Exception as error:  # noqa: BLE001 -- reported, not hidden: which op refused capture
        return [], float("nan"), f"{type(error).__name__}: {error}".strip()[:2000]
    times = []
    for step_index in range(args.warmup, args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        load(step_index)
        graph.replay()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times, static_nll.item(), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["tiny", "ptb", "wt2"], default="tiny")
    ap.add_argument("--head", choices=["softmax", "mos"], default="softmax")
    ap.add_argument("--bsz", type=int, default=None, help="default 20, except 12 (ptb mos), 80 (wt2 softmax), 15 (wt2 mos)")
    ap.add_argument("--bptt", type=int, default=70)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--K", type=int, default=15)
    ap.add_argument("--lr", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=141)
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--cuda-graph", action="store_true", help="replay the step as one captured CUDA graph")
    args = ap.parse_args()
    bsz = args.bsz or BATCH_SIZES[args.size][args.head]

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    vocab, emb, nhid, nhidlast = SIZES[(args.size, args.head)]
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: this torch ({torch.__version__}) sees no CUDA device")
    if args.cuda_graph and device.type != "cuda":
        ap.error("--cuda-graph needs --device cuda (a CUDA graph is a GPU feature)")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    dropouts = DROPOUTS[("ptb" if args.size == "tiny" else args.size, args.head)]
    model = AwdLstm(args.head, vocab, emb, nhid, nhidlast, dropouts, K=args.K).train().to(device)
    params = list(model.parameters())
    n_params = sum(p.numel() for p in params)
    opt = torch.optim.SGD(params, lr=args.lr, weight_decay=1.2e-6)
    alpha, beta, clip = 2.0, 1.0, 0.25

    total = args.warmup + args.steps
    n_rows = total * args.bptt + 1
    data = token_stream(n_rows * bsz, vocab, args.seed).view(bsz, n_rows).t().contiguous().to(device)  # batchify
    hidden = model.init_hidden(bsz)
    times, loss_value, graph_error = [], float("nan"), None
    if args.cuda_graph:
        times, loss_value, graph_error = graphed_steps(model, params, data, bsz, args, (alpha, beta, clip))
    for step in range(0 if args.cuda_graph else total):
        sync()
        start = time.perf_counter()
        i = step * args.bptt
        ids, targets = data[i:i + args.bptt], data[i + 1:i + 1 + args.bptt].reshape(-1)
        hidden = [(h.detach(), c.detach()) for h, c in hidden]
        opt.zero_grad()
        log_prob, raw, out, hidden = model(ids, hidden)
        nll = F.nll_loss(log_prob, targets)
        loss = nll + alpha * out.pow(2).mean() + beta * (raw[1:] - raw[:-1]).pow(2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        loss_value = nll.item()
        sync()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)

    tokens = args.bptt * bsz
    if graph_error is not None:
        print(json.dumps({"impl": "pytorch+graph", "size": args.size, "head": args.head, "bsz": bsz, "bptt": args.bptt,
                          "device": args.device, "graph_error": graph_error, "torch": torch.__version__}))
        return
    print(json.dumps({
        "impl": "pytorch+graph" if args.cuda_graph else "pytorch", "size": args.size, "head": args.head, "bsz": bsz, "bptt": args.bptt,
        "steps": args.steps, "warmup": args.warmup, "threads": args.threads, "device": args.device, "parameters": n_params,
        "tokens_per_s": round(tokens * len(times) / sum(times), 1),
        "step_ms": round(1000 * statistics.median(times), 2),
        "step_ms_mean": round(1000 * statistics.mean(times), 2),
        "final_nll": round(loss_value, 4), "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
