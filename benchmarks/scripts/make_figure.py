"""Draw "speedup against K, per prompt kind" as an SVG from `specgen bench --json` output.

The figure of the docs is made from the same JSON the bench writes, by hand-rolled SVG with
the standard library alone, so anyone can redraw it from their own run without installing a
plotting package. One line per prompt kind and drafter (solid: draft model, dashed: prompt
lookup) through the median speedup at each K, whiskers from the slowest to the fastest repeat
(each divided by the target alone's median), and a dashed line at 1x: the target alone.
Several reports can share one figure (say, code prompts run with --raw and chat prompts
without), as long as no prompt kind appears in two of them.

    python benchmarks/scripts/make_figure.py code.json chat.json -o speedup.svg
"""

from __future__ import annotations

import argparse
import json
import sys
from html import escape
from pathlib import Path

WIDTH, HEIGHT = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 200, 50, 60
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
DASHES = {"model": "", "lookup": "6 4", "auto": ""}
LABELS = {"model": "draft model", "lookup": "prompt lookup", "auto": "auto K"}


def series(reports: list[dict]) -> dict[tuple[str, str], list[tuple]]:
    """(kind, drafter or "auto") -> [(K or "auto", speedup, low, high)] from the per-kind results."""
    out: dict[tuple[str, str], list[tuple]] = {}
    for report in reports:
        rows = [r for r in report["results"] if r["group"] == "kind"]
        base = {r["key"]: r["tokens_per_second"]["median"] for r in rows if r["drafter"] == "none"}
        if any(kind == key[0] for kind in base for key in out):
            raise SystemExit("make_figure: a prompt kind appears in two reports; give each kind one report")
        for r in rows:
            if r["drafter"] == "none" or r["speedup"] is None:
                continue
            rate = r["tokens_per_second"]
            k = "auto" if r.get("adaptive") else r["k"]
            point = (k, r["speedup"], rate["min"] / base[r["key"]], rate["max"] / base[r["key"]])
            out.setdefault((r["key"], "auto" if r.get("adaptive") else r["drafter"]), []).append(point)
    return out


def placed(lines: dict) -> tuple[dict, list[tuple[float, str]]]:
    """Points with "auto" moved one step right of the largest K, sorted; and the x ticks."""
    numbers = sorted({k for points in lines.values() for k, *_ in points if k != "auto"})
    ticks = [(float(k), str(k)) for k in numbers]
    if any(k == "auto" for points in lines.values() for k, *_ in points):
        step = (numbers[-1] - numbers[0]) / (len(numbers) - 1) if len(numbers) > 1 else 1.0
        ticks.append((numbers[-1] + max(step, 1.0) if numbers else 1.0, "auto"))
    where = {label: x for x, label in ticks}
    moved = {key: sorted((where[str(k)], *rest) for k, *rest in points) for key, points in lines.items()}
    return moved, ticks


def svg(reports: list[dict]) -> str:
    if not series(reports):
        raise SystemExit("make_figure: the report has no speculative results to draw")
    lines, ticks = placed(series(reports))
    top = max(1.2, max(high for points in lines.values() for *_, high in points)) * 1.05
    pad = max(0.5, (ticks[-1][0] - ticks[0][0]) * 0.05)
    x = _scale(ticks[0][0] - pad, ticks[-1][0] + pad, LEFT, WIDTH - RIGHT)
    y = _scale(0.0, top, HEIGHT - BOTTOM, TOP)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    parts += _axes(ticks, pad, top, x, y, _title(reports[0]))
    kinds = sorted({kind for kind, _ in lines})
    order = sorted(lines.items(), key=lambda item: (item[0][0], ["model", "auto", "lookup"].index(item[0][1])))
    for i, ((kind, drafter), points) in enumerate(order):
        colour = COLOURS[kinds.index(kind) % len(COLOURS)]
        parts += _line(points, x, y, colour, DASHES[drafter], square=drafter == "auto")
        parts += _legend(i, f"{kind}, {LABELS[drafter]}", colour, DASHES[drafter], square=drafter == "auto")
    return "\n".join([*parts, "</svg>", ""])


