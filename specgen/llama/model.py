"""A loaded GGUF model over llama.cpp's C API: decode, read logits, roll back.

It stays on llama.cpp's low-level C API so that the speculative loop pays for nothing it does
not use: logits are read only for the rows asked for, as zero-copy numpy views of llama.cpp's
own buffer; rejected draft positions are removed from the KV cache; the native model,
context and batch are freed by an ExitStack when the Model is closed, never by __del__.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specgen.decoding.tokens import common_prefix
from specgen.errors import SpecgenError
from specgen.llama.kernels import extra_buffer_types
from specgen.llama.library import (
    Device,
    captured_log,
    default_threads,
    device_list,
    devices,
    drop_amx_buffer_type,
    llama,
    offload_devices,
)
from specgen.llama.markup import Control, Encoded, Templated, encode, split
from specgen.llama.rpc import Endpoint, connect, signals_for_main_thread_only

MAX_MESSAGES = 1024  # the most messages one prompt may hold: a chat (run, serve) with more is refused


class ContextFull(SpecgenError):
    """The prompt (or the conversation) does not fit in the context window."""


class TooManyMessages(SpecgenError):
    """A conversation holds more messages than a prompt may (MAX_MESSAGES)."""


def check_message_count(count: int) -> None:
    """Refuse a conversation of more than MAX_MESSAGES messages before any rendering."""
    if count > MAX_MESSAGES:
        raise TooManyMessages(
            f"the conversation has {count} messages; specgen takes at most {MAX_MESSAGES} in "
            "one prompt: leave out the oldest ones"
        )


@dataclass(frozen=True)
class SavedState:
    """A model's KV cache as llama.cpp serialises it, and the tokens it holds."""

    tokens: tuple[int, ...]
    data: object  # a ctypes byte array
    nbytes: int
    kept: tuple[int, np.ndarray] | None = None  # `Model.start`'s last row and its position


@dataclass(frozen=True)
class FimTokens:
    """A model's fill-in-the-middle control tokens, None where it has none: as llama.cpp reads them
    from the GGUF header (`tokenizer.ggml.fim_pre_token_id` ... `fim_sep_token_id`, or the older
    `prefix_token_id`, `suffix_token_id`, `middle_token_id`) or finds them by their text."""

    pre: int | None = None
    suf: int | None = None
    mid: int | None = None
    pad: int | None = None
    rep: int | None = None  # begins the repository's name in a multi-file prompt
    sep: int | None = None  # begins a file's name in a multi-file prompt

    @property
    def usable(self) -> bool:
        """Whether the model can fill a gap: it has the prefix, suffix and middle tokens."""
        return None not in (self.pre, self.suf, self.mid)


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model: context size, CPU threads, layers to offload (None = all, where there is
    a GPU or a worker), and RPC workers whose devices take the layers before this machine's GPU."""

    n_ctx: int = 4096
    n_threads: int | None = None
    n_gpu_layers: int | None = None
    n_batch: int = 512
    rpc: tuple[Endpoint, ...] = ()


def _room_for_a_copy(path: Path, meminfo: str = "/proc/meminfo") -> bool:
    """Whether the weights fit in available memory with 512 MB to spare (True where unknown).

    With repacked CPU kernels llama.cpp keeps the repacked weights beside the mapped file, two
    copies; read without mmap, the repacked weights are the only one (peak RSS of the 1.5B
    target: 1.90 -> 1.30 GB). A machine short of memory keeps the mapping, whose pages the
    kernel can drop again.
    """
    try:
        fields = dict(line.split(":", 1) for line in Path(meminfo).read_text().splitlines() if ":" in line)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return True
    return available > path.stat().st_size + (512 << 20)


LAYER_PLACED = re.compile(r"layer\s+\d+ assigned to device (\S+?),")


def layers_by_device(log: list[str], known: list[Device]) -> dict[str, int]:
    """Where llama.cpp put a model's layers (the output layer counts as one), from its load log:
    {"CPU": 3} here, {"127.0.0.1:50052": 2, "CPU": 1} with a worker (named by its address)."""
    where = {device.name: device.description if device.name.startswith("RPC") else device.name for device in known}
    counts: dict[str, int] = {}
    for line in log:
        for name in LAYER_PLACED.findall(line):
            counts[where.get(name, name)] = counts.get(where.get(name, name), 0) + 1
    return counts


