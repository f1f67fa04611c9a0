"""Show a benchmark: a progress bar while it runs, then a header, a table with speedup bars and
their 95% intervals, the audits, a verdict.

As in `specgen run`, stdout carries only the report (so it can be saved or piped) and the
transient progress bar goes to stderr. On a terminal the table is drawn in colour; elsewhere the
same table comes out as plain text, wide enough not to wrap. --json and --csv files are
written here too, so every output format of `specgen bench` lives in one place.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from rich import box
from rich.console import Console, JustifyMethod
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from specgen.bench.runner import BenchResult
from specgen.bench.stats import BASELINE, CONFIDENCE, ENDPOINT, Stats, Verdict, csv_rows
from specgen.errors import SpecgenError, UsageError
from specgen.llama.rpc import placement
from specgen.storage import write_atomically

BAR_WIDTH = 16
EIGHTHS = " ▏▎▍▌▋▊▉"


@contextmanager
def progress(total: int, names: list[str], repeats: int):
    """Yield the `started(index, prompt, config, repeat)` callback of bench.benchmark, drawing a bar;
    a repeat of None is the distribution audit."""
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("starting", total=total)

        def started(index: int, prompt: int, config, repeat: int | None) -> None:
            if repeat is None:
                phase = "distribution audit"
            else:
                phase = "warm-up" if repeat < 0 else f"repeat {repeat + 1}/{repeats}"
            bar.update(task, completed=index, description=f"{names[prompt]} · {config.name} · {phase}")

        yield started


def render(result: BenchResult, out: TextIO) -> None:
    """The report: results table, acceptance by position, audit, footer and verdict."""
    terminal = out.isatty()
    console = Console(file=out, width=None if terminal else 220, highlight=False)
    console.print(header(result), soft_wrap=True, markup=False)
    console.print(results_table(result))
    if any(s.drafted for s in _overall(result)):
        console.print(positions_table(result))
    lines = [
        *audit_lines(result),
        *distribution_lines(result),
        *endpoint_lines(result),
        footer(result),
        verdict_line(result),
    ]
    for line in lines:
        console.print(line, soft_wrap=True, markup=False)


def results_table(result: BenchResult) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="specgen bench: decode speed against the target alone")
    columns: list[tuple[str, JustifyMethod]] = [
        ("prompt", "left"),
        ("config", "left"),
        ("tok/s", "right"),
        ("min–max", "right"),
        ("speedup", "left"),
        ("95% interval", "left"),
        ("predicted", "right"),
        ("accepted", "right"),
        ("missed", "right"),
        ("tok/round", "right"),
        ("draft/verify/other (python)", "right"),
        ("prefill", "right"),
    ]
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True)
    scale = max([1.0, *(s.speedup or 0.0 for s in result.stats)])
    for section in _sections(result):
        for i, s in enumerate(section):
            table.add_row(Text(s.key if i == 0 else ""), *_cells(s, scale), end_section=i == len(section) - 1)
    return table


def _sections(result: BenchResult) -> list[list[Stats]]:
    """Rows grouped per prompt (if several), per kind (if several), then overall."""
    groups = ["overall"]
    if len({p.kind for p in result.prompts}) > 1:
        groups.insert(0, "kind")
    if len(result.prompts) > 1:
        groups.insert(0, "prompt")
    sections: dict[tuple[str, str], list[Stats]] = {}
    for s in result.stats:
        if s.group in groups:
            sections.setdefault((s.group, s.key), []).append(s)
    return sorted(sections.values(), key=lambda rows: groups.index(rows[0].group))


def _cells(s: Stats, scale: float) -> list:
    rate = s.tokens_per_second
    split = s.time_split()
    drafting = s.config != BASELINE and s.drafter != ENDPOINT
    return [
        s.config,
        f"{rate.median:.1f}",
        f"{rate.min:.1f}–{rate.max:.1f}",
        speedup_bar(s.speedup, scale),
        interval_cell(s),
        f"{s.prediction.speedup:.2f}×" if s.prediction else "",
        f"{s.acceptance_rate:.0%}" if drafting else "",
        f"{s.missed_copy_rounds / s.runs:.1f}" if drafting and s.runs else "",
        f"{s.tokens_per_round:.2f}",
        f"{split['draft']:.0%}/{split['verify']:.0%}/{split['other']:.0%} ({split['python']:.1%})"
        if s.drafter != ENDPOINT
        else "",
        f"{s.prefill_s.median * 1000:.0f} ms",
    ]


def speedup_bar(speedup: float | None, scale: float) -> Text:
    """A bar of eighth-blocks, BAR_WIDTH long at `scale`, green at or above 1×, red below."""
    if speedup is None:
        return Text("n/a")
    full, part = divmod(round(speedup / scale * BAR_WIDTH * 8), 8)
    bar = ("█" * full + (EIGHTHS[part] if part else "")).ljust(BAR_WIDTH)
    return Text(bar, style="green" if speedup >= 1.0 else "red") + Text(f" {speedup:.2f}×")


def interval_cell(s: Stats) -> Text:
    """ "1.12–1.31 faster" (green), "0.80–0.95 slower" (red), "0.97–1.08" (the interval holds 1)."""
    ci = s.speedup_interval
    if ci is None:
        return Text("n/a" if s.config != BASELINE else "")
    span = f"{ci.low:.2f}–{ci.high:.2f}"
    if s.outcome == "faster":
        return Text(f"{span} faster", style="green")
    if s.outcome == "slower":
        return Text(f"{span} slower", style="red")
    return Text(span)


def header(result: BenchResult) -> str:
    """What the numbers were measured with: backend, threads, kernels, step costs."""
    m, costs = result.machine, result.step_costs
    kernels = "on" if m.get("extra_bufts") else "off"
    line = (
        f"specgen bench: {m.get('backend', '?')}, {_count(m.get('threads', 0), 'thread')}, "
        f"repacked kernels {kernels} ({m.get('extra_bufts_reason', '?')})"
    )
    if result.settings.get("rpc"):
        line += f"; {placement(m.get('target_layers', {}), None)}"
    if costs is not None:
        sizes = [n for n in sorted(costs.verify) if n & (n - 1) == 0]  # 1, 2, 4, ... 64: the shape of the curve
        verify = ", ".join(f"{n}: {costs.verify_cost(n) * 1000:.0f}" for n in sizes)
        draft = f"; draft step {costs.draft_step * 1000:.1f} ms" if costs.draft_step else ""
        ceiling = result.copy_ceiling()
        assert ceiling is not None, "there are step costs"
        tokens, gain = ceiling
        line += (
            f"; target pass by batch size (ms, after a pass of its size) {verify}, "
            f"+{costs.switch * 1000:.1f} after another size{draft}; a copy kept whole gains at most "
            f"{gain:.2f}× here ({tokens} tokens a pass){_after_prompts(result)}"
        )
    return line


def _after_prompts(result: BenchResult) -> str:
    """ ", after N–M-token prompts A–B×": what a copy kept whole gains at most where the passes
    run, after the prompts long enough to have been timed there; empty where none was."""
    if not result.prompt_costs:
        return ""
    ceilings = result.prompt_ceilings()
    deep = [
        (tokens, gain)
        for tokens, costs, (_, gain) in zip(result.prompt_tokens, result.prompt_costs, ceilings, strict=True)
        if costs is not result.step_costs
    ]
    if not deep:
        return ""
    lengths, gains = [n for n, _ in deep], [g for _, g in deep]
    span = f"{min(gains):.2f}×" if len(deep) == 1 else f"{min(gains):.2f}–{max(gains):.2f}×"
    return f", after {_span(lengths)}-token prompts {span}"


def _span(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"


POSITION_SPANS = ((1, 1), (2, 2), (3, 3), (4, 4), (5, 8), (9, 16), (17, 32), (33, 64))


def positions_table(result: BenchResult) -> Table:
    """Acceptance by draft position: one column each for the first four, then spans (copies
    reach 64 tokens), each the share of the tokens drafted there that were kept."""
    rows = [s for s in _overall(result) if s.drafted]
    width = max(len(s.acceptance_by_position) for s in rows)
    spans = [(lo, hi) for lo, hi in POSITION_SPANS if lo <= width]
    table = Table(box=box.SIMPLE_HEAD, title="acceptance by draft position (all prompts)", min_width=48)
    table.add_column("config", no_wrap=True)
    for lo, hi in spans:
        table.add_column(f"#{lo}" if lo == hi else f"#{lo}-{hi}", justify="right")
    for s in rows:
        table.add_row(s.config, *[_span_rate(s, lo, hi) for lo, hi in spans])
    return table


def _span_rate(s, lo: int, hi: int) -> str:
    rates, drafted = s.acceptance_by_position[lo - 1 : hi], s.drafted_by_position[lo - 1 : hi]
    total = sum(drafted)
    return f"{sum(r * d for r, d in zip(rates, drafted, strict=True)) / total:.0%}" if total else ""


def audit_lines(result: BenchResult) -> list[str]:
    """One line when every output matches the target alone's; else one per diverging config."""
    if result.audits is None and result.distribution is None:
        return ["exactness: token for token needs --temp 0; the distribution audit was off (--audit-seeds 0)"]
    if result.audits is None:
        return []
    bad = [a for a in result.audits if a.diverged]
    if not bad:
        runs = sum(a.runs for a in result.audits)
        return [f"exactness: all {runs} runs give the target alone's tokens exactly (temperature 0)"]
    lines = []
    for a in bad:
        d = a.first
        assert d is not None, "a diverged audit holds its first divergence"
        cause = (
            "the target's own batched pass picks it too: kernel arithmetic, not a bug"
            if d.batched_flip
            else "a near-tie, batched arithmetic"
            if d.near_tie
            else "not a near-tie: a bug; rerun with SPECGEN_DEBUG=1 and report it"
        )
        lines.append(
            f"exactness: {a.config} on {result.prompts[a.prompt].name} differs in {a.diverged}/{a.runs} runs; "
            f"first at token {d.position}: target alone {d.baseline_text!r}, {a.config} {d.other_text!r}; "
            f"top-2 margin {d.top2_margin:.4f}: {cause}"
        )
    return lines


