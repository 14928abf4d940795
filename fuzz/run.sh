#!/usr/bin/env bash
# Fuzzes ThumbCore's binary parsers (ExifReader, ImageFormat.sniff, ImageProbe) with libFuzzer, then
# merges what the run found into the kept corpus, Tests/ThumbCoreTests/FuzzCorpus (docs/fuzzing.md).
#
#   fuzz/run.sh [SECONDS] [TARGET]
#
# SECONDS: how long to fuzz (default 300), then add to the kept corpus what reaches new edges; 0: only
# minimise the kept corpus again from scratch.
# TARGET: all (default) or one family of fuzz/Fuzz.swift's FuzzTargets.all (exif, probe).
# Environment: THUMBD_FUZZ_DIR (work directory, default ${TMPDIR:-/tmp}/thumbd-fuzz), MAX_LEN (65536),
# THUMBD_SHARED_CORPUS (extra seeds, default ../shared/corpus beside the checkout, used when present),
# FUZZ_FLAGS (more libFuzzer flags), MERGE_FLAGS (how to minimise the kept corpus, default
# -set_cover_merge=1 -use_counters=0). One fuzzing process: no -jobs/-workers.
#
# Exits 1, printing the reproducer, when libFuzzer reports a crash, a timeout, an out-of-memory or an
# invariant violation (fuzz/*Targets.swift); 2 on a build failure.
set -euo pipefail

duration=${1:-300}
target=${2:-all}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${THUMBD_FUZZ_DIR:-${TMPDIR:-/tmp}/thumbd-fuzz}
max_len=${MAX_LEN:-65536}
kept=$repo/Tests/ThumbCoreTests/FuzzCorpus
shared=${THUMBD_SHARED_CORPUS:-$repo/../shared/corpus}
binary=$work/thumbcore-fuzzer

# ThumbCore is pure Swift without dependencies, so all of it is compiled, with the harness, as one module
# (the targets can reach internal helpers, and a parser's new helper file is picked up by itself). Its
# files are grouped in folders by domain: every folder is taken.
mapfile -t thumbcore < <(find "$repo/Sources/ThumbCore" -name '*.swift' | sort)
sources=("${thumbcore[@]}" "$repo"/fuzz/*.swift)
mkdir -p "$work" "$kept"

# --- build (again only when a source is newer than the binary) ---
if [[ ! -x $binary ]] || [[ -n $(find "${sources[@]}" "$0" -newer "$binary" -print -quit) ]]; then
  echo "building $binary" >&2
  linker=()
  if command -v ld.lld >/dev/null || [[ -x $(dirname "$(command -v swiftc)")/ld.lld ]]; then
    linker=(-use-ld=lld)  # gold links too, but warns about every ASan helper symbol
  fi
  if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -swift-version 6 \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature InternalImportsByDefault \
    -module-name ThumbCore "${linker[@]}" "${sources[@]}" -o "$binary.tmp"; then
    echo "fuzz/run.sh: the fuzzer did not build" >&2
    exit 2
  fi
  mv "$binary.tmp" "$binary"
fi

# --- seeds: tiny valid headers of every format the parsers know, written here rather than kept ---
seeds=$work/seeds
rm -rf "$seeds"
mkdir -p "$seeds"
seed() {  # seed NAME HEX...: writes the bytes (spaces in HEX are for reading only)
  local name=$1 hex escaped="" i
  shift
  hex=$(printf '%s' "$*" | tr -d ' ')
  for ((i = 0; i < ${#hex}; i += 2)); do escaped+="\\x${hex:i:2}"; done
  printf '%b' "$escaped" >"$seeds/$name"
}
# JPEG: APP1 Exif (big-endian TIFF, orientation 6), baseline 4:2:0 frame 32x16, a scan, EOI.
seed jpeg-exif-be FFD8 FFE1 0022 457869660000 \
  4D4D002A00000008 0001 0112 0003 00000001 0006 0000 00000000 \
  FFC0 0011 08 0010 0020 03 012200 021101 031101 \
  FFDA 000C 03 0100 0211 0311 003F00 00 FFD9
# JPEG: JFIF APP0, then APP1 Exif little-endian with two entries (orientation 8 second), progressive 4:4:4.
seed jpeg-exif-le FFD8 FFE0 0010 4A46494600 0101 00 0001 0001 0000 \
  FFE1 002E 457869660000 \
  49492A0008000000 0200 0001 0300 01000000 2000 0000 1201 0300 01000000 0800 0000 00000000 \
  FFC2 0011 08 0010 0020 03 011100 021101 031101 FFD9
# JPEG: fill bytes, a restart marker, an XMP APP1 before the Exif one, a DQT, then a grayscale SOF1.
seed jpeg-misc FFD8 FFFF D0 FFE1 000A 687474703A2F2F00 \
  FFE1 0022 457869660000 4D4D002A00000008 0001 0112 0003 00000001 0003 0000 00000000 \
  FFDB 0004 0000 FFC1 000B 08 0100 0200 01 011100 FFD9
seed png 89504E470D0A1A0A 0000000D 49484452 00000020 00000010 0806000000 1F15C489 \
  00000000 49454E44 AE426082
seed gif 474946383961 2000 1000 F70000 3B
seed webp-vp8 52494646 2A000000 57454250 56503820 1E000000 B00100 9D012A 2000 1000 0000000000000000
seed webp-vp8l 52494646 22000000 57454250 5650384C 16000000 2F 1FC00300 00000000000000000000
seed webp-vp8x 52494646 24000000 57454250 56503858 0A000000 08000000 1F0000 0F0000 45584946 00000000
seed heic 00000018 66747970 68656963 00000000 6D696631 68656963
seed avif 0000001C 66747970 61766966 00000000 61766966 6D696631 6D696166
seed tiff-le 49492A0008000000 0100 1201 0300 01000000 0500 0000 00000000
seed tiff-be 4D4D002A00000008 0001 0112 0003 00000001 0007 0000 00000000
seed bmp 424D 46000000 00000000 36000000 28000000 02000000 02000000 0100 1800
# Kept too, by name: edge coverage alone does not keep one input per answer (it dropped the BMP seed:
# `count >= 26 ? .bmp : nil` has no edge of its own in -O), and the regression test wants every format.
for file in "$seeds"/*; do cp "$file" "$kept/seed-${file##*/}"; done

