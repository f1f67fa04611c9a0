#!/usr/bin/env bash
# The second call: the switch-aware costs (this tree) against the commit before them (.old/specgen),
# interleaved, on stand-ins made as in h100-3 (T, and S = T's first 8 layers), with the libraries
# the first call built (.libs/libs.tar.xz). Carries .gpu/site, .gpu/skel, .gpu/whl, .libs, .old.
set -u
LOG=log2.txt LIMIT=${LIMIT:-400}
B=/tmp/b/bin
source benchmarks/scripts/device/common.sh
mkdir -p $B /tmp/j
tar xJf .libs/libs.tar.xz -C $B || exit 1
export LLAMA_CPP_LIB_PATH=$B LD_LIBRARY_PATH=$B
log "libraries: $(ls $B | tr '\n' ' ')"
gunzip -c "$G/skel/target.gguf.gz" > /tmp/m/target-skel.gguf
for spec in "T --quiet-from 8 --scale 0.1" "S --layers 8"; do  # both at once, from the skeleton unpacked above
  set -- $spec
  ( fill_standins "target $*" && $B/llama-quantize "/tmp/m/$1-f16.gguf" "/tmp/m/$1.gguf" Q4_K_M 8 > /dev/null 2>&1 \
    && rm -f "/tmp/m/$1-f16.gguf" ) &
done
wait; ls -la /tmp/m/*.gguf | tee -a "$O/log2.txt"; log "models ready"
P=/tmp/prompts; mkdir -p $P
H=$PWD/benchmarks/prompts/heldout
{ head -2 $H/specbench/qa.jsonl; head -2 $H/specbench/chat.jsonl; head -1 $H/specbench/translation.jsonl; head -1 $H/specbench/math.jsonl; } > $P/short.jsonl
cat $H/json-library.jsonl $H/json-orders.jsonl $H/json-fleet.jsonl > $P/json.jsonl
T=/tmp/m/T.gguf S=/tmp/m/S.gguf
bench() {  # TREE NAME ARGS...
  local tree=$1 name=$2; shift 2
  left 30 || { log "skipped $name (time)"; return; }
  log "specgen bench $name"
  (cd "$tree" && timeout $(( LIMIT - $(elapsed) - 10 )) python3 -m specgen bench "$@" -r 3 --warmup 1 -n 128 \
    --json "/tmp/j/$name.json" 2>&1 | quiet | grep -E "×|specgen bench:" | tail -6 | tee -a "$O/log2.txt")
}
for i in 1 2; do
  bench $PWD short-new-$i $P/short.jsonl --target $T --draft $S -k auto
  bench $PWD/.old short-old-$i $P/short.jsonl --target $T --draft $S -k auto
  bench $PWD json-new-$i $P/json.jsonl --target $T --no-draft -k auto
  bench $PWD/.old json-old-$i $P/json.jsonl --target $T --no-draft -k auto
done
log "done"
tar czf "$O/benches.tgz" -C /tmp/j .
