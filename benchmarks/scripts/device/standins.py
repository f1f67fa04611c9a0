"""Random-weight stand-ins of a model at published shapes, for a machine no model file can reach.

The device calls of issue 48 time a 7B-class target against llama.cpp's own speculative loop, on
a machine that gets at most 64 MiB of files. What reaches it is a skeleton: a real model's keys
(tokenizer, chat template) without weights (`random_model.py skeleton` of the h100 folder). This
script fills it at a shape named below: the keys that give a model its size are set, the
vocabulary is padded to the shape's as Qwen's converter pads it, and every weight comes from one
pool of random numbers whose length is prime. A row of n numbers starting at offset i·n then
repeats only after the pool's length in rows, more than any vocabulary: no two rows of the
output head are equal, so no two tokens' logits are equal by construction (the pool of 2^24 that
`random_model.py` used made the 1.5B's rows 32,768 apart identical, every argmax a tie, and
llama.cpp and specgen picked different tokens of those ties).

    python standins.py fill SKELETON OUT.gguf --shape 7b [--layers N] [--quiet-from L --scale E] [--seed S]
        # F16 weights at the shape (7b: Qwen2.5-Coder-7B's published config; 0.5b; tiny and
        # tiny-draft: a dry run's), N layers (default the shape's); with --quiet-from, the
        # projections that write into the residual stream (attn_output, ffn_down) of layers L and
        # on are scaled by E: they cost what they cost but change the output little, so the same
        # weights cut to L layers (`cut`) are a draft that agrees with the whole often
    python standins.py cut MODEL.gguf OUT.gguf --layers N    # the first N layers, bytes as they are
    python standins.py rows MODEL.gguf                        # how many of the output head's rows differ
    python standins.py quantize F16.gguf OUT.gguf [--threads N]  # Q4_K_M through llama-cpp-python's
        # bindings, where no llama-quantize was built (a dry run): the same llama.cpp function

`llama-quantize OUT.gguf Q.gguf Q4_K_M` quantizes a filled file as the real ones are; `cut` also
reads a quantized file (S, an agreeing draft, is T cut after quantizing, so its layers are T's).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

# the largest prime below 2^24: 32 MiB of F16, a row of the widest matrix in a few milliseconds
POOL = 16_777_213
SHAPES_KEY = "specgen.random.shapes"  # written by random_model.py skeleton; not copied
UNUSED = 5  # the token type of Qwen's padding tokens ([PAD151935] ...)


@dataclass(frozen=True)
class Shape:
    """What sets a decoder's size: hidden width, feed-forward width, layers, attention heads (and
    key-value heads), vocabulary (None: the skeleton's own, plus `extra_vocab` padding tokens),
    rope base, and whether the output head is the embedding's (tied)."""

    label: str
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int | None
    rope_theta: float
    tied: bool
    extra_vocab: int = 0


SHAPES = {
    # Qwen2.5-Coder-7B(-Instruct)'s config.json: untied output head, vocabulary padded to 152064
    "7b": Shape("7B", 3584, 18944, 28, 28, 4, 152064, 1e6, tied=False),
    # Qwen2.5-Coder-0.5B's: tied embeddings, the tokenizer's 151936
    "0.5b": Shape("0.5B", 896, 4864, 24, 14, 2, 151936, 1e6, tied=True),
    # a dry run's: the same structure (untied, padded past the tokenizer as the 7B is; the draft
    # tied and unpadded), at sizes a 2-core CPU runs in seconds; 256 wide so Q4_K applies
    "tiny": Shape("tiny", 256, 512, 4, 4, 2, None, 1e6, tied=False, extra_vocab=128),
    "tiny-draft": Shape("tiny-draft", 256, 384, 2, 4, 2, None, 1e6, tied=True),
}


def keys(reader: GGUFReader) -> Iterator[tuple[str, object, GGUFValueType, GGUFValueType | None]]:
    """Every key of the file but the header's, the architecture and file type (the writer adds
    them) and the skeleton's shapes, with its value and types."""
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in ("general.architecture", "general.file_type", SHAPES_KEY):
            continue
        kind = GGUFValueType(field.types[0])
        sub = GGUFValueType(field.types[-1]) if kind == GGUFValueType.ARRAY else None
        yield field.name, field.contents(), kind, sub


def architecture(reader: GGUFReader) -> str:
    return reader.fields["general.architecture"].contents()


def sized(arch: str, shape: Shape, layers: int, tokens: int) -> dict[str, object]:
    """The keys a shape sets, by name; the head width keys only where the skeleton has them."""
    head = shape.hidden // shape.heads
    return {
        f"{arch}.block_count": layers,
        f"{arch}.embedding_length": shape.hidden,
        f"{arch}.feed_forward_length": shape.ffn,
        f"{arch}.attention.head_count": shape.heads,
        f"{arch}.attention.head_count_kv": shape.kv_heads,
        f"{arch}.rope.freq_base": shape.rope_theta,
        f"{arch}.rope.dimension_count": head,
        f"{arch}.attention.key_length": head,
        f"{arch}.attention.value_length": head,
        f"{arch}.vocab_size": tokens,
        "general.size_label": shape.label,
        "general.name": f"specgen stand-in ({shape.label} shapes, random weights)",
    }


def padded(name: str, value: object, tokens: int) -> object:
    """The vocabulary's lists padded to `tokens` entries as Qwen's converter pads them."""
    if not isinstance(value, list) or len(value) >= tokens:
        return value
    extra = range(len(value), tokens)
    if name == "tokenizer.ggml.tokens":
        return value + [f"[PAD{i}]" for i in extra]
    if name == "tokenizer.ggml.token_type":
        return value + [UNUSED] * len(extra)
    if name == "tokenizer.ggml.scores":
        return value + [-1000.0] * len(extra)
    return value


def tensor_shapes(arch: str, shape: Shape, layers: int, tokens: int) -> dict[str, tuple[int, ...]]:
    """Every tensor of the decoder, numpy order (rows, columns); qwen2 has q, k, v biases."""
    kv = shape.hidden // shape.heads * shape.kv_heads
    found: dict[str, tuple[int, ...]] = {"token_embd.weight": (tokens, shape.hidden)}
    for i in range(layers):
        blk = f"blk.{i}."
        found |= {
            blk + "attn_norm.weight": (shape.hidden,),
            blk + "attn_q.weight": (shape.hidden, shape.hidden),
            blk + "attn_k.weight": (kv, shape.hidden),
            blk + "attn_v.weight": (kv, shape.hidden),
            blk + "attn_output.weight": (shape.hidden, shape.hidden),
            blk + "ffn_norm.weight": (shape.hidden,),
            blk + "ffn_gate.weight": (shape.ffn, shape.hidden),
            blk + "ffn_up.weight": (shape.ffn, shape.hidden),
            blk + "ffn_down.weight": (shape.hidden, shape.ffn),
        }
        if arch == "qwen2":
            found |= {blk + "attn_q.bias": (shape.hidden,), blk + "attn_k.bias": (kv,), blk + "attn_v.bias": (kv,)}
    found["output_norm.weight"] = (shape.hidden,)
    if not shape.tied:
        found["output.weight"] = (tokens, shape.hidden)
    return found


def pool(seed: int) -> np.ndarray:
    """POOL random F16 numbers, small enough that activations stay finite through the layers."""
    return (np.random.default_rng(seed).standard_normal(POOL, dtype=np.float32) * 0.02).astype(np.float16)


def weights(numbers: np.ndarray, name: str, dims: tuple[int, ...]) -> np.ndarray:
    """Norms 1; biases F32 and matrices F16 from `numbers`, read on from an offset that the
    tensor's name gives (so no two tensors of one shape are equal: the output head is not the
    embedding, layer 2 is not layer 1)."""
    if len(dims) == 1 and "norm" in name:
        return np.ones(dims, np.float32)
    start = zlib.crc32(name.encode()) % len(numbers)
    tensor = np.resize(np.concatenate([numbers[start:], numbers[:start]]), dims)
    return tensor.astype(np.float32) if len(dims) == 1 else tensor


def fill(skeleton: str, out: str, shape: Shape, layers: int, quiet_from: int | None, scale: float, seed: int) -> None:
    reader = GGUFReader(skeleton)
    arch = architecture(reader)
    listed = len(reader.fields["tokenizer.ggml.tokens"].contents())
    tokens = shape.vocab if shape.vocab is not None else listed + shape.extra_vocab
    if tokens < listed:
        sys.exit(f"standins: the skeleton's {listed} tokens do not fit the {shape.label} shape's {tokens}")
    writer = GGUFWriter(out, arch)
    changed = sized(arch, shape, layers, tokens)
    for name, value, kind, sub in keys(reader):
        writer.add_key_value(name, padded(name, changed.pop(name, value), tokens), kind, sub)
    for name, value in changed.items():  # keys the skeleton lacks: only the ones every loader reads
        if name.endswith(("block_count", "embedding_length", "feed_forward_length", "head_count", "head_count_kv")):
            writer.add_key_value(name, value, GGUFValueType.UINT32, None)
    writer.add_file_type(1)  # mostly F16
    numbers = pool(seed)
    plan = tensor_shapes(arch, shape, layers, tokens)
    for name, dims in plan.items():
        dtype = np.float32 if len(dims) == 1 else np.float16
        writer.add_tensor_info(name, dims, np.dtype(dtype), int(np.prod(dims)) * np.dtype(dtype).itemsize)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    # a quieted layer's residual writers (attn_output, ffn_down) read the same pool scaled: each of
    # their numbers is `scale` times the one it would have been
    quiet = (numbers.astype(np.float32) * scale).astype(np.float16)
    for name, dims in plan.items():  # one tensor in memory at a time: a 7B's F16 is 15 GB
        quieted = quiet_from is not None and name.startswith("blk.") and int(name.split(".")[1]) >= quiet_from
        writes = name.endswith(("attn_output.weight", "ffn_down.weight"))
        writer.write_tensor_data(weights(quiet if quieted and writes else numbers, name, dims))
    writer.close()


def cut(model: str, out: str, layers: int) -> None:
    """MODEL's first `layers` layers, every other tensor and key as it is (quantized bytes too)."""
    reader = GGUFReader(model)
    arch = architecture(reader)
    writer = GGUFWriter(out, arch)
    for name, value, kind, sub in keys(reader):
        writer.add_key_value(name, layers if name == f"{arch}.block_count" else value, kind, sub)
    writer.add_file_type(reader.fields["general.file_type"].contents())
    kept = [t for t in reader.tensors if not t.name.startswith("blk.") or int(t.name.split(".")[1]) < layers]
    for t in kept:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in kept:
        writer.write_tensor_data(t.data)
    writer.close()


def rows(model: str) -> tuple[int, int]:
    """The output head's rows (the embedding's where tied) and how many of them differ."""
    reader = GGUFReader(model)
    found = {t.name: t for t in reader.tensors}
    head = found.get("output.weight") or found["token_embd.weight"]
    data = np.asarray(head.data).reshape(int(head.shape[-1]), -1)
    return len(data), len({hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in data})


def quantize(source: str, out: str, threads: int) -> None:
    from specgen.llama.library import llama

    lib = llama()
    params = lib.llama_model_quantize_default_params()
    params.ftype = lib.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = threads
    if lib.llama_model_quantize(source.encode(), out.encode(), params) != 0:
        sys.exit(f"standins: llama.cpp could not quantize {source}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    filling = commands.add_parser("fill")
    filling.add_argument("skeleton")
    filling.add_argument("out")
    filling.add_argument("--shape", choices=sorted(SHAPES), required=True)
    filling.add_argument("--layers", type=int)
    filling.add_argument("--quiet-from", type=int)
    filling.add_argument("--scale", type=float, default=1.0)
    filling.add_argument("--seed", type=int, default=2611)
    cutting = commands.add_parser("cut")
    cutting.add_argument("model")
    cutting.add_argument("out")
    cutting.add_argument("--layers", type=int, required=True)
    counting = commands.add_parser("rows")
    counting.add_argument("model")
    quantizing = commands.add_parser("quantize")
    quantizing.add_argument("source")
    quantizing.add_argument("out")
    quantizing.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.command == "fill":
        shape = SHAPES[args.shape]
        fill(args.skeleton, args.out, shape, args.layers or shape.layers, args.quiet_from, args.scale, args.seed)
    elif args.command == "cut":
        cut(args.model, args.out, args.layers)
    elif args.command == "quantize":
        quantize(args.source, args.out, args.threads)
    else:
        total, distinct = rows(args.model)
        print(json.dumps({"model": args.model, "rows": total, "distinct": distinct}))


if __name__ == "__main__":
    main()
