"""Tiny llama-architecture GGUF models, written with the `gguf` package for the test session.

A target and a draft that partly agrees with it (its weights are the target's plus noise),
both F32 so that llama.cpp's arithmetic is exact enough for token-for-token comparisons, with
a SentencePiece-style vocabulary (byte fallback, so multi-byte characters span tokens) and a
ChatML template. Variants break the vocabulary in the ways the pre-flight check must catch.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, replace
from pathlib import Path

import gguf
import numpy as np

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Qwen2.5's own template: ChatML with a tool prompt and <tool_call> blocks (tests/templates)
QWEN_TOOLS = (Path(__file__).parent / "templates" / "qwen2.5-instruct.jinja").read_text()
WORDS = ["the", "def", "return", "print", "self", "for", "in", "if", "else", "and", "is", "of", "to", "a"]
SPECIALS = ["<|im_start|>", "<|im_end|>"]
# fill-in-the-middle control tokens by their GGUF keys, named as Qwen2.5-Coder names them
FIM = {
    "fim_pre": "<|fim_prefix|>",
    "fim_suf": "<|fim_suffix|>",
    "fim_mid": "<|fim_middle|>",
    "fim_pad": "<|fim_pad|>",
    "fim_rep": "<|repo_name|>",
    "fim_sep": "<|file_sep|>",
}
# the same roles under the older keys (tokenizer.ggml.prefix_token_id ...), named so that llama.cpp
# cannot find them by their text: only the header says what they are
FIM_OLD = {"prefix": "<gap_before>", "suffix": "<gap_after>", "middle": "<gap_fill>"}


@dataclass(frozen=True)
class Spec:
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2
    n_layer: int = 2
    n_ff: int = 128
    n_ctx: int = 2048
    seed: int = 0
    noise: float = 0.0  # relative noise added to the output layer (a draft that partly agrees)
    noise_seed: int = 1
    vocab_type: str = "llama"
    rename_token: int | None = None  # give this token id another text (a mismatched vocabulary)
    extra_tokens: int = 0  # pad the vocabulary (a size mismatch)
    extra_boost: float = 0.0  # scale the padding tokens' output rows up: the model emits them often
    chat_template: str | None = CHATML
    endless: bool = False  # zero logits for end-of-generation tokens: greedy decoding never stops
    fim: dict[str, str] | None = None  # fill-in-the-middle tokens (FIM or FIM_OLD) added after the others
    # attention's output zeroed, and only digits and punctuation written (every other output row
    # zero): each token follows from the one before alone, and the text written tokenizes back into
    # the very tokens that wrote it
    context_free: bool = False


def padding(spec: Spec) -> int:
    """Tokens after the ones every fixture shares: the fill-in-the-middle tokens, then the padding."""
    return len(spec.fim or ()) + spec.extra_tokens


def vocabulary(spec: Spec) -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and types: control tokens, 256 byte tokens, characters, words."""
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    types = [2, 3, 3] + [6] * 256
    pieces = ["\u2581", *string.ascii_letters, *string.digits, *string.punctuation]
    pieces += ["\u2581" + w for w in WORDS] + ["in", "on", "er", "  ", "\u2581\u2581"]
    tokens += pieces
    types += [1] * len(pieces)
    tokens += SPECIALS + list((spec.fim or {}).values()) + [f"<extra_{i}>" for i in range(spec.extra_tokens)]
    types += [3] * (len(SPECIALS) + padding(spec))
    if spec.rename_token is not None:
        tokens[spec.rename_token] = tokens[spec.rename_token] + "_renamed"
    scores = [0.0 if t != 1 else float(len(tok)) for tok, t in zip(tokens, types, strict=True)]
    return tokens, scores, types


