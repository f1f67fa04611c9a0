"""A stand-in for a real GGUF model on a machine the real file cannot reach: the same
architecture, tensor shapes, tokenizer and chat template, with random weights. Its passes cost
what the real model's cost (the same kernels over the same shapes, once quantized the same
way); its text is noise.

    python random_model.py skeleton REAL.gguf SKELETON.gguf   # the keys and shapes, no weights (~6 MB)
    python random_model.py fill SKELETON.gguf OUT.gguf [--layers N] [--quiet-from L --scale E]
        # random F16 weights of those shapes: N layers (default all); with --quiet-from, the
        # projections that write into the residual stream (attn_output, ffn_down) of layers L and
        # on are scaled by E, so those layers cost what they cost but change the output little,
        # and the same file cut to L layers (--layers L) is a draft that agrees with it often

`llama-quantize OUT.gguf Q.gguf Q4_K_M` then quantizes it as the real file was.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

SHAPES_KEY = "specgen.random.shapes"  # the real tensors' names and shapes (ggml order), as JSON
SKIPPED = {"general.architecture", "general.file_type", SHAPES_KEY}


def keys(reader: GGUFReader) -> list[tuple[str, object, GGUFValueType, GGUFValueType | None]]:
    """Every key of the file but the header's, with its value and types."""
    found = []
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in SKIPPED:
            continue
        kind = GGUFValueType(field.types[0])
        sub = GGUFValueType(field.types[-1]) if kind == GGUFValueType.ARRAY else None
        found.append((field.name, field.contents(), kind, sub))
    return found


def architecture(reader: GGUFReader) -> str:
    return reader.fields["general.architecture"].contents()


def skeleton(real: str, out: str) -> None:
    reader = GGUFReader(real)
    writer = GGUFWriter(out, architecture(reader))
    for name, value, kind, sub in keys(reader):
        writer.add_key_value(name, value, kind, sub)
    shapes = {t.name: [int(n) for n in t.shape] for t in reader.tensors}
    writer.add_string(SHAPES_KEY, json.dumps(shapes))
    write(writer)


def fill(skeleton_path: str, out: str, layers: int | None, quiet_from: int | None = None, scale: float = 1.0) -> None:
    reader = GGUFReader(skeleton_path)
    arch = architecture(reader)
    writer = GGUFWriter(out, arch)
    for name, value, kind, sub in keys(reader):
        if layers is not None and name == f"{arch}.block_count":
            value = layers
        writer.add_key_value(name, value, kind, sub)
    writer.add_file_type(1)  # mostly F16
    pool = (np.random.default_rng(2611).standard_normal(1 << 24, dtype=np.float32) * 0.02).astype(np.float16)
    shapes = json.loads(reader.fields[SHAPES_KEY].contents())
    for name, shape in shapes.items():
        if layers is not None and name.startswith("blk.") and int(name.split(".")[1]) >= layers:
            continue
        tensor = weights(pool, name, shape[::-1])
        if quiet_from is not None and name.startswith("blk.") and int(name.split(".")[1]) >= quiet_from \
                and name.endswith(("attn_output.weight", "ffn_down.weight")):
            tensor = (tensor.astype(np.float32) * scale).astype(tensor.dtype)
        writer.add_tensor(name, tensor)
    write(writer)


def weights(pool: np.ndarray, name: str, shape: list[int]) -> np.ndarray:
    """Norms 1; biases and matrices small random numbers (a pool of 16M reused, which costs the
    kernels nothing and saves minutes): activations stay finite through the layers."""
    if len(shape) == 1:
        return np.ones(shape, np.float32) if "norm" in name else np.resize(pool, shape).astype(np.float32)
    return np.resize(pool, shape)


def write(writer: GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if sys.argv[1] == "skeleton":
        skeleton(sys.argv[2], sys.argv[3])
    else:
        def option(flag, kind):
            return kind(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else None
        fill(sys.argv[2], sys.argv[3], option("--layers", int), option("--quiet-from", int), option("--scale", float) or 1.0)