def endpoint_lines(result: BenchResult) -> list[str]:
    """Per endpoint: what it served, and how often its text was the target alone's."""
    return [
        f"{e.config}: {e.model} at {e.url}; its text is the target alone's in {e.same_text}/{e.runs} runs "
        "(another engine, quantization or batching may differ without a bug); its tok/s runs from the first "
        "streamed token to the last, prefill is its time to the first token, tok/round its tokens per chunk"
        for e in result.endpoints
    ]


def footer(result: BenchResult) -> str:
    plan = result.plan
    return (
        f"{_count(len(result.prompts), 'prompt')} × {_count(len(plan.configs), 'config')} × "
        f"{_count(plan.repeats, 'repeat')} (+{plan.warmup} warm-up), up to {plan.max_tokens} tokens, "
        f"temperature {plan.sampling.temperature:g}; tok/s is decode only (prefill apart); 95% intervals: "
        f"bootstrap over prompts and repeats; predicted: the rounds that ran, priced at isolated step costs; "
        f"peak memory {result.peak_rss_mib:.0f} MiB (process RSS){_memory(result.memory_mib)}"
    )


def _memory(memory: dict) -> str:
    if "anonymous" not in memory:
        return ""
    return f", at the end {memory['anonymous']:.0f} MiB anonymous + {memory['file']:.0f} MiB file-backed"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def distribution_lines(result: BenchResult) -> list[str]:
    """The sampling audit: one pass/fail line, and one line per check that fails it."""
    audit = result.distribution
    if audit is None:
        return []
    configs = len({c.config for c in audit.checks})
    scope = (
        f"{configs} configurations × {_count(len(result.prompts), 'prompt')} against the target alone, "
        f"{audit.seeds} seeds each, first {_count(audit.tokens, 'token')}"
    )
    if audit.passed:
        return [
            f"distribution: PASS at the {audit.level:g} level ({scope}; smallest corrected p = {audit.p_value:.3g})"
        ]
    lines = [f"distribution: FAIL at the {audit.level:g} level ({scope}; smallest corrected p = {audit.p_value:.2g})"]
    for check in audit.failed():
        worst = min(check.positions, key=lambda t: t.p_value)
        lines.append(
            f"distribution: {check.config} on {result.prompts[check.prompt].name} differs from the "
            f"target alone at token {worst.position} (chi-square {worst.statistic:.1f}, {worst.df} df, "
            f"p = {worst.p_value:.2g}): a bug; rerun with SPECGEN_DEBUG=1 and report it"
        )
    return lines


