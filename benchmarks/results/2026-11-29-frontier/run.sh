#!/usr/bin/env bash
# Replays every recorded greedy output with --oracle on every curve of tests/copyreplay.py (the
# recordings of ../2026-11-29-policy/run.sh), with one trial variant applied (variants/NAME.py,
# executed before the replay; a name without a file: today's policy).
# Run from the repository root: bash benchmarks/results/2026-11-29-frontier/run.sh NAME OUT
# (env RISK: the loss budget's share, as copyreplay.py --risk; PYTHON, VOCAB; a variant's own knobs)
set -euo pipefail
name=$1
out=$2
here=$PWD/benchmarks/results/2026-11-29-frontier
wrapper=$(mktemp)
trap 'rm -f "$wrapper"' EXIT
printf '#!/bin/sh\nexec %s %s/replay_variant.py "$@"\n' "${PYTHON:-python}" "$here" > "$wrapper"
chmod +x "$wrapper"
variant=""
[ -f "$here/variants/$name.py" ] && variant="$here/variants/$name.py"
VARIANT=$variant PYTHON=$wrapper bash benchmarks/results/2026-11-29-policy/run.sh "$out"
