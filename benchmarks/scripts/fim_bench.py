"""Fill-in-the-middle completions in the middle of real files, as an editor asks for them, against
one or more running servers (`specgen serve`, or llama-server): tokens, decode speed and the time
to the first token of each reply, and how the servers compare.

Each file (by default five modules of this Python's standard library) is cut inside several of
its functions: `--span` lines from the middle of a function's body are the gap, and the request is
what llama.vim sends for a cursor at the gap's start: up to 256 lines before it (`input_prefix`), up
to 64 after (`input_suffix`), and another of the files (the next one, up to `--extra-lines` lines)
as `input_extra`. Each request goes to every server in turn (the order alternating from one cut to
the next), streamed, greedy (`temperature` 0, `seed` 0, so auto decides from its cached step
costs), `n_predict` tokens at most.

    specgen serve --target $T --draft $D -t 2 -k 0 --port 8391 &      # plain decoding
    specgen serve --target $T --draft $D -t 2 --port 8392 &           # auto (the default)
    python benchmarks/scripts/fim_bench.py --server plain=http://127.0.0.1:8391 \\
        --server auto=http://127.0.0.1:8392 --json fim.json

The first server is the baseline. Start the servers afresh for each run: a server remembers the
replies it served, and copies from them when the same request comes again. One line per reply
goes to stdout (server, file:line, prompt tokens, reply tokens, decode tokens/s, the time to the
first token as the client saw it and as the server counted it, whole seconds, whether the text is
the removed lines), then a summary per server: geometric mean of decode speed and of the ratio to
the baseline's on the same cut, median time to first token, and how many replies were the
baseline's text (greedy decoding: all of them, but for near-ties on quantized models).
Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import http.client
import json
import math
import statistics
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

STDLIB = ("json/decoder.py", "shlex.py", "textwrap.py", "fnmatch.py", "colorsys.py")
PREFIX_LINES, SUFFIX_LINES = 256, 64  # llama.vim's n_prefix and n_suffix


@dataclass(frozen=True)
class Cut:
    """A gap in a file: the text before it, the lines removed, the text after it."""

    path: Path
    line: int  # 1-based, the gap's first line
    prefix: str
    middle: str
    suffix: str


@dataclass(frozen=True)
class Result:
    server: str
    where: str
    prompt_tokens: int
    tokens: int
    decode_tps: float
    first_token_client_s: float | None
    first_token_server_s: float | None
    total_s: float
    content: str


def cuts(path: Path, count: int, span: int) -> list[Cut]:
    """Up to `count` gaps of `span` lines, each in the middle of the body of one of the file's
    functions whose body is at least twice as long, spread over the file, in file order."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    bodies = [
        (node.body[0].lineno, node.end_lineno)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.body[0].lineno + 1 >= 2 * span
    ]
    bodies.sort()
    chosen = [bodies[round(i * (len(bodies) - 1) / max(count - 1, 1))] for i in range(min(count, len(bodies)))]
    out = []
    for first, last in sorted(set(chosen)):
        start = (first + last - span) // 2  # 1-based first line of the gap
        before, gap, after = lines[: start - 1], lines[start - 1 : start - 1 + span], lines[start - 1 + span :]
        out.append(Cut(path, start, "".join(before[-PREFIX_LINES:]), "".join(gap), "".join(after[:SUFFIX_LINES])))
    return out


