#!/usr/bin/env bash
# llama.cpp's five draft-free methods on every templated prompt in DIR (see template_prompts.py),
# greedy, N tokens (env N, default 256), 2 threads; one line per prompt and method: decoded tokens, tok/s, acceptance,
# and why it stopped: `stop eog` where the reply ended before N tokens (llama.cpp's count then includes the
# end-of-generation token, which specgen's does not: compare.py takes it off), else `stop length`.
#   benchmarks/scripts/llama-cpp/draft_free.sh DIR TARGET.gguf BIN   (BIN: the folder holding llama-speculative-simple;
#   docs/benchmarks.md says how to build it)
# Where llama.cpp's AMX kernels crash, set PRELOAD=path/to/noamx.so (see noamx.c).
set -u
dir=$1 target=$2 bin=$3
ask=$(mktemp); trap 'rm -f "$ask"' EXIT
for prompt in "$dir"/*.txt; do
  { cat "$prompt"; echo; } > "$ask"  # -f drops a file's last newline, and a chat template ends in one
  for method in ngram-simple ngram-map-k ngram-map-k4v ngram-mod ngram-cache; do
    out=$(LD_PRELOAD=${PRELOAD:-} timeout 600 "$bin/llama-speculative-simple" -m "$target" --spec-type "$method" \
          -f "$ask" -n "${N:-256}" -t 2 --temp 0 -c 4096 2>&1)
    decoded=$(grep -oE "decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+" <<<"$out" | head -1)
    accepted=$(grep -oE "accept += [0-9.]+%" <<<"$out" | head -1)
    count=$(grep -oE "[0-9]+" <<<"$decoded" | head -1)
    stop=length; [ -n "$count" ] && [ "$count" -le "${N:-256}" ] && stop=eog  # it goes past N only for length
    echo "$(basename "$prompt" .txt) $method | $decoded | $accepted | stop $stop"
  done
done
