"""How long the copy drafter takes per round at 100 to 32k tokens of history (issue 16: <= 50 us).

The history is real token ids: the recorded prompts and greedy outputs of the 1.5B target
(`tests/data/greedy-outputs.json`), concatenated until long enough, so matches are as long and as
frequent as in real text that repeats itself. At each history length the copier first indexes it,
then answers a round's query (`Copier.offer`, what the loop calls: sync, search, continuation of
up to 64 tokens) after each of 2,000 further tokens; the times are per query, in microseconds.
With `--vocab FILE.gguf` (a Qwen2.5 GGUF: the recorded ids are its tokens) it times the record
pattern's offer the same way (`PatternSource.offer`: the new text read, the prediction, and its
tokenization by llama.cpp).

    python benchmarks/scripts/query_bench.py [--vocab FILE.gguf]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from specgen.decoding.auto import PatternSource
from specgen.decoding.drafters.base import Vocabulary
from specgen.decoding.drafters.lookup import Copier

RECORDED = Path(__file__).resolve().parents[2] / "tests" / "data" / "greedy-outputs.json"
LENGTHS = (100, 1_000, 4_000, 32_000)
QUERIES = 2_000


def corpus(tokens_needed: int) -> list[int]:
    """Recorded prompts and outputs, one after another, repeated until long enough."""
    records = json.loads(RECORDED.read_text())["outputs"].values()
    text = [t for record in records for t in (*record["prompt"], *record["output"])]
    return (text * (tokens_needed // len(text) + 1))[:tokens_needed]


def per_query_us(history: list[int], following: list[int]) -> list[float]:
    """Microseconds of each offer made after each of `following`'s tokens is appended."""
    copier = Copier()
    copier.reset(history[:-1])
    held, last, times = list(history[:-1]), history[-1], []
    for token in following:
        start = time.perf_counter()
        copier.offer(held, last, 64)
        times.append((time.perf_counter() - start) * 1e6)
        held.append(last)
        last = token
    return times


def per_pattern_us(history: list[int], following: list[int], vocabulary: Vocabulary) -> list[float]:
    """Microseconds of each record-pattern offer made after each of `following`'s tokens."""
    patterned = PatternSource(vocabulary, history[:-1])
    held, times = list(history), []
    for token in following:
        start = time.perf_counter()
        patterned.offer(held, 64)
        times.append((time.perf_counter() - start) * 1e6)
        held.append(token)
    return times


def table(title: str, measure) -> None:
    tokens = corpus(max(LENGTHS) + QUERIES + 1)
    print(f"{title}\n{'history':>8}  {'median us':>9}  {'p90 us':>7}  {'p99 us':>7}")
    for length in LENGTHS:
        times = sorted(measure(tokens[:length], tokens[length : length + QUERIES]))
        p90, p99 = times[int(0.9 * len(times))], times[int(0.99 * len(times))]
        print(f"{length:>8}  {statistics.median(times):9.1f}  {p90:7.1f}  {p99:7.1f}")


def main() -> None:
    table("copy offer (Copier.offer)", per_query_us)
    if "--vocab" in sys.argv:
        from specgen.llama.model import Model

        model = Model(Path(sys.argv[sys.argv.index("--vocab") + 1]))
        vocabulary = Vocabulary(model.piece, model.continuation)
        table("record-pattern offer (PatternSource.offer)", lambda h, f: per_pattern_us(h, f, vocabulary))


if __name__ == "__main__":
    main()
