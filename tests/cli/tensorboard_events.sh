#!/bin/bash
# tensorboard_events.sh LMKIT WORKDIR: a run with LMKIT_TENSORBOARD=1 writes a TensorBoard event file
# that independent readers decode: the TFRecord framing and its masked CRC-32C checked in Python (a
# bitwise CRC of its own, not lmkit's table), each Event decoded by `protoc --decode_raw` (protobuf's
# own wire-format reader, knowing nothing of lmkit's .proto), and its scalars equal to metrics.jsonl's.
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "tensorboard events: $1"; exit 1; }
command -v python3 >/dev/null && command -v protoc >/dev/null || { echo "tensorboard events: needs python3 and protoc"; exit 77; }
rm -rf "$work"

LMKIT_TENSORBOARD=1 "$lmkit" run "$here/train_recipe.lua" --set out="$work" --set epochs=2 --set task=1 >/dev/null ||
  fail "training with LMKIT_TENSORBOARD=1 failed"
run="$work/cells/seed=1/run"
python3 - "$run" <<'PY' || fail "the event file does not decode"
import glob, json, re, struct, subprocess, sys

run = sys.argv[1]
files = glob.glob(run + "/events.out.tfevents.*")
assert len(files) == 1, f"expected one event file in {run}, found {files}"

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

blob = open(files[0], "rb").read()
events, payloads, pos = [], [], 0
while pos < len(blob):
    header = blob[pos:pos + 8]
    (length,) = struct.unpack("<Q", header)
    (header_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
    assert header_crc == masked(header), f"record at byte {pos}: the length's CRC is wrong"
    payload = blob[pos + 12:pos + 12 + length]
    (payload_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
    assert payload_crc == masked(payload), f"record at byte {pos}: the data's CRC is wrong"
    payloads.append(payload)
    events.append(subprocess.run(["protoc", "--decode_raw"], input=payload, capture_output=True, check=True).stdout.decode())
    pos += 16 + length
assert pos == len(blob), "the file ends inside a record"
assert re.search(r'^3: "brain.Event:2"$', events[0], re.M), events[0]

def f32(hex_text):  # a fixed32 field as decode_raw prints it
    return struct.unpack("<f", struct.pack("<I", int(hex_text, 16)))[0]

scalars = {}  # (tag, step) -> value
for text in events[1:]:
    found = re.search(r"^2: (\d+)$", text, re.M)
    step = int(found.group(1)) if found else 0  # step 0 is proto3's default: not written
    for tag, value in re.findall(r'1: "([^"]+)"\n\s+2: (0x[0-9a-f]+)', text):
        scalars[(tag, step)] = f32(value)

# The step-level curve: about 50 points an epoch (the records come every 20 steps here, 200 by default).
dense = sorted(step for (tag, step) in scalars if tag == "train_steps/loss")
assert len(dense) >= 50, f"only {len(dense)} points of train_steps/loss"
assert all(("train_steps/lr", step) in scalars for step in dense)
# The final perplexities, as summary.json has them.
summary = json.load(open(run + "/summary.json"))
final = [(tag, step) for (tag, step) in scalars if tag == "final/test_ppl"]
assert len(final) == 1, final
assert abs(scalars[final[0]] - summary["test_ppl"]) <= 1e-4 * summary["test_ppl"], (scalars[final[0]], summary["test_ppl"])
assert abs(scalars[("final/valid_ppl", final[0][1])] - summary["valid_ppl"]) <= 1e-4 * summary["valid_ppl"]
# The settings for the HPARAMS tab: the plugin's session start, holding the run's settings by name.
hparams = [payload for payload in payloads if b"_hparams_/session_start_info" in payload]
assert len(hparams) == 1, f"{len(hparams)} hparams summaries"
for name in (b"hparams", b"train.lr", b"model.head.kind", b"softmax", b"train.seed"):
    assert name in hparams[0], name

records = [json.loads(line) for line in open(run + "/metrics.jsonl")]
def same(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))
checked = 0
for r in records:
    if r["type"] == "step":
        for key in ("loss", "ppl", "lr"):
            assert same(scalars[("train/" + key, r["step"])], r[key]), (key, r)
            checked += 1
    elif r["type"] == "epoch":
        for key in ("train_ppl", "valid_ppl", "valid_loss"):
            assert same(scalars[("train_epoch/" + key, r["step"])], r[key]), (key, r)
            checked += 1
assert checked >= 6, f"only {checked} scalars checked"
print(f"{len(events)} events, {checked} scalars equal to metrics.jsonl's")
PY

# A value of the variable that means nothing is named, before any folder is made.
out=$(LMKIT_TENSORBOARD=yes "$lmkit" run "$here/train_recipe.lua" --set out="$work-bad" --set epochs=1 --set task=1 2>&1) &&
  fail "LMKIT_TENSORBOARD=yes was taken"
echo "$out" | grep -qF "LMKIT_TENSORBOARD='yes': set it to 1" || fail "no message for LMKIT_TENSORBOARD=yes: $out"
rm -rf "$work" "$work-bad"
echo "tensorboard events: every check passed"