def weights(spec: Spec, n_vocab: int) -> dict[str, np.ndarray]:
    """Random weights; the padding tokens' rows come last from their own stream, so a padded
    model agrees with its unpadded twin on every shared token. Fill-in-the-middle tokens are
    padding whose output rows are zero: the model reads them but never writes them greedily."""
    rng = np.random.default_rng(spec.seed)
    head = spec.n_embd // spec.n_head
    shared = n_vocab - padding(spec)
    shapes = {"token_embd.weight": (shared, spec.n_embd), "output.weight": (shared, spec.n_embd)}
    for i in range(spec.n_layer):
        shapes |= {
            f"blk.{i}.attn_q.weight": (spec.n_embd, spec.n_embd),
            f"blk.{i}.attn_k.weight": (spec.n_head_kv * head, spec.n_embd),
            f"blk.{i}.attn_v.weight": (spec.n_head_kv * head, spec.n_embd),
            f"blk.{i}.attn_output.weight": (spec.n_embd, spec.n_embd),
            f"blk.{i}.ffn_gate.weight": (spec.n_ff, spec.n_embd),
            f"blk.{i}.ffn_up.weight": (spec.n_ff, spec.n_embd),
            f"blk.{i}.ffn_down.weight": (spec.n_embd, spec.n_ff),
        }
    scale = {"token_embd.weight": 1.0, "output.weight": 0.5}
    out = {name: rng.normal(0, scale.get(name, 0.4), shape).astype(np.float32) for name, shape in shapes.items()}
    pad = np.random.default_rng([spec.seed, 7])
    for name in ("token_embd.weight", "output.weight"):
        rows = pad.normal(0, scale[name], (padding(spec), spec.n_embd)).astype(np.float32)
        out[name] = np.concatenate([out[name], rows])
    out["output.weight"][shared:] *= 1.0 + spec.extra_boost
    out["output.weight"][shared : shared + len(spec.fim or ())] = 0.0
    if spec.noise:
        noise = np.random.default_rng(spec.noise_seed)
        w = out["output.weight"]
        out["output.weight"] = (w + noise.normal(0, spec.noise * w.std(), w.shape)).astype(np.float32)
    if spec.endless:
        out["output.weight"][[2, *range(n_vocab - len(SPECIALS) - padding(spec), n_vocab)]] = 0.0
    if spec.context_free:
        for i in range(spec.n_layer):
            out[f"blk.{i}.attn_output.weight"][:] = 0.0
        written = set(string.digits + string.punctuation)
        silent = [i for i, token in enumerate(vocabulary(spec)[0]) if token not in written]
        out["output.weight"][silent] = 0.0
    out["output_norm.weight"] = np.ones(spec.n_embd, np.float32)
    for i in range(spec.n_layer):
        out[f"blk.{i}.attn_norm.weight"] = np.ones(spec.n_embd, np.float32)
        out[f"blk.{i}.ffn_norm.weight"] = np.ones(spec.n_embd, np.float32)
    return out


def write_model(path: Path, spec: Spec) -> Path:
    tokens, scores, types = vocabulary(spec)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(path.stem)
    writer.add_context_length(spec.n_ctx)
    writer.add_embedding_length(spec.n_embd)
    writer.add_block_count(spec.n_layer)
    writer.add_feed_forward_length(spec.n_ff)
    writer.add_head_count(spec.n_head)
    writer.add_head_count_kv(spec.n_head_kv)
    writer.add_rope_dimension_count(spec.n_embd // spec.n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model(spec.vocab_type)
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    if spec.chat_template:
        writer.add_chat_template(spec.chat_template)
    for role, text in (spec.fim or {}).items():
        writer.add_uint32(f"tokenizer.ggml.{role}_token_id", tokens.index(text))
    for name, array in weights(spec, len(tokens)).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


TARGET = Spec()
DRAFT = replace(TARGET, noise=0.2)


def build_all(folder: Path) -> dict[str, Path]:
    """Every fixture model the tests use, by role."""
    specs = {
        "target": TARGET,
        "draft": DRAFT,
        "draft_renamed": replace(DRAFT, rename_token=139),
        "draft_gpt2": replace(DRAFT, vocab_type="gpt2"),
        "draft_padded": replace(DRAFT, extra_tokens=200),
        "target_no_template": replace(TARGET, chat_template=None),
        "target_endless": replace(TARGET, endless=True),
        "target_tools": replace(TARGET, chat_template=QWEN_TOOLS),  # the target's weights, Qwen2.5's template
        "target_fim": replace(TARGET, fim=FIM),
        "draft_fim": replace(DRAFT, fim=FIM),
        "target_fim_old_keys": replace(TARGET, fim=FIM_OLD),
        "target_fim_context_free": replace(TARGET, fim=FIM, context_free=True, seed=3),
    }
    return {role: write_model(folder / f"tiny-{role}.gguf", spec) for role, spec in specs.items()}
