#!/usr/bin/python3
"""Writes the checkpoint fixtures of tests/runtime/models/reference_checkpoint_test.cpp with PyTorch
itself: state_dicts of small models in the reference code's structure (scripts/awd_lstm_reference.py:
awd-lstm-lm's WeightDrop LSTMs and tied decoder; the MoS code's prior and latent layers), saved by
torch.save after an evaluation forward (as a user's trained model is: WeightDrop then leaves a
`weight_hh_l0` beside each `weight_hh_l0_raw`), and the log-probabilities the reference computes on
fixed token ids.

  awd_lstm_reference.pt   state_dict of the softmax model (vocab 23, emb 6, nhid 10, nhidlast 6, 3 layers)
  mos_reference.pt        state_dict of the MoS model (vocab 23, emb 6, nhid 10, nhidlast 8, K 3)
  mos_whole_model.pt      torch.save(model) of the same MoS model (the whole nn.Module)
  awd_lstm_saved_list_legacy.pt  torch.save([model, criterion, optimizer]) of the softmax model in the
                          legacy format (_use_new_zipfile_serialization=False), as awd-lstm-lm's main.py
  mos_whole_model_legacy.pt      torch.save(model) of the MoS model in the legacy format, as the MoS code
  mos_floor_reference.pt  the MoS model with a decoder bias 8 times as wide: some words get p < 1e-8
  reference_outputs.pt    {"ids": int64 [7, 2], "awd_lstm_log_probs": [14, 23], "mos_log_probs": [14, 23],
                           "mos_floor_exact_log_probs": [14, 23], "mos_floor_log_probs": [14, 23]}
                          float32, in evaluation mode from a zero state; the MoS log-probabilities
                          without the MoS code's 1e-8 floor (log p), except "mos_floor_log_probs":
                          log(p + 1e-8), as the MoS code computes them.

and, in the structure of the thesis's code (a `base_model` holding the embedding and the WeightDrop
LSTMs, a `top_model` holding the decoder and the head's own parameters; written here as that
structure, not copied from it):

  thesis_smax.pt          state_dict of a model with the decoder only (vocab 23, emb 6, nhid 10,
                          nhidlast 6): the thesis's smax, gs_smax, s_smax and adv_smax save this
  thesis_plif_smax.pt     the same with top_model.plif_w [40] (K 40 on [-4, 4])
  thesis_mos.pt           the mixture layers (nhidlast 8, K 3): the thesis's mos and moc save this
  thesis_outputs.pt       {"ids": as above, "<top model>_log_probs": [14, 23]} for smax, gs_smax
                          (c 0.5, k 2.5), s_smax, adv_smax, plif_smax, mos and moc: each computed the
                          thesis code's way (log of the normalized probabilities; no floor in its MoS)

    /usr/bin/python3 tests/runtime/models/files/make_reference_checkpoints.py   # Debian 12: python3-torch
"""
import copy
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "scripts"))
import awd_lstm_reference as reference  # noqa: E402

DROPOUTS = (0.4, 0.3, 0.4, 0.1, 0.5)
GS_C, GS_K = 0.5, 2.5
PLIF_K, PLIF_T = 40, 4.0


def spread(model):
    """Weights far enough from zero that the log-probabilities differ by word and position."""
    with torch.no_grad():
        model.encoder.weight.normal_(0, 1)
        model.decoder.bias.normal_(0, 1)
        for rnn in model.rnns:
            for p in rnn.module.parameters():
                p.mul_(3)
    return model


class BaseModel(nn.Module):
    """The thesis code's base model: embedding and WeightDrop LSTMs, under `base_model.`."""

    def __init__(self, awd):
        super().__init__()
        self.encoder = awd.encoder
        self.rnns = awd.rnns


class TopModel(nn.Module):
    """The thesis code's top model: the decoder and, per head, plif_w or the mixture layers."""

    def __init__(self, awd, plif=False):
        super().__init__()
        self.decoder = awd.decoder
        if awd.head == "mos":
            self.prior = awd.prior
            self.latent = awd.latent
        if plif:
            self.plif_w = nn.Parameter(torch.randn(PLIF_K) + torch.log(torch.expm1(torch.tensor(1.0))))


class ThesisModel(nn.Module):
    def __init__(self, awd, plif=False):
        super().__init__()
        self.base_model = BaseModel(awd)
        self.top_model = TopModel(awd, plif)
        self.base_model.encoder.weight = self.top_model.decoder.weight  # tied


def plif(logits, w):
    """Piecewise linear increasing map on PLIF_K equal pieces of [-T, T], slopes softplus(w), f(-T) = 0."""
    delta = 2 * PLIF_T / PLIF_K
    slopes = F.softplus(w)
    before = torch.cumsum(slopes, 0) - slopes
    piece = ((logits + PLIF_T) / delta).floor().clamp(0, PLIF_K - 1).long()
    knots = -PLIF_T + delta * piece.to(logits.dtype)
    return (logits - knots) * slopes[piece] + delta * before[piece]


