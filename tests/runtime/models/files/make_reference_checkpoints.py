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
  reference_outputs.pt    {"ids": int64 [7, 2], "awd_lstm_log_probs": [14, 23], "mos_log_probs": [14, 23]}
                          float32, in evaluation mode from a zero state; the MoS log-probabilities
                          without the reference's 1e-8 floor (log p, not log(p + 1e-8)).

    /usr/bin/python3 tests/runtime/models/files/make_reference_checkpoints.py   # Debian 12: python3-torch
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "scripts"))
import awd_lstm_reference as reference  # noqa: E402

DROPOUTS = (0.4, 0.3, 0.4, 0.1, 0.5)


def spread(model):
    """Weights far enough from zero that the log-probabilities differ by word and position."""
    with torch.no_grad():
        model.encoder.weight.normal_(0, 1)
        model.decoder.bias.normal_(0, 1)
        for rnn in model.rnns:
            for p in rnn.module.parameters():
                p.mul_(3)
    return model


def main():
    torch.manual_seed(2018)
    ids = torch.randint(0, 23, (7, 2))
    outputs = {"ids": ids}
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
    torch.save(outputs, os.path.join(HERE, "reference_outputs.pt"))


if __name__ == "__main__":
    main()
