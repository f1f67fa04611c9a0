#!/usr/bin/env bash
# Issue 48 in one call of the device tool (one CUDA GPU, 16 cores, no network), from the repository
# root, carrying .gpu (prepare.sh) and, on a rerun, .libs (the libs.tar.xz an earlier call sent back):
# does specgen's Python loop keep up with llama.cpp's C++ loop at a 7B target's size?
#   stand-ins (standins.py; the real files cannot reach that machine), Q4_K_M by llama-quantize:
#     T  Qwen2.5-Coder-7B's shapes, the 1.5B's tokenizer, template and keys; layers S_LAYERS and on
#        write into the residual stream at QUIET of the scale
#     S  T cut to its first S_LAYERS layers, after quantizing (the same bytes): a draft that agrees
#     N  the 0.5B's shapes, its own random weights: a draft whose guesses are noise
#   then, greedy, on the same prompts: llama-bench's pass costs by batch size for T, S, N; the target
#   alone's texts (record_outputs.py); llama-speculative-simple -md S at its default draft length,
#   the lengths 2-16 on the first prompt, and the best on all; `specgen bench` -k 1,2,4,auto (its
#   `target` row is -k 0) with S, with llama-server -md S (at that best length) as an --endpoint
#   row, and -k 2,auto once with N (the first call, 2026-11-29-h200-7b, ran out of time there
#   with -k 2,4,8,auto twice); auto's Python a round by part (auto_python.py, into the log); and
#   summary.py's table of it all.
# Writes $OUT: log.txt, llama-bench.json, texts.json, bench-S.json, bench-N.json, summary.txt,
# spec-simple.tar.gz (spec-simple/ and spec-simple.txt, packed after the summary read them: the
# device tool sends back 8 files at most), and libs.tar.xz (the built binaries: a rerun on a fresh
# machine carries it in .libs/).
# LIMIT: seconds for the whole script; a step that would run past it is skipped with a line saying so.
# DRY=1 is the dry run on a CPU (benchmarks/README.md): tiny shapes, this machine's Python (PY), llama.cpp's
# tools from BIN (default: the first ~/.cache/specgen-anchors/*/build/bin), the skeleton SKEL
# (default .gpu/skel/target.gguf.gz, a .gguf is read as it is), scratch in WORK; a step whose tool
# is not there is skipped with one line.
set -u
D=benchmarks/scripts/device
LOG=log.txt LIMIT=${LIMIT:-560}
W=${WORK:-/tmp/m}
PY=${PY:-python3}
source $D/common.sh
mkdir -p "$W/prompts" "$O/spec-simple"
QUIET=${QUIET:-0.05}
if [ -n "${DRY:-}" ]; then
  export PYTHONPATH=$PWD SPECGEN_CACHE_DIR=$W/sgcache
  B=${BIN-$(ls -d "$HOME"/.cache/specgen-anchors/*/build/bin 2>/dev/null | head -1)}
  SHAPE_T=tiny SHAPE_N=tiny-draft S_LAYERS=${S_LAYERS:-2} NGL=0
  N_TOKENS=${N_TOKENS:-24} REPEATS=${REPEATS:-1} PROMPTS=${PROMPTS:-2} LENGTHS=${LENGTHS:-2 4}
else
  export PYTHONPATH=$PYTHONPATH:$PWD
  B=/tmp/b/bin SHAPE_T=7b SHAPE_N=0.5b S_LAYERS=${S_LAYERS:-4} NGL=99
  N_TOKENS=${N_TOKENS:-128} REPEATS=${REPEATS:-2} PROMPTS=${PROMPTS:-4} LENGTHS=${LENGTHS:-2 4 8 16}
fi
SKEL=${SKEL:-$G/skel/target.gguf.gz}
T=$W/T.gguf S=$W/S.gguf N=$W/N.gguf
have() { [ -n "$B" ] && [ -x "$B/$1" ]; }
skipped() { log "skipped: $1 (no $2 in ${B:-any llama.cpp build})"; }
pyrun() {  # SCRIPT ARG...: a script that imports specgen, with llama.cpp loaded before numpy (h100-2)
  "$PY" -c "from specgen.llama.library import llama; llama(); import runpy, sys; sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')" "$@"
}

log "machine"
{ command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  nproc; lscpu | grep -m1 "Model name"; "$PY" --version; git log -1 --format="commit %h %s" 2>/dev/null; } 2>&1 | tee -a "$O/$LOG"

# a second call on the same warm machine finds the stand-ins and the build of the first in /tmp
made=; [ -s "$T" ] && [ -s "$S" ] && [ -s "$N" ] && [ -z "${REMAKE:-}" ] && made=1
if [ -z "$made" ]; then
  log "stand-ins: $SHAPE_T (T, quiet from layer $S_LAYERS at $QUIET) and $SHAPE_N (N), F16, in the background"
  case $SKEL in *.gz) gunzip -c "$SKEL" > "$W/skel.gguf" ;; *) cp "$SKEL" "$W/skel.gguf" ;; esac || exit 1
  ( "$PY" $D/standins.py fill "$W/skel.gguf" "$W/T-f16.gguf" --shape $SHAPE_T --quiet-from "$S_LAYERS" --scale "$QUIET" &
    "$PY" $D/standins.py fill "$W/skel.gguf" "$W/N-f16.gguf" --shape $SHAPE_N --seed 2612 &
    wait ) > "$W/fill.log" 2>&1 &
  fill=$!
else log "stand-ins T, S, N from an earlier call on this machine (REMAKE=1 makes them again)"; fi

TOOLS="llama-bench llama-speculative-simple llama-server"
build=
if [ -n "${DRY:-}" ]; then :
elif have llama-quantize && have llama-server; then log "built binaries from an earlier call on this machine"
elif [ -e .libs/libs.tar.xz ]; then mkdir -p $B && tar xJf .libs/libs.tar.xz -C $B && log "built binaries carried: $(ls $B | tr '\n' ' ')"
else
  build=1; log "build: libllama with CUDA and llama-quantize first"
  EXAMPLES=ON SERVER=ON build_llama /tmp/b llama-quantize || exit 1
fi
[ -z "${DRY:-}" ] && export LLAMA_CPP_LIB_PATH=$B LD_LIBRARY_PATH=$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

quantize() {  # NAME THREADS: NAME-f16.gguf into NAME.gguf, Q4_K_M
  if have llama-quantize; then
    "$B/llama-quantize" "$W/$1-f16.gguf" "$W/$1.gguf" Q4_K_M "$2" > "$W/$1-quant.log" 2>&1
  else
    "$PY" $D/standins.py quantize "$W/$1-f16.gguf" "$W/$1.gguf" --threads "$2"
  fi && rm -f "$W/$1-f16.gguf"
}
if [ -z "$made" ]; then
  wait $fill; cat "$W/fill.log" | tee -a "$O/$LOG"
  [ -s "$W/T-f16.gguf" ] && [ -s "$W/N-f16.gguf" ] || { log "stand-ins not made"; exit 1; }
  have llama-quantize || log "no llama-quantize in ${B:-any llama.cpp build}: Q4_K_M through llama-cpp-python's bindings (the same llama.cpp function)"
  threads=$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))
  ( quantize T "$threads" && "$PY" $D/standins.py cut "$T" "$S" --layers "$S_LAYERS" ) > "$W/quant.log" 2>&1 &
  quantT=$!
  quantize N 2 > "$W/quantN.log" 2>&1 &
  quantN=$!
fi
if [ -n "$build" ]; then
  log "build: $TOOLS (while T and N quantize)"
  EXAMPLES=ON SERVER=ON build_llama /tmp/b $TOOLS -- -k 0  # (ninja: one tool failing leaves the others built)
  log "built: $(ls $B | tr '\n' ' ')"
  # the binaries for a rerun on a fresh machine, packed before anything is timed
  (cd $B && tar cf - $(ls | grep -E '\.so|^llama-') | xz -T0 -3 > "$O/libs.tar.xz") &
  pack=$!
fi
if [ -z "$made" ]; then wait $quantT $quantN; cat "$W/quant.log" "$W/quantN.log" | tee -a "$O/$LOG"; fi
[ -n "${pack:-}" ] && { wait "$pack"; log "libs.tar.xz: $(stat -c %s "$O/libs.tar.xz") bytes"; }
for m in $T $S $N; do
  [ -s "$m" ] || { log "$m not made"; exit 1; }
  echo "$(basename "$m"): $(stat -c %s "$m") bytes, $("$PY" $D/standins.py rows "$m")" | tee -a "$O/$LOG"
done
log "models ready"

if have llama-bench; then
  log "llama-bench: T, S, N, a pass of 1-16 tokens and $N_TOKENS-token decoding"
  "$B/llama-bench" -m "$T" -m "$S" -m "$N" -ngl $NGL -p 1,2,3,4,6,8,12,16 -n "$N_TOKENS" -r 3 -o json \
    > "$O/llama-bench.json" 2> "$W/llama-bench.err" || tail -3 "$W/llama-bench.err" | tee -a "$O/$LOG"
else skipped "llama-bench's pass costs" llama-bench; fi

H=benchmarks/prompts/heldout/specbench
{ head -1 $H/qa.jsonl; head -1 $H/chat.jsonl; head -1 $H/translation.jsonl; head -1 $H/math.jsonl; } | head -"$PROMPTS" \
  | "$PY" -c "import json, sys; [print(json.dumps({k: v for k, v in json.loads(line).items() if k != 'next_turns'}))
for line in sys.stdin]" > "$W/prompts.jsonl"  # one turn each
log "the target alone's greedy texts (record_outputs.py) and the prompts chat-templated for llama.cpp"
pyrun benchmarks/scripts/record_outputs.py "$T" "$O/texts.json" "$W/prompts.jsonl" -n "$N_TOKENS" --threads "$(nproc)" \
  2>&1 | quiet | tee -a "$O/$LOG"
pyrun benchmarks/scripts/llama-cpp/template_prompts.py "$W/prompts" "$T" "$W/prompts.jsonl" > /dev/null 2>&1 \
  && cp "$W"/prompts/*.txt "$O/spec-simple/" || log "template_prompts.py failed"

simple() {  # LENGTH PROMPT.txt: llama-speculative-simple -md S, its stdout kept, one line logged
  local length=$1 name; name=$(basename "$2" .txt)
  local flag=(); [ "$length" = default ] || flag=(--spec-draft-n-max "$length")
  { cat "$2"; echo; } > "$W/ask.txt"  # -f drops a file's last newline, and the template ends in one
  timeout 120 "$B/llama-speculative-simple" -m "$T" -md "$S" -ngl $NGL -ngld $NGL --spec-type draft-simple "${flag[@]}" \
    -f "$W/ask.txt" -n "$N_TOKENS" --temp 0 -c 4096 > "$O/spec-simple/$name-$length.out" 2> "$W/simple.err"
  local decoded drafts kept
  decoded=$(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" "$W/simple.err" | head -1)
  drafts=$(grep -oE "n_draft += [0-9]+" "$W/simple.err" | head -1)
  kept=$(grep -oE "accept += [0-9.]+%" "$W/simple.err" | head -1)
  echo "draft-max $length | $name | $decoded | $drafts | $kept" | tee -a "$O/spec-simple.txt" "$O/$LOG"
}
rate() { grep "^draft-max $1 | $2 |" "$O/spec-simple.txt" | grep -oE "speed: +[0-9.]+" | awk '{print $2; exit}'; }
best=default
if have llama-speculative-simple && left 90; then
  log "llama-speculative-simple -md S: its default draft length, then ${LENGTHS// /, } on the first prompt, the best on all"
  for f in "$W"/prompts/*.txt; do simple default "$f"; done
  first=$(ls "$W"/prompts/*.txt | head -1)
  for length in $LENGTHS; do left 60 && simple "$length" "$first"; done
  best=$(for length in default $LENGTHS; do echo "$(rate "$length" "$(basename "$first" .txt)") $length"; done \
    | sort -g | tail -1 | cut -d' ' -f2)
  log "best draft length: $best"
  if [ "$best" != default ]; then for f in $(ls "$W"/prompts/*.txt | tail -n +2); do left 45 && simple "$best" "$f"; done; fi
else skipped "llama-speculative-simple at its default and best draft length" llama-speculative-simple; fi

up() { "$PY" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "http://127.0.0.1:$1/health" 2> /dev/null; }
endpoint=()
if have llama-server; then
  port=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  length=(); [ "$best" = default ] || length=(--spec-draft-n-max "$best")
  # --no-jinja: the template as llama.cpp's built-in renderer writes it, which specgen uses; the Jinja
  # one adds Qwen's default system prompt, and the server would then answer another prompt
  "$B/llama-server" -m "$T" -md "$S" -ngl $NGL -ngld $NGL --spec-type draft-simple "${length[@]}" -c 4096 -np 1 \
    --no-jinja --host 127.0.0.1 --port "$port" > "$W/server.log" 2>&1 &
  server=$!
  for _ in $(seq 120); do up "$port" && break; sleep 0.5; done
  if up "$port"; then
    endpoint=(--endpoint "http://127.0.0.1:$port/v1"); log "llama-server -md S (draft length $best) on port $port"
  else log "llama-server did not come up: $(tail -2 "$W/server.log" | tr '\n' ' ')"; fi
else skipped "llama-server -md S as a specgen bench --endpoint row" llama-server; fi

bench() {  # NAME KS REPEATS ARG...: specgen bench -k KS into $O/bench-NAME.json, its report into the log
  local name=$1 ks=$2 repeats=$3 status; shift 3
  left 40 || { log "skipped: specgen bench $name (time)"; return; }
  log "specgen bench $name: $*"
  timeout $(( LIMIT - $(elapsed) - 20 )) "$PY" -m specgen bench "$W/prompts.jsonl" "$@" -k "$ks" --no-lookup \
    -r "$repeats" --warmup 1 -n "$N_TOKENS" --json "$O/bench-$name.json" > "$W/bench.out" 2> "$W/bench.err"
  status=$?
  quiet < "$W/bench.out" | tee -a "$O/$LOG"
  [ $status -eq 0 ] || { log "specgen bench $name: exit $status"; tail -3 "$W/bench.err" | tee -a "$O/$LOG"; }
}
bench S 1,2,4,auto "$REPEATS" --target "$T" --draft "$S" "${endpoint[@]}"
[ -n "${server:-}" ] && kill "$server" 2> /dev/null
if left 40; then
  log "auto's Python a round, by part (auto_python.py), T with S"
  pyrun benchmarks/scripts/auto_python.py "$T" "$S" -n "$N_TOKENS" 2>&1 | quiet | tee -a "$O/$LOG"
fi
bench N 2,auto 1 --target "$T" --draft "$N"

log "summary"
"$PY" $D/summary.py "$O" | tee "$O/summary.txt"
packed=$(cd "$O" && ls -d spec-simple spec-simple.txt 2> /dev/null)
[ -n "$packed" ] && tar czf "$O/spec-simple.tar.gz" -C "$O" $packed && (cd "$O" && rm -rf $packed)
log "done"