class Model:
    """A loaded model, its context and a reusable batch; `tokens` mirrors its KV cache."""

    def __init__(self, path: str | Path, options: LoadOptions = LoadOptions()):
        lib = llama()
        self.path = Path(path)
        self._stack = ExitStack()
        try:
            with signals_for_main_thread_only(bool(options.rpc)):  # ggml starts its RPC threads while loading
                self._load(lib, options)
        except BaseException:
            self._stack.close()
            raise
        self.tokens: list[int] = []
        self._kept: tuple[int, np.ndarray] | None = None  # the last prompt row `start` made, and its position

    def _load(self, lib: Any, options: LoadOptions) -> None:
        mparams = lib.llama_model_default_params()
        offload = connect(options.rpc) + offload_devices()  # workers first, as llama.cpp orders them
        mparams.n_gpu_layers = (999 if offload else 0) if options.n_gpu_layers is None else options.n_gpu_layers
        if options.rpc:
            _chosen, mparams.devices = device_list(offload)  # `_chosen` keeps the array alive through the load
        self.kernels = extra_buffer_types(self.path)
        mparams.use_extra_bufts = self.kernels.on
        if self.kernels.on and not self.kernels.amx:
            drop_amx_buffer_type()
        self.mapped = not (self.kernels.on and mparams.n_gpu_layers == 0 and _room_for_a_copy(self.path))
        mparams.load_mode = lib.LLAMA_LOAD_MODE_AUTO if self.mapped else lib.LLAMA_LOAD_MODE_NONE
        with captured_log() as log:
            model = lib.llama_model_load_from_file(str(self.path).encode(), mparams)
            if not model and not self.mapped:  # reading the file into memory failed: map it instead
                self.mapped, mparams.load_mode = True, lib.LLAMA_LOAD_MODE_AUTO
                model = lib.llama_model_load_from_file(str(self.path).encode(), mparams)
        if not model:
            raise SpecgenError(f"llama.cpp could not load {self.path}; run with SPECGEN_DEBUG=1 to see why")
        self._stack.callback(lib.llama_model_free, model)
        self.layers = layers_by_device(log, offload + devices())
        threads = options.n_threads or default_threads()
        cparams = lib.llama_context_default_params()
        cparams.n_ctx = options.n_ctx
        cparams.n_batch = cparams.n_ubatch = options.n_batch
        cparams.n_threads = cparams.n_threads_batch = threads
        cparams.no_perf = True
        ctx = lib.llama_init_from_model(model, cparams)
        if not ctx:
            raise SpecgenError(f"llama.cpp could not create a context for {self.path}; try a smaller --ctx")
        self._stack.callback(lib.llama_free, ctx)
        batch = lib.llama_batch_init(options.n_batch, 0, 1)
        self._stack.callback(lib.llama_batch_free, batch)
        for i in range(options.n_batch):
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
        self._lib, self._model, self._ctx, self._batch = lib, model, ctx, batch
        self._vocab = lib.llama_model_get_vocab(model)
        self._memory = lib.llama_get_memory(ctx)
        self.n_vocab = lib.llama_vocab_n_tokens(self._vocab)
        self.n_ctx = lib.llama_n_ctx(ctx)
        self.n_batch = lib.llama_n_batch(ctx)  # llama.cpp holds a batch to the context asked for (--ctx 64: 64)
        self.bos = lib.llama_vocab_bos(self._vocab)
        self.add_bos = bool(lib.llama_vocab_get_add_bos(self._vocab))
        self.fim = FimTokens(
            *(
                self._special(getattr(lib, f"llama_vocab_fim_{name}"))
                for name in ("pre", "suf", "mid", "pad", "rep", "sep")
            )
        )
        self.threads = threads
        stat = self.path.stat()
        self.identity = "|".join(
            map(
                str,
                (
                    self.path.resolve(),
                    stat.st_size,
                    stat.st_mtime_ns,
                    mparams.n_gpu_layers,
                    mparams.use_extra_bufts,
                    options.n_batch,
                    lib.__version__,
                    *options.rpc,
                ),
            )
        )
        self._piece_buf = ctypes.create_string_buffer(256)
        self._newline = self.tokenize("\n", False, False)  # what `continuation` puts before its text
        self._eos = lib.llama_vocab_eos(self._vocab)
        self._add_eos = bool(lib.llama_vocab_get_add_eos(self._vocab))
        self._controls: list[Control] | None = None

    def _special(self, lookup: Callable[[Any], int]) -> int | None:
        token = lookup(self._vocab)
        return token if 0 <= token < self.n_vocab else None

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- decoding ---------------------------------------------------------------------------

    def forward(self, tokens: list[int], all_logits: bool) -> np.ndarray:
        """Decode tokens; return logits rows (all, or only the last) as a view, valid until the
        next decode of this model. More tokens than a batch holds (a verify pass under a small
        --ctx) are decoded a batch at a time, and their rows returned as a copy."""
        self._check_room(len(tokens))
        if len(tokens) > self.n_batch:
            head = self.forward(tokens[: self.n_batch], all_logits)
            head = head.copy() if all_logits else head[:0]
            return np.concatenate([head, self.forward(tokens[self.n_batch :], all_logits)])
        rows = len(tokens) if all_logits else 1
        self._fill(tokens, logits_from=len(tokens) - rows)
        self._decode(len(tokens))
        pointer = self._lib.llama_get_logits(self._ctx)
        return np.ctypeslib.as_array(pointer, shape=(rows, self.n_vocab))

    def prefill(self, tokens: list[int]) -> None:
        """Decode tokens in n_batch chunks without computing any logits."""
        self._check_room(len(tokens))
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            self._fill(chunk, logits_from=len(chunk))
            self._decode(len(chunk))

    def sync(self, tokens: list[int]) -> int:
        """Make the KV cache hold exactly `tokens`, reusing the common prefix; return tokens decoded."""
        common = common_prefix(self.tokens, tokens)
        self.truncate(common)
        self.prefill(tokens[common:])
        return len(tokens) - common

    def start(self, prompt: list[int]) -> tuple[np.ndarray, int]:
        """Make the KV cache hold exactly `prompt`, reusing what it shares, with its last token
        decoded in the same batch as the others before it that are not cached (never alone after
        a prefill: a pass of its own would cost a token's time): that token's logits row, and
        how many tokens were decoded. Where the whole prompt is cached and its row was kept when
        its last token entered the cache, that row is given back, so a prompt gives the same row
        however much of it was cached."""
        common = common_prefix(self.tokens, prompt)
        position = len(prompt) - 1
        if common == len(prompt) and self._kept is not None and self._kept[0] == position:
            self.truncate(len(prompt))
            return self._kept[1], 0
        shared = min(common, position)
        self.truncate(shared)
        row = np.array(self.forward(prompt[shared:], all_logits=False)[-1:])
        self._kept = (position, row)
        return row, len(prompt) - shared

    def truncate(self, n_keep: int) -> None:
        """Drop every cached position from n_keep on (also any an interrupted decode left behind)."""
        if not self._lib.llama_memory_seq_rm(self._memory, 0, n_keep, -1):
            raise SpecgenError(
                f"{self.path.name} cannot roll back its cache; speculative decoding needs a transformer model"
            )
        del self.tokens[n_keep:]
        if self._kept is not None and self._kept[0] >= n_keep:
            self._kept = None

    # -- saved states -----------------------------------------------------------------------

    def save_state(self) -> SavedState:
        """A copy of the KV cache and the tokens it holds (serve keeps a few, one per conversation)."""
        size = self._lib.llama_state_seq_get_size(self._ctx, 0)
        data = (ctypes.c_ubyte * size)()
        written = self._lib.llama_state_seq_get_data(self._ctx, data, size, 0)
        return SavedState(tuple(self.tokens), data, written, self._kept)

    def load_state(self, saved: SavedState) -> None:
        """Make the KV cache hold what `save_state` copied."""
        self.truncate(0)
        if saved.nbytes and not self._lib.llama_state_seq_set_data(self._ctx, saved.data, saved.nbytes, 0):
            raise SpecgenError(f"llama.cpp could not restore a saved cache of {self.path.name}")
        self.tokens[:] = saved.tokens
        self._kept = saved.kept

    def _check_room(self, count: int) -> None:
        if len(self.tokens) + count > self.n_ctx:
            raise ContextFull(
                f"{len(self.tokens) + count} tokens do not fit in the {self.n_ctx}-token context; "
                "shorten the prompt or raise --ctx"
            )

    def _fill(self, tokens: list[int], logits_from: int) -> None:
        """Put tokens in the batch; rows from index logits_from on get logits."""
        batch, start = self._batch, len(self.tokens)
        for i, token in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = start + i
            batch.logits[i] = i >= logits_from
        batch.n_tokens = len(tokens)

    def _decode(self, count: int) -> None:
        status = self._lib.llama_decode(self._ctx, self._batch)
        if status != 0:
            raise SpecgenError(f"llama_decode failed with status {status} on {self.path.name}")
        self.tokens.extend(self._batch.token[:count])

    # -- vocabulary -------------------------------------------------------------------------

    def tokenize(self, text: str, add_special: bool, parse_special: bool) -> list[int]:
        return self._tokenize(text.encode("utf-8"), add_special, parse_special)

    def _tokenize(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        size = len(data) + 16
        while True:
            buf = (self._lib.llama_token * size)()
            count = self._lib.llama_tokenize(self._vocab, data, len(data), buf, size, add_special, parse_special)
            if count >= 0:
                return list(buf[:count])
            size = -count

    def continuation(self, text: str) -> list[int]:
        """Tokens of `text` as it continues earlier text: without the space a SentencePiece
        vocabulary puts before text of its own. A newline is put before it and its tokens
        dropped, where they stay tokens of their own (else the text is tokenized alone)."""
        newline = self._newline
        tokens = self.tokenize("\n" + text, False, False)
        return tokens[len(newline) :] if tokens[: len(newline)] == newline else self.tokenize(text, False, False)

    def piece(self, token: int) -> bytes:
        """The bytes a token stands for (special tokens render as nothing)."""
        buf = self._piece_buf
        count = self._lib.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, False)
        if count < 0:
            buf = ctypes.create_string_buffer(-count)
            count = self._lib.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, False)
        return buf.raw[:count]

    @property
    def vocab_handle(self) -> Any:
        """llama.cpp's vocabulary of this model, for a grammar sampler (llama.grammar)."""
        return self._vocab

    def is_eog(self, token: int) -> bool:
        return bool(self._lib.llama_vocab_is_eog(self._vocab, token))

    def chat_template(self) -> str | None:
        raw = self._lib.llama_model_chat_template(self._model, None)
        return raw.decode("utf-8", errors="replace") if raw else None

    def apply_chat_template(self, messages: list[tuple[str, str]]) -> str:
        """Render (role, content) messages with the GGUF's template, ending with the assistant's turn."""
        template = self._lib.llama_model_chat_template(self._model, None)
        if not template:
            raise SpecgenError(f"{self.path.name} has no chat template; use --raw to send the text as is")
        keep = [(role.encode(), content.encode()) for role, content in messages]
        chat = (self._lib.llama_chat_message * len(keep))()
        for slot, (role, content) in zip(chat, keep, strict=True):
            slot.role, slot.content = role, content
        size = 1024 + 2 * sum(len(c) for _, c in keep)
        while True:
            buf = ctypes.create_string_buffer(size)
            count = self._lib.llama_chat_apply_template(template, chat, len(keep), True, buf, size)
            if count < 0:
                raise SpecgenError(f"llama.cpp does not know the chat template of {self.path.name}; use --raw")
            if count <= size:
                return buf.raw[:count].decode("utf-8", errors="replace")
            size = count

    def chat_parts(self, messages: list[tuple[str, str]]) -> Templated:
        """`apply_chat_template`'s rendering, its markup told apart from the messages' texts."""
        check_message_count(len(messages))
        return split(self.apply_chat_template, messages)

    def encode_chat(self, messages: list[tuple[str, str]]) -> list[int]:
        """Tokens of a templated conversation: the template's markup with its control tokens, each
        message's text as plain text; a BOS written by the template is not doubled."""
        return self.encode_templated(self.chat_parts(messages))

    def encode_templated(self, templated: Templated) -> list[int]:
        """Tokens of what a chat template wrote: control tokens where its markup writes them, every
        text as text (markup.encode); a BOS written by the template is not doubled."""
        return self.encode_parts(templated).tokens

    def encode_parts(self, templated: Templated, whole: bool = True) -> Encoded:
        """`encode_templated`, with where in the text each run of tokens ends; `whole`: a prompt
        from its start (a BOS and EOS where llama.cpp adds them), else text that continues one."""
        encoded = encode(templated, self.controls(), self._plain)
        head = [self.bos] if whole and self.add_bos and self.bos >= 0 else []
        if head and encoded.tokens[:1] == head:  # the template wrote the BOS itself
            head = []
        tail = [self._eos] if whole and self._add_eos and self._eos >= 0 else []
        tokens = [*head, *encoded.tokens, *tail]
        return Encoded(tokens, encoded.ends, [count + len(head) for count in encoded.counts])

    def controls(self) -> list[Control]:
        """The tokens llama.cpp's special-token parsing cuts out of a text, longest first."""
        if self._controls is None:
            lib, found = self._lib, []
            for token in range(self.n_vocab):
                attr = lib.llama_vocab_get_attr(self._vocab, token)
                if attr & (lib.LLAMA_TOKEN_ATTR_CONTROL | lib.LLAMA_TOKEN_ATTR_UNKNOWN):
                    text = lib.llama_vocab_get_text(self._vocab, token) or b""
                    if text:
                        found.append(
                            Control(
                                text,
                                token,
                                bool(attr & lib.LLAMA_TOKEN_ATTR_LSTRIP),
                                bool(attr & lib.LLAMA_TOKEN_ATTR_RSTRIP),
                            )
                        )
            self._controls = sorted(found, key=lambda control: -len(control.text))
        return self._controls

    def _plain(self, data: bytes) -> list[int]:
        """Tokens of UTF-8 bytes as plain text (no BOS; special tokens' texts read as text)."""
        return self._tokenize(data, add_special=False, parse_special=False)