def infill(url: str, body: dict, key: str | None) -> tuple[dict, float | None, float]:
    """POST a streamed /infill; the final body with the content joined, the client's seconds to the
    first non-empty piece, and the whole request's seconds."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=600)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    start = time.perf_counter()
    try:
        connection.request("POST", parts.path.rstrip("/") + "/infill", json.dumps({**body, "stream": True}), headers)
        response = connection.getresponse()
    except OSError as error:
        raise SystemExit(f"fim_bench: cannot reach {url}: {error}; is the server running?") from None
    if response.status != 200:
        raise SystemExit(f"fim_bench: {url} answered {response.status}: {response.read()[:300]!r}")
    pieces, first, final = [], None, None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        if event.get("content"):
            first = first if first is not None else time.perf_counter() - start
            pieces.append(event["content"])
        if event.get("stop"):
            final = event
    connection.close()
    if final is None:
        raise SystemExit(f"fim_bench: {url} ended its stream without a final event")
    return {**final, "content": "".join(pieces)}, first, time.perf_counter() - start


def run(servers: list[tuple[str, str]], files: list[Path], args) -> list[Result]:
    results = []
    extra = {path: path.read_text().splitlines(keepends=True)[: args.extra_lines] for path in files}
    all_cuts = [
        (cut, files[(i + 1) % len(files)]) for i, path in enumerate(files) for cut in cuts(path, args.cuts, args.span)
    ]
    for number, (cut, other) in enumerate(all_cuts):
        body = {
            "input_prefix": cut.prefix,
            "input_suffix": cut.suffix,
            "prompt": "",
            "input_extra": [{"filename": other.name, "text": "".join(extra[other])}] if other != cut.path else [],
            "n_predict": args.n_predict,
            "temperature": 0,
            "seed": 0,
            "cache_prompt": True,
        }
        order = servers if number % 2 == 0 else servers[::-1]
        for name, url in order:
            reply, first, total = infill(url, body, args.api_key)
            timings, own = reply.get("timings", {}), reply.get("specgen", {})
            results.append(
                Result(
                    name,
                    f"{cut.path.name}:{cut.line}",
                    reply.get("tokens_evaluated", 0),
                    reply.get("tokens_predicted", 0),
                    timings.get("predicted_per_second", 0.0),
                    first,
                    own.get("first_token_s"),
                    total,
                    reply["content"],
                )
            )
            print(line(results[-1], cut), flush=True)
    return results


def line(result: Result, cut: Cut) -> str:
    first_client = "-" if result.first_token_client_s is None else f"{result.first_token_client_s:.3f}"
    first_server = "-" if result.first_token_server_s is None else f"{result.first_token_server_s:.3f}"
    return (
        f"{result.server:>8} {result.where:<22} prompt {result.prompt_tokens:>5} tokens {result.tokens:>4} "
        f"{result.decode_tps:7.2f} tok/s  first token {first_client}s (server {first_server}s)  "
        f"total {result.total_s:6.2f}s  the removed lines: {result.content.strip() == cut.middle.strip()}"
    )


def summary(results: list[Result], servers: list[tuple[str, str]]) -> str:
    base = servers[0][0]
    baseline = {r.where: r for r in results if r.server == base}
    rows = []
    for name, _ in servers:
        own = [r for r in results if r.server == name]
        ratios = [
            r.decode_tps / baseline[r.where].decode_tps
            for r in own
            if r.decode_tps > 0 and baseline[r.where].decode_tps > 0
        ]
        firsts = [r.first_token_client_s for r in own if r.first_token_client_s is not None]
        same = sum(r.content == baseline[r.where].content for r in own)
        decode = geomean([r.decode_tps for r in own if r.decode_tps > 0])
        rows.append(
            f"{name:>8}: {len(own)} replies, decode {decode:.2f}"
            f" tok/s (geometric mean), x{geomean(ratios):.3f} {base} on the same cuts, first token median "
            f"{statistics.median(firsts) if firsts else float('nan'):.3f}s, total "
            f"{sum(r.total_s for r in own):.1f}s, text the same as {base}'s in {same} of {len(own)}"
        )
    return "\n".join(rows)


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="source files (default: five standard-library modules)")
    parser.add_argument(
        "--server",
        action="append",
        required=True,
        metavar="NAME=URL",
        help="a server to ask (repeatable; the first is the baseline)",
    )
    parser.add_argument("--api-key", help="sent as a Bearer token to every server")
    parser.add_argument("--cuts", type=int, default=3, help="gaps per file (default 3)")
    parser.add_argument("--span", type=int, default=3, help="lines removed at each gap (default 3)")
    parser.add_argument("--n-predict", type=int, default=128, help="most tokens per reply (default 128)")
    parser.add_argument("--extra-lines", type=int, default=200, help="lines of the other file sent as input_extra")
    parser.add_argument("--json", type=Path, help="also write every result here")
    args = parser.parse_args()
    servers = [tuple(item.split("=", 1)) for item in args.server]
    if any(len(server) != 2 for server in servers):
        parser.error("--server takes NAME=URL, e.g. plain=http://127.0.0.1:8391")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = args.files or [stdlib / name for name in STDLIB]
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        parser.error(f"no such file: {missing[0]}")
    results = run(servers, files, args)
    print(summary(results, servers))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
        print(f"fim_bench: wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