def _scale(lo: float, hi: float, out_lo: float, out_hi: float):
    span = (hi - lo) or 1.0
    return lambda v: out_lo + (v - lo) / span * (out_hi - out_lo)


def _axes(ticks: list[tuple[float, str]], pad: float, top: float, x, y, title: str) -> list[str]:
    parts = [f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="15">{escape(title)}</text>']
    x0, x1, y0 = x(ticks[0][0] - pad), x(ticks[-1][0] + pad), y(0)
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="black"/>')
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y(top)}" stroke="black"/>')
    for position, label in ticks:
        parts.append(f'<text x="{x(position)}" y="{y0 + 18}" text-anchor="middle">{label}</text>')
    step = 0.25 if top <= 2.5 else 0.5 if top <= 5 else 1.0
    for i in range(int(top / step) + 1):
        v = i * step
        parts.append(f'<line x1="{x0 - 4}" y1="{y(v)}" x2="{x1}" y2="{y(v)}" stroke="#ddd"/>')
        parts.append(f'<text x="{x0 - 8}" y="{y(v) + 4}" text-anchor="end">{v:g}×</text>')
    parts.append(f'<line x1="{x0}" y1="{y(1)}" x2="{x1}" y2="{y(1)}" stroke="black" stroke-dasharray="3 3"/>')
    parts.append(f'<text x="{x0 + 6}" y="{y(1) - 6}" fill="#555">target alone</text>')
    parts.append(f'<text x="{(x0 + x1) / 2}" y="{HEIGHT - 18}" text-anchor="middle">draft tokens per round (K)</text>')
    parts.append(
        f'<text transform="translate(18 {(y0 + y(top)) / 2}) rotate(-90)" text-anchor="middle">'
        "speedup over the target alone</text>"
    )
    return parts


def _marker(cx: float, cy: float, colour: str, square: bool) -> str:
    if square:
        return f'<rect x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8" fill="{colour}"/>'
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{colour}"/>'


def _line(points, x, y, colour: str, dash: str, square: bool) -> list[str]:
    path = " ".join(f"{x(k):.1f},{y(s):.1f}" for k, s, _, _ in points)
    parts = [f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>']
    for k, s, low, high in points:
        parts.append(f'<line x1="{x(k):.1f}" y1="{y(low):.1f}" x2="{x(k):.1f}" y2="{y(high):.1f}" stroke="{colour}"/>')
        parts.append(_marker(x(k), y(s), colour, square))
    return parts


def _legend(i: int, label: str, colour: str, dash: str, square: bool) -> list[str]:
    lx, ly = WIDTH - RIGHT + 20, TOP + 30 + 20 * i
    line = (
        f'<line x1="{lx}" y1="{ly}" x2="{lx + 24}" y2="{ly}" stroke="{colour}" stroke-width="2" '
        f'stroke-dasharray="{dash}"/>'
    )
    sample = _marker(lx + 12, ly, colour, True) if square else line
    return [sample, f'<text x="{lx + 30}" y="{ly + 4}">{escape(label)}</text>']


def _title(report: dict) -> str:
    settings, machine = report["settings"], report["machine"]
    models = settings.get("pair") or Path(settings["target"]).name
    threads = machine.get("threads", "?")
    return f"{models}: speedup against K ({machine.get('backend', '?')}, {threads} thread{'' if threads == 1 else 's'})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="JSON written by 'specgen bench --json PATH' ('-': stdin)")
    parser.add_argument("-o", "--output", default="-", help="SVG file to write ('-': stdout)")
    args = parser.parse_args(argv)
    texts = [sys.stdin.read() if r == "-" else Path(r).read_text(encoding="utf-8") for r in args.reports]
    drawing = svg([json.loads(text) for text in texts])
    if args.output == "-":
        sys.stdout.write(drawing)
    else:
        Path(args.output).write_text(drawing, encoding="utf-8")


if __name__ == "__main__":
    main()