def _noise_clause(v: Verdict) -> str:
    """Why a speedup whose interval excludes 1 is still called noise: the permutation test's p is
    not under 1 - stats.CONFIDENCE (a few runs cannot bring it there); empty where the interval holds 1."""
    if v.interval is None or v.p_value is None or v.interval.low <= 1.0 <= v.interval.high:
        return ""
    return f": its interval excludes 1, but the permutation test does not (p = {v.p_value:.2g})"


def verdict_line(result: BenchResult) -> str:
    v = result.verdict
    speed = f"{v.speedup:.2f}×" if v.speedup is not None else "n/a"
    ci = f"95% interval {v.interval.low:.2f}–{v.interval.high:.2f}" if v.interval else "no interval (one run)"
    rates = f"{v.best_rate:.1f} vs {v.baseline_rate:.1f} tok/s, {ci}"
    if v.outcome == "noise" and v.least_p is not None and v.least_p >= 1 - CONFIDENCE:
        return _too_few_line(v, speed, rates) + _warnings(result)
    line = {
        "pays": f"verdict: {v.best} is faster than the target alone at {speed} ({rates}); "
        "speculation pays for this pair on this machine",
        "noise": f"verdict: no configuration is clearly faster than the target alone; the best, {v.best} at {speed} "
        f"({rates}), is within the noise{_noise_clause(v)} (more --repeats or prompts will tell)",
        "costs": f"verdict: every configuration is slower than the target alone; the best, {v.best} at {speed} "
        f"({rates}); speculation does not pay for this pair on this machine",
    }[v.outcome]
    return line + _warnings(result)