def thesis_log_probs(awd, top, ids, plif_w=None):
    """The log-probabilities the thesis code's top model `top` computes over the evaluation output."""
    with torch.no_grad():
        _, _, out, _ = awd(ids, awd.init_hidden(ids.size(1)))
        out = out.view(-1, out.size(-1))
        if top in ("mos", "moc"):
            latent = awd.latent(out).view(-1, awd.K, awd.emb_dim)
            prior = F.softmax(awd.prior(out), -1)
            if top == "mos":
                prob = (F.softmax(awd.decoder(latent), -1) * prior.unsqueeze(2)).sum(1)
            else:
                prob = F.softmax(awd.decoder((latent * prior.unsqueeze(2)).sum(1)), -1)
            return torch.log(prob)
        logits = awd.decoder(out)
        if top == "gs_smax":
            logits = GS_K * (logits - GS_C) + GS_C - (GS_K - 1) * torch.log(torch.exp(logits - GS_C) + 1)
        elif top == "plif_smax":
            logits = plif(logits, plif_w)
        elif top == "s_smax":
            numerator = torch.exp(logits) * torch.sigmoid(logits)
            return torch.log(numerator / numerator.sum(-1, keepdim=True))
        return F.log_softmax(logits, -1)


def main():
    torch.manual_seed(2018)
    ids = torch.randint(0, 23, (7, 2))
    outputs = {"ids": ids}
    models = {}
    for head, nhidlast in (("softmax", 6), ("mos", 8)):
        model = spread(reference.AwdLstm(head, 23, 6, 10, nhidlast, DROPOUTS, K=3)).eval()
        model.mos_floor = 0.0
        with torch.no_grad():
            log_prob, _, _, _ = model(ids, model.init_hidden(2))
        name = "awd_lstm" if head == "softmax" else "mos"
        outputs[name + "_log_probs"] = log_prob.clone()
        torch.save(model.state_dict(), os.path.join(HERE, name + "_reference.pt"))
        if head == "mos":
            torch.save(model, os.path.join(HERE, "mos_whole_model.pt"))
        # The legacy format, which the original codes wrote on PyTorch 0.x: awd-lstm-lm's main.py saves
        # the list [model, criterion, optimizer], the MoS code the whole model.
        legacy = {"_use_new_zipfile_serialization": False}
        if head == "softmax":
            optimizer = torch.optim.SGD(model.parameters(), lr=30, weight_decay=1.2e-6)
            torch.save([model, nn.CrossEntropyLoss(), optimizer], os.path.join(HERE, "awd_lstm_saved_list_legacy.pt"), **legacy)
        else:
            torch.save(model, os.path.join(HERE, "mos_whole_model_legacy.pt"), **legacy)
        models[head] = model

    # The floor matters where p < 1e-3: the same MoS model with a decoder bias 8 times as wide, so
    # that some words get p far under 1e-8.
    floored = copy.deepcopy(models["mos"])
    with torch.no_grad():
        floored.decoder.bias.mul_(8)
        floored.mos_floor = 0.0
        exact, _, _, _ = floored(ids, floored.init_hidden(2))
        floored.mos_floor = 1e-8
        with_floor, _, _, _ = floored(ids, floored.init_hidden(2))
    outputs["mos_floor_exact_log_probs"] = exact.clone()
    outputs["mos_floor_log_probs"] = with_floor.clone()
    print("mos floor: largest change %.3g nats, %d of %d probabilities under 1e-8"
          % ((with_floor - exact).abs().max(), int((exact < -18.42).sum()), exact.numel()))
    torch.save(floored.state_dict(), os.path.join(HERE, "mos_floor_reference.pt"))
    torch.save(outputs, os.path.join(HERE, "reference_outputs.pt"))

    # The thesis's structure: the same weights under base_model./top_model., and plif_w.
    torch.manual_seed(2019)
    thesis = {"ids": ids}
    softmax, mos = models["softmax"], models["mos"]
    for top in ("smax", "gs_smax", "s_smax", "adv_smax"):
        thesis[top + "_log_probs"] = thesis_log_probs(softmax, top, ids)
    torch.save(ThesisModel(softmax).state_dict(), os.path.join(HERE, "thesis_smax.pt"))
    with_plif = ThesisModel(softmax, plif=True)
    thesis["plif_smax_log_probs"] = thesis_log_probs(softmax, "plif_smax", ids, with_plif.top_model.plif_w.detach())
    torch.save(with_plif.state_dict(), os.path.join(HERE, "thesis_plif_smax.pt"))
    for top in ("mos", "moc"):
        thesis[top + "_log_probs"] = thesis_log_probs(mos, top, ids)
    torch.save(ThesisModel(mos).state_dict(), os.path.join(HERE, "thesis_mos.pt"))
    torch.save(thesis, os.path.join(HERE, "thesis_outputs.pt"))
    for name, value in thesis.items():
        if name != "ids":
            print("%-22s spread %.2f nats" % (name, float(value.max() - value.min())))


if __name__ == "__main__":
    main()
