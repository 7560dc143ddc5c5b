#!/usr/bin/env bash
# Checkpoints between lmkit and PyTorch models of the reference structure (scripts/awd_lstm_reference.py),
# both ways, for the softmax AWD-LSTM and MoS:
#   PyTorch builds a random model and saves its state_dict → lmkit.import_checkpoint → lmkit's
#   log-probabilities equal PyTorch's (≤ 1e-5);
#   lmkit builds a random model and exports it → torch.load + load_state_dict(strict) into the
#   reference structure → PyTorch's log-probabilities equal lmkit's (≤ 1e-5).
# Skipped (exit 77) where Debian's python3-torch is not installed (scripts/setup.sh --with-bench).
#   tests/cli/reference_checkpoint_python.sh LMKIT SOURCE_DIR
set -euo pipefail
lmkit=$1
source_dir=$2
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || { echo "skipped: no python3-torch"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# PyTorch's models and their outputs on fixed ids.
"$python" - "$dir" "$source_dir/scripts" <<'PY'
import sys
import torch
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import awd_lstm_reference as reference
torch.manual_seed(7)
ids = torch.randint(0, 31, (9, 3))
out = {"ids": ids}
for head, nhidlast in (("softmax", 8), ("mos", 5)):
    model = reference.AwdLstm(head, 31, 8, 12, nhidlast, (0.4, 0.3, 0.4, 0.1, 0.5), nlayers=2, K=4).eval()
    model.mos_floor = 0.0
    with torch.no_grad():
        model.encoder.weight.normal_(0, 1)
        model.decoder.bias.normal_(0, 1)
        out[head] = model(ids, model.init_hidden(3))[0]
    torch.save(model.state_dict(), f"{d}/torch_{head}.pt")
torch.save(out, f"{d}/torch_outputs.pt")
PY

# lmkit reads PyTorch's models, and writes its own.
cat > "$dir/lmkit.lua" <<LUA
local d = "$dir"
local expected = lmkit.read_tensors(d .. "/torch_outputs.pt")
local mine = {ids = expected.ids}
for _, case in ipairs{{head = "softmax", format = "awd-lstm"}, {head = "mos", format = "mos"}} do
  local m = lmkit.import_checkpoint(d .. "/torch_" .. case.head .. ".pt", {format = case.format})
  local diff = (m:log_probs(expected.ids) - expected[case.head]):abs():max():item()
  assert(diff <= 1e-5, case.format .. ": lmkit's log-probabilities differ from PyTorch's by " .. diff)
  print(("%s: PyTorch → lmkit, largest difference %.2e"):format(case.format, diff))
  lmkit.seed(11)
  local own = lmkit.model{vocab_size = 31, emb = 8, nhid = 12, nhidlast = case.head == "mos" and 5 or 8, nlayers = 2,
                          head = case.head == "mos" and lmkit.heads.mos{K = 4} or nil}
  own:eval()
  own:export(d .. "/lmkit_" .. case.head .. ".pt", {format = case.format})
  mine[case.head] = own:log_probs(expected.ids)
end
lmkit.write_tensors(d .. "/lmkit_outputs.pt", mine)
LUA
"$lmkit" run "$dir/lmkit.lua"

"$python" - "$dir" "$source_dir/scripts" <<'PY'
import sys
import torch
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import awd_lstm_reference as reference
want = torch.load(f"{d}/lmkit_outputs.pt")
for head, nhidlast, fmt in (("softmax", 8, "awd-lstm"), ("mos", 5, "mos")):
    model = reference.AwdLstm(head, 31, 8, 12, nhidlast, (0.4, 0.3, 0.4, 0.1, 0.5), nlayers=2, K=4).eval()
    model.mos_floor = 0.0
    model.load_state_dict(torch.load(f"{d}/lmkit_{head}.pt"), strict=True)
    with torch.no_grad():
        got = model(want["ids"], model.init_hidden(3))[0]
    diff = (got - want[head]).abs().max().item()
    assert diff <= 1e-5, f"{fmt}: PyTorch's log-probabilities of lmkit's export differ by {diff}"
    print(f"{fmt}: lmkit → PyTorch, largest difference {diff:.2e}")
print("reference checkpoints ok")
PY
