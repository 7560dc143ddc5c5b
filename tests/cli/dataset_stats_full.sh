#!/usr/bin/env bash
# dataset_stats_full.sh LMKIT WORKDIR: Table 4.2's statistics of a small corpus in the full
# protocol (train.txt present), counted by hand: tokens are words plus one <eos> per line.
set -u
lmkit=$1
work=$2
rm -rf "$work"
mkdir -p "$work/data/ptb"
printf 'a b <unk>\nb c\n' >"$work/data/ptb/train.txt"   # 5 words + 2 <eos> = 7 tokens, 1 <unk>
printf '<unk> a\n' >"$work/data/ptb/valid.txt"           # 2 + 1 = 3 tokens, 1 <unk>
printf 'c\n' >"$work/data/ptb/test.txt"                  # 1 + 1 = 2 tokens
"$lmkit" run recipes/dataset_stats.lua --set datasets=ptb --set data="$work/data" --set out="$work/out" \
  >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
cat "$work/log"
report=$work/out/report_ptb.md
expect() { grep -Eq -- "$1" "$report" || { echo "report_ptb.md lacks: $1"; exit 1; }; }
expect "Data: PTB, as released by Merity et al."
expect "^\| tokens in the training set +\| +929589 \| +7 \| +-929582 \|"
expect "^\| tokens in the test set +\| +82430 \| +2 \|"
expect "^\| vocabulary size +\| +10000 \| +5 \|"            # a b c <unk> <eos>
expect "^\| % <unk> tokens \(all splits\) +\| +4.91 \| +16.67 \|"   # 2 of 12
expect "^\| % <eos> tokens \(all splits\) +\| +4.53 \| +33.33 \|"   # 4 of 12
echo "dataset stats ok"
rm -rf "$work"
