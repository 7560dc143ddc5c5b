#!/usr/bin/env bash
# Downloads the public corpora lmkit reads, verifies them and unpacks them as data/<name>/ with
# train.txt, valid.txt, test.txt (word-similarity: the 13 EN-*.txt benchmark files).
#
#   scripts/get_data.sh [ptb|wikitext-2|wikitext-103|word-similarity|all] [options]
#     --dest DIR        where data/<name>/ goes (default: $LMKIT_DATA, else ./data)
#     --from DIR        take the archives from DIR instead of downloading (offline machines);
#                       $LMKIT_DOWNLOAD_CACHE does the same, and downloads are kept there
#     --checksums FILE  the verification list (default: scripts/data.checksums)
#     --print-checksums print sha256/tokens lines for what was unpacked (to record a trusted download)
#
# A corpus is unpacked into a temporary folder, verified (sha256 and token counts from the list),
# and only then moved into place; a failed verification leaves nothing behind and exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${LMKIT_DATA:-data}"
from="${LMKIT_DOWNLOAD_CACHE:-}"
checksums="$here/data.checksums"
print_checksums=0
names=()

usage() { sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "get_data.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    --checksums) checksums="$2"; shift 2 ;;
    --print-checksums) print_checksums=1; shift ;;
    -h|--help) usage; exit 0 ;;
    ptb|wikitext-2|wikitext-103|word-similarity) names+=("$1"); shift ;;
    wt2) names+=(wikitext-2); shift ;;
    wt103) names+=(wikitext-103); shift ;;
    all) names+=(ptb wikitext-2 wikitext-103 word-similarity); shift ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[ ${#names[@]} -gt 0 ] || { usage >&2; die "name a corpus (or all)"; }
[ -f "$checksums" ] || die "no checksum list at $checksums"

ptb_url="http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"
wikitext_url="https://s3.amazonaws.com/research.metamind.io/wikitext"
wordsim_url="https://raw.githubusercontent.com/mfaruqui/eval-word-vectors/master/data/word-sim"
wordsim_files=(EN-MC-30.txt EN-MEN-TR-3k.txt EN-MTurk-287.txt EN-MTurk-771.txt EN-RG-65.txt
  EN-RW-STANFORD.txt EN-SIMLEX-999.txt EN-SimVerb-3500.txt EN-VERB-143.txt EN-WS-353-ALL.txt
  EN-WS-353-REL.txt EN-WS-353-SIM.txt EN-YP-130.txt)

# fetch URL FILE -> path of the archive: from --from/$LMKIT_DOWNLOAD_CACHE when there, else downloaded.
fetch() {
  local url="$1" file="$2" cache="${from:-$dest/.downloads}"
  if [ -f "$cache/$file" ]; then
    echo "$cache/$file"
    return
  fi
  [ -z "$from" ] || [ -n "${LMKIT_DOWNLOAD_CACHE:-}" ] || die "$file is not in $from (--from); download $url there"
  mkdir -p "$cache"
  echo "downloading $url" >&2
  if command -v curl >/dev/null; then
    curl -fL --retry 3 -o "$cache/$file.part" "$url" >&2 || die "download of $url failed"
  else
    wget -O "$cache/$file.part" "$url" >&2 || die "download of $url failed"
  fi
  mv "$cache/$file.part" "$cache/$file"
  echo "$cache/$file"
}

# verify DIR NAME: checks every list entry for NAME/ against DIR (the unpacked corpus).
verify() {
  local dir="$1" name="$2" kind value path file actual checked=0
  while read -r kind value path; do
    case "$kind" in ''|\#*) continue ;; esac
    [ "${path%%/*}" = "$name" ] || continue
    file="$dir/${path#*/}"
    [ -f "$file" ] || die "verification failed: $path is missing from the archive"
    case "$kind" in
      sha256) actual="$(sha256sum "$file" | cut -d' ' -f1)" ;;
      tokens) actual="$(awk '{ n += NF + 1 } END { print n + 0 }' "$file")" ;;
      *) die "$checksums: unknown entry kind '$kind'" ;;
    esac
    [ "$actual" = "$value" ] || die "verification failed: $path has $kind $actual, expected $value"
    checked=$((checked + 1))
  done < "$checksums"
  for file in "$dir"/*; do
    grep -q " $name/$(basename "$file")\$" "$checksums" || echo "note: $name/$(basename "$file") has no checksum entry (unverified)" >&2
  done
  echo "$name: $checked checks passed" >&2
}

# install DIR NAME: moves the verified folder into $dest/NAME (replacing an older copy).
install_corpus() {
  local dir="$1" name="$2"
  if [ "$print_checksums" = 1 ]; then
    for file in "$dir"/*; do
      echo "sha256 $(sha256sum "$file" | cut -d' ' -f1) $name/$(basename "$file")"
      case "$file" in *.txt) [ "$name" = word-similarity ] || echo "tokens $(awk '{ n += NF + 1 } END { print n + 0 }' "$file") $name/$(basename "$file")" ;; esac
    done
  fi
  rm -rf "$dest/$name.old"
  [ ! -e "$dest/$name" ] || mv "$dest/$name" "$dest/$name.old"
  mv "$dir" "$dest/$name"
  rm -rf "$dest/$name.old"
  echo "$name -> $dest/$name" >&2
}

mkdir -p "$dest"
work="$(mktemp -d "$dest/.get_data.XXXXXX")"
trap 'rm -rf "$work"' EXIT

for name in "${names[@]}"; do
  out="$work/$name"
  mkdir -p "$out" "$work/unpack-$name"
  case "$name" in
    ptb)
      archive="$(fetch "$ptb_url" simple-examples.tgz)"
      tar -xzf "$archive" -C "$work/unpack-$name" || die "cannot unpack $archive"
      src="$work/unpack-$name/simple-examples/data"
      for split in train valid test; do
        [ -f "$src/ptb.$split.txt" ] || die "$archive has no simple-examples/data/ptb.$split.txt"
        mv "$src/ptb.$split.txt" "$out/$split.txt"
      done
      ;;
    wikitext-2|wikitext-103)
      archive="$(fetch "$wikitext_url/$name-v1.zip" "$name-v1.zip")"
      unzip -q "$archive" -d "$work/unpack-$name" || die "cannot unpack $archive"
      for split in train valid test; do
        [ -f "$work/unpack-$name/$name/wiki.$split.tokens" ] || die "$archive has no $name/wiki.$split.tokens"
        mv "$work/unpack-$name/$name/wiki.$split.tokens" "$out/$split.txt"
      done
      ;;
    word-similarity)
      for file in "${wordsim_files[@]}"; do
        cp "$(fetch "$wordsim_url/$file" "$file")" "$out/$file"
      done
      ;;
  esac
  verify "$out" "$name"
  install_corpus "$out" "$name"
done