def _too_few_line(v: Verdict, speed: str, rates: str) -> str:
    """The verdict where the runs are too few for the permutation test to call anything faster,
    however large the difference: no verdict, and the repeats that would give one."""
    return (
        f"verdict: too few runs to tell; the best, {v.best} at {speed} ({rates}), cannot be told from the "
        f"noise by these runs, whose permutation test cannot go under p = {v.least_p:.2g} however large the "
        f"difference; run --repeats {v.repeats_to_tell} or more"
    )


def _warnings(result: BenchResult) -> str:
    """The verdict's warnings: outputs or output distributions that differ from the target alone's."""
    line = ""
    if result.audits and any(a.first is not None and not a.first.near_tie for a in result.audits):
        line += "; WARNING: some outputs differ from the target alone's (see exactness above)"
    if result.distribution is not None and not result.distribution.passed:
        line += "; WARNING: some output distributions differ from the target alone's (see distribution above)"
    return line


def _overall(result: BenchResult) -> list[Stats]:
    return [s for s in result.stats if s.group == "overall"]


def check_output(path: str | Path | None) -> None:
    """Refuse an output file that could not be written before the benchmark runs, not after."""
    if path is None or str(path) == "-":
        return
    place = Path(path).expanduser()
    if place.is_dir():
        raise UsageError(f"cannot write {path}: it is a folder; name a file in it, such as {place / 'bench.json'}")
    if not place.parent.is_dir():
        raise UsageError(f"cannot write {path}: its folder does not exist")
    if not os.access(place.parent, os.W_OK):
        raise UsageError(f"cannot write {path}: its folder is not writable; name a file in another")


def write_json(result: BenchResult, path: str) -> None:
    """The full JSON document to a file (whole or not at all), or to stdout for '-'."""
    text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        _write(path, text)


def write_csv(result: BenchResult, path: str | Path) -> None:
    rows = csv_rows(list(result.stats))
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    _write(path, text.getvalue())


def _write(path: str | Path, text: str) -> None:
    if not write_atomically(Path(path).expanduser(), text):
        raise SpecgenError(f"cannot write {path}; the results are in the table above")