# The shared photo corpus, when present, cut to MAX_LEN (the headers are at the start).
inputs=("$work/work-$target" "$kept" "$seeds")
if [[ -d $shared ]]; then
  mkdir -p "$work/shared"
  while IFS= read -r -d '' file; do
    name=${file#"$shared"/}
    head -c "$max_len" "$file" >"$work/shared/${name//\//_}"
  done < <(find "$shared" -type f -print0)
  inputs+=("$work/shared")
fi
mkdir -p "${inputs[0]}"

# Swift's own crash backtracer would race libFuzzer's and ASan's handlers on a trap: leave crashes to them.
export SWIFT_BACKTRACE=enable=no

count() { find "$1" -type f | wc -l; }
kilobytes() { echo $(($(find "$1" -type f -exec cat {} + | wc -c) / 1024)); }
kept_before="$(count "$kept") files, $(kilobytes "$kept") KB"

# --- fuzz: new inputs go to the first directory, work-TARGET, which later runs start from again ---
run=$work/run-$(date +%Y%m%d-%H%M%S)
mkdir -p "$run"
status=0
if ((duration > 0)); then
  echo "fuzzing target '$target' for ${duration}s; log: $run/fuzz.log" >&2
  set +e
  # shellcheck disable=SC2086  # FUZZ_FLAGS is a list of flags
  THUMBD_FUZZ_TARGET=$target "$binary" -max_len="$max_len" -max_total_time="$duration" -timeout=10 \
    -rss_limit_mb=2048 -use_value_profile=1 -dict="$repo/fuzz/thumbd.dict" -print_final_stats=1 \
    -artifact_prefix="$run/" ${FUZZ_FLAGS:-} "${inputs[@]}" 2>&1 | tee "$run/fuzz.log" |
    grep -E '^#[0-9]+.*(INITED|DONE|pulse)|^stat::|ERROR|invariant violated|^SUMMARY|Test unit written' >&2
  status=${PIPESTATUS[0]}
  set -e
fi

# --- merge: a smallest set of inputs (-set_cover_merge=1) covering every edge seen (-use_counters=0:
# counting hit-count buckets too kept ~125 files after 8 minutes of fuzzing, and more after every run),
# on every target whatever TARGET was, so that an input only one family needs stays. libFuzzer counts the
# files of the first directory as merged already and adds to it. The full corpus stays in work-TARGET. ---
others=("${inputs[0]}" "${inputs[@]:2}")  # the inputs but the kept corpus
merge() {
  # shellcheck disable=SC2086  # MERGE_FLAGS is a list of flags
  THUMBD_FUZZ_TARGET=all "$binary" ${MERGE_FLAGS:--set_cover_merge=1 -use_counters=0} -max_len="$max_len" \
    -artifact_prefix="$run/merge-" "$@" >>"$run/merge.log" 2>&1 ||
    { echo "fuzz/run.sh: the merge failed, the kept corpus is unchanged (see $run/merge.log)" >&2 && false; }
}
if ((duration > 0)); then
  # After fuzzing: only inputs that reach edges the kept corpus does not are added, so the committed
  # files change when something new was found, and only then.
  merge "$kept" "${others[@]}" || true
else
  # SECONDS 0: the kept corpus minimised again from scratch, but for its crash-* and seed-* files.
  merged=$work/merged
  rm -rf "$merged"
  mkdir -p "$merged"
  find "$kept" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'seed-*' \) -exec cp {} "$merged/" \;
  if merge "$merged" "$kept" "${others[@]}"; then
    find "$kept" -maxdepth 1 -type f -delete
    cp "$merged"/* "$kept/"
  fi
fi
echo "kept corpus $kept: $kept_before before, $(count "$kept") files, $(kilobytes "$kept") KB after" >&2

# --- findings ---
findings=$(find "$run" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
  -o -name 'leak-*' \) | sort)
if [[ -n $findings || $status -ne 0 ]]; then
  echo "fuzz/run.sh: libFuzzer exited with $status; reproducer(s):" >&2
  for file in $findings; do
    echo "  $file" >&2
    echo "    reproduce: $binary $file" >&2
    echo "    keep: cp $file $kept/crash-<what-it-breaks>" >&2
  done
  exit 1
fi
