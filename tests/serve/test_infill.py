"""Fill-in-the-middle in `specgen serve`: llama-server's `/infill` as llama.vim and llama.vscode call
it (raw HTTP, httpx) and `suffix` on `/v1/completions` through the official `openai` client, against
real servers on tiny models that carry FIM tokens; then the prompt's layout and cuts and the
editors' limits on their own. Expected texts come from the loop run in this process on the prompt
laid out here token by token, as llama-server's `format_infill` lays it out."""

from __future__ import annotations

import json
import string

import httpx
import openai
import pytest
from servers import KEY, Server, client, pinned_costs, post, reference, tiny_pair

from specgen.llama.model import FimTokens, LoadOptions, Model
from specgen.serve.infill import EditorLimits, files_tokens, fim_prompt, picked
from specgen.serve.prompts import Prompts
from specgen.serve.wire import ApiError, GenRequest, Infill

PREFIX, SUFFIX = "def area(r):\n    a =", "\n    return a\n"
FILES = (("util.py", "def square(x):\n    return x * x\n"), ("notes.txt", "the print of self"))
# the greedy reply to this gap has a line break, then a line that starts at column 0
BROKEN_PREFIX, BROKEN_SUFFIX = "print in:\n    ", "\n    return x\n"
# llama.vim's FIM request (autoload/llama.vim), with its own response_fields
LLAMA_VIM = {
    "id_slot": 0,
    "n_predict": 24,
    "stop": [],
    "n_indent": 0,
    "top_k": 40,
    "top_p": 0.90,
    "samplers": ["top_k", "top_p", "infill"],
    "stream": False,
    "cache_prompt": True,
    "t_max_prompt_ms": 500,
    "t_max_predict_ms": 1000,
    "response_fields": [
        "content",
        "timings/prompt_n",
        "timings/prompt_ms",
        "timings/prompt_per_token_ms",
        "timings/prompt_per_second",
        "timings/predicted_n",
        "timings/predicted_ms",
        "timings/predicted_per_token_ms",
        "timings/predicted_per_second",
        "truncated",
        "tokens_cached",
    ],
}
# llama.vscode's (src/llama-server.ts): three completions asked for, chunks stamped with a time, and
# the name of the chat model it is set up for (its default ai_model)
LLAMA_VSCODE = {
    "id_slot": 0,
    "n_predict": 24,
    "n_cmpl": 3,
    "model": "google/gemini-2.5-flash",
    "top_k": 40,
    "top_p": 0.99,
    "stream": False,
    "samplers": ["top_k", "top_p", "infill"],
    "cache_prompt": True,
    "t_max_prompt_ms": 500,
    "t_max_predict_ms": 2500,
}


@pytest.fixture(scope="module")
def fim_server(tiny_models):
    running = Server(
        *tiny_pair(tiny_models["target_fim"], tiny_models["draft_fim"]),
        "-n",
        "24",
        "--api-key",
        KEY,
    )
    yield running
    running.stop()


def laid_out(model: Model, prefix: str, suffix: str, files=()) -> list[int]:
    """`format_infill`'s layout, token by token: [BOS] <repo>myproject\\n (<sep>name\\n text)...
    <sep>filename\\n <pre> prefix <suf> suffix <mid>, the files' part only with files."""
    fim = model.fim

    def tokens(text: str) -> list[int]:
        return model.tokenize(text, add_special=False, parse_special=False)

    out = [model.bos]
    if files:
        out += [fim.rep, *tokens("myproject\n")]
        for name, text in files:
            out += [fim.sep, *tokens(name + "\n"), *tokens(text)]
        out += [fim.sep, *tokens("filename\n")]
    return [*out, fim.pre, *tokens(prefix), fim.suf, *tokens(suffix), fim.mid]


def infill(server: Server, **body) -> dict:
    reply = post(server, "/infill", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()


def streamed(server: Server, **body) -> list[dict]:
    """The events of a streamed /infill, each parsed; the raw lines must all be events."""
    with (
        httpx.Client(timeout=60) as http,
        http.stream(
            "POST", server.url + "/infill", json={**body, "stream": True}, headers={"Authorization": f"Bearer {KEY}"}
        ) as response,
    ):
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] != "data: [DONE]"
    return [json.loads(line[6:]) for line in lines]


# -- /infill -------------------------------------------------------------------------------------


def test_infill_fills_the_gap_with_the_targets_own_text_in_llama_servers_shape(fim_server, fim_target, fim_draft):
    files = [{"filename": name, "text": text} for name, text in FILES]
    reply = infill(fim_server, input_prefix=PREFIX, input_suffix=SUFFIX, input_extra=files, n_predict=24)
    prompt = laid_out(fim_target, PREFIX, SUFFIX, FILES)
    text, tokens, summary = reference(fim_target, fim_draft, prompt, 24)
    assert reply["content"] == text and text
    assert reply["tokens_evaluated"] == len(prompt) and reply["tokens_predicted"] == len(tokens)
    assert reply["stop"] is True and reply["stop_type"] == ("eos" if summary.stop_reason == "eog" else "limit")
    assert reply["truncated"] is False and reply["has_new_line"] == ("\n" in text)
    timings = reply["timings"]
    assert timings["predicted_n"] == len(tokens) and timings["cache_n"] + timings["prompt_n"] == len(prompt)
    assert timings["prompt_ms"] > 0 and timings["predicted_per_second"] > 0 and timings["draft_n"] >= 1
    assert reply["generation_settings"]["n_predict"] == 24 and reply["model"] == "tiny-target_fim"
    first = reply["specgen"]["first_token_s"]
    assert 0 < first <= reply["specgen"]["prefill_s"] + reply["specgen"]["decode_s"] + 0.05


def test_a_streamed_infill_sends_pieces_then_the_final_body_without_done(fim_server):
    whole = infill(fim_server, input_prefix=PREFIX, input_suffix=SUFFIX, n_predict=16)
    events = streamed(fim_server, input_prefix=PREFIX, input_suffix=SUFFIX, n_predict=16)
    *pieces, last = events
    assert pieces and all(piece["stop"] is False and set(piece) >= {"content", "index"} for piece in pieces)
    assert "".join(piece["content"] for piece in pieces) == whole["content"]
    assert last["stop"] is True and last["content"] == "" and last["tokens_predicted"] == whole["tokens_predicted"]
    assert last["has_new_line"] == ("\n" in whole["content"]) and last["specgen"]["first_token_s"] > 0


def test_llama_vims_request_gets_exactly_the_fields_it_names(fim_server, fim_target, fim_draft):
    body = {
        **LLAMA_VIM,
        "input_prefix": PREFIX[:-3],
        "prompt": "a =",
        "input_suffix": SUFFIX,
        "input_extra": [{"text": text, "time": 1764000000.5, "filename": name} for name, text in FILES],
    }
    reply = infill(fim_server, **body)
    assert set(reply) == set(LLAMA_VIM["response_fields"])
    prompt = laid_out(fim_target, PREFIX, SUFFIX, FILES)  # the text at the cursor continues the prefix
    assert reply["content"] == reference(fim_target, fim_draft, prompt, 24)[0]
    assert reply["timings/predicted_n"] > 0 and reply["truncated"] is False


def test_llama_vscodes_request_is_served_one_completion(fim_server):
    chunks = [{"text": text, "time": 1764000000123, "filename": name} for name, text in FILES]
    reply = infill(
        fim_server, **LLAMA_VSCODE, input_prefix=PREFIX, input_suffix=SUFFIX, input_extra=chunks, prompt="", n_indent=4
    )
    assert isinstance(reply, dict) and reply["content"] and reply["generation_settings"]["n_indent"] == 4


def test_an_editors_warm_up_request_fills_the_cache_the_next_one_reuses(fim_server, fim_target):
    """llama.vim sends the files alone with n_predict 0 whenever they change: nothing is generated,
    and the next completion finds everything up to its prefix cached (files no other test sends)."""
    opened = (("warm.py", "import os\n"), *FILES)
    files = [{"filename": name, "text": text} for name, text in opened]
    warm = infill(
        fim_server,
        input_prefix="",
        input_suffix="",
        prompt="",
        input_extra=files,
        n_predict=0,
        samplers=[],
        cache_prompt=True,
        t_max_prompt_ms=1,
        t_max_predict_ms=1,
        response_fields=[""],
    )
    assert warm == {}
    warm = infill(fim_server, input_prefix="", input_suffix="", input_extra=files, n_predict=0)
    assert warm["content"] == "" and warm["tokens_predicted"] == 0 and warm["specgen"]["first_token_s"] is None
    completion = infill(fim_server, input_prefix=PREFIX, input_suffix=SUFFIX, input_extra=files, n_predict=4)
    files_part = laid_out(fim_target, "", "", opened)[:-2]  # [BOS] the files, <pre>
    assert completion["timings"]["cache_n"] == len(files_part)


def test_n_indent_ends_the_reply_before_a_line_indented_less(fim_server, fim_target, fim_draft):
    text = reference(fim_target, fim_draft, laid_out(fim_target, BROKEN_PREFIX, BROKEN_SUFFIX), 40)[0]
    line_end = text.index("\n")
    assert text[line_end + 1] not in " \t\n", "the construction: the second line starts at column 0"
    for stream in (False, True):
        body = {"input_prefix": BROKEN_PREFIX, "input_suffix": BROKEN_SUFFIX, "n_predict": 40, "n_indent": 1}
        if stream:
            *pieces, reply = streamed(fim_server, **body)
            content = "".join(piece["content"] for piece in pieces)
        else:
            reply = infill(fim_server, **body)
            content = reply["content"]
        assert content == text[: line_end + 1]
        assert reply["stop_type"] == "limit" and reply["specgen"]["stop_reason"] == "indent"
    unlimited = infill(fim_server, input_prefix=BROKEN_PREFIX, input_suffix=BROKEN_SUFFIX, n_predict=40)
    assert unlimited["content"] == text, "n_indent 0 (the default) limits nothing"


def test_t_max_predict_ms_ends_the_reply_at_a_line_end_past_the_time(fim_server, fim_target, fim_draft):
    """The first line break comes a dozen tokens in, past 1 ms: the reply ends right after it."""
    text = reference(fim_target, fim_draft, laid_out(fim_target, BROKEN_PREFIX, BROKEN_SUFFIX), 40)[0]
    reply = infill(fim_server, input_prefix=BROKEN_PREFIX, input_suffix=BROKEN_SUFFIX, n_predict=40, t_max_predict_ms=1)
    assert reply["content"] == text[: text.index("\n") + 1] and reply["specgen"]["stop_reason"] == "time limit"


def test_a_stop_string_ends_the_reply_and_is_named(fim_server, fim_target, fim_draft):
    text = reference(fim_target, fim_draft, laid_out(fim_target, BROKEN_PREFIX, BROKEN_SUFFIX), 40)[0]
    assert "for" in text
    reply = infill(fim_server, input_prefix=BROKEN_PREFIX, input_suffix=BROKEN_SUFFIX, n_predict=40, stop=["for"])
    assert reply["content"] == text[: text.index("for")]
    assert (reply["stop_type"], reply["stopping_word"]) == ("word", "for")


def test_an_infill_too_long_for_the_context_is_cut_as_llama_server_cuts_it(fim_server, fim_target, fim_draft):
    """--ctx 2048 takes 2047 prompt tokens; room for the server's replies (-n 24) is kept: 2023, of
    which the suffix (short) is whole and the prefix keeps its end."""
    prefix = "".join(f"word{i} " for i in range(1500))
    reply = infill(fim_server, input_prefix=prefix, input_suffix=SUFFIX, n_predict=16)
    whole = fim_target.tokenize(prefix, add_special=False, parse_special=False)
    suffix = fim_target.tokenize(SUFFIX, add_special=False, parse_special=False)
    fim, kept = fim_target.fim, 2023 - 4 - len(suffix)
    expected = [fim_target.bos, fim.pre, *whole[-kept:], fim.suf, *suffix, fim.mid]
    assert len(whole) > 2047 and reply["truncated"] is True and reply["tokens_evaluated"] == 2023
    assert reply["content"] == reference(fim_target, fim_draft, expected, 16)[0]


def test_the_access_log_has_the_infill_line_with_its_first_token_time(fim_server):
    before = len([line for line in fim_server.lines if "POST /infill 200" in line])
    infill(fim_server, input_prefix=PREFIX, input_suffix=SUFFIX, n_predict=4)
    line = fim_server.wait_for("POST /infill 200", before + 1)
    assert "whole: prompt" in line and "first token 0." in line


# -- suffix on /v1/completions -------------------------------------------------------------------


def test_a_completion_with_a_suffix_fills_the_gap(fim_server, fim_target, fim_draft):
    api = client(fim_server)
    reply = api.completions.create(model="tiny-target_fim", prompt=PREFIX, suffix=SUFFIX, max_tokens=20)
    prompt = laid_out(fim_target, PREFIX, SUFFIX)
    text, tokens, _ = reference(fim_target, fim_draft, prompt, 20)
    assert reply.choices[0].text == text and reply.usage.prompt_tokens == len(prompt)
    assert reply.usage.completion_tokens == len(tokens)
    pieces = list(
        api.completions.create(model="tiny-target_fim", prompt=PREFIX, suffix=SUFFIX, max_tokens=20, stream=True)
    )
    assert "".join(piece.choices[0].text for piece in pieces) == text
    plain = api.completions.create(model="tiny-target_fim", prompt=PREFIX, suffix="", max_tokens=20)
    assert plain.usage.prompt_tokens == len(fim_target.tokenize(PREFIX, add_special=True, parse_special=False))


# -- bad requests --------------------------------------------------------------------------------


GAP = {"input_prefix": "a", "input_suffix": "b"}


@pytest.mark.parametrize(
    "body, param",
    [
        ({"input_suffix": "b"}, "input_prefix"),
        ({"input_prefix": "a", "input_suffix": None}, "input_suffix"),
        ({**GAP, "input_extra": "def f(): pass"}, "input_extra"),
        ({**GAP, "input_extra": {"text": "x"}}, "input_extra"),
        ({**GAP, "input_extra": ["x"]}, "input_extra[0]"),
        ({**GAP, "input_extra": [{"filename": "a.py"}]}, "input_extra[0]"),
        ({**GAP, "input_extra": [{"text": "x"}, {"text": 3}]}, "input_extra[1]"),
        ({**GAP, "input_extra": [{"text": "x", "path": "a.py"}]}, "input_extra[0]"),
        ({**GAP, "input_extra": [{"text": "x", "filename": 3}]}, "input_extra[0].filename"),
        ({**GAP, "min_p": 0.05}, "min_p"),
        ({**GAP, "n_predict": "5"}, "n_predict"),
        ({**GAP, "n_predict": -2}, "n_predict"),
        ({**GAP, "stream": "yes"}, "stream"),
        ({**GAP, "temperature": "hot"}, "temperature"),
        ({**GAP, "stop": [1]}, "stop"),
        ({**GAP, "response_fields": [1]}, "response_fields"),
        ({**GAP, "samplers": 3}, "samplers"),
        ({**GAP, "cache_prompt": "yes"}, "cache_prompt"),
        ({**GAP, "n_cmpl": 0}, "n_cmpl"),
        ({**GAP, "n_indent": -1}, "n_indent"),
        ({**GAP, "lora": [{"id": 0, "scale": 0.5}]}, "lora"),
        ({**GAP, "model": 7}, "model"),
    ],
)
def test_a_bad_infill_body_is_a_400_naming_the_field(fim_server, body, param):
    reply = post(fim_server, "/infill", json=body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error" and error["message"]


@pytest.mark.parametrize(
    "body, param",
    [
        ({"input_prefix": "def f\u0000(x)", "input_suffix": ""}, "input_prefix"),
        ({"input_prefix": "", "input_suffix": "\u0000"}, "input_suffix"),
        ({**GAP, "prompt": "x\u0000"}, "prompt"),
        ({**GAP, "input_extra": [{"text": "ok"}, {"text": "a\u0000b"}]}, "input_extra[1].text"),
        ({**GAP, "input_extra": [{"text": "ok", "filename": "a\u0000.py"}]}, "input_extra[0].filename"),
    ],
)
def test_a_nul_in_any_infill_text_is_a_400_naming_it(fim_server, body, param):
    reply = post(fim_server, "/infill", json=body)
    assert reply.status_code == 400 and reply.json()["error"]["param"] == param and "NUL" in reply.text


def test_other_bad_gaps_are_refused_and_the_server_goes_on(fim_server):
    assert post(fim_server, "/infill", content=b"{not json").status_code == 400
    tokens = post(fim_server, "/v1/completions", json={"prompt": [5, 6, 7], "suffix": "x"})
    assert tokens.status_code == 400 and tokens.json()["error"]["param"] == "prompt"
    nul = post(fim_server, "/v1/completions", json={"prompt": "a", "suffix": "b\u0000"})
    assert nul.status_code == 400 and nul.json()["error"]["param"] == "suffix"
    long = post(fim_server, "/v1/completions", json={"prompt": "word " * 3000, "suffix": "x", "max_tokens": 2})
    assert long.status_code == 400 and long.json()["error"]["code"] == "context_length_exceeded"
    assert infill(fim_server, **GAP, n_predict=2)["tokens_predicted"] == 2
    assert "Traceback" not in "\n".join(fim_server.lines)


def test_a_model_without_fim_tokens_says_so(tiny_models):
    plain = Server("--target", str(tiny_models["target"]), "--no-draft", "--ctx", "512", "-t", "1")
    try:
        reply = post(plain, "/infill", key=None, json={**GAP, "n_predict": 4})
        assert reply.status_code == 400 and "no fill-in-the-middle tokens" in reply.json()["error"]["message"]
        api = openai.OpenAI(base_url=plain.url + "/v1", api_key="none", max_retries=0, timeout=60)
        with pytest.raises(openai.BadRequestError, match="no fill-in-the-middle tokens"):
            api.completions.create(model="tiny-target", prompt="def f(", suffix="):\n", max_tokens=4)
        assert api.completions.create(model="tiny-target", prompt="def f(", max_tokens=4).usage.completion_tokens
    finally:
        plain.stop()


# -- the copy drafter reads the files, the prefix and the suffix ---------------------------------


@pytest.fixture(scope="module")
def walk_server(tiny_models, tmp_path_factory):
    """A target whose every token follows from the one before alone, so the gap's greedy text is
    the same whatever the prompt holds; copies only (no draft model, auto); a key per placement,
    so that no request copies from another's reply. Its step costs are made a GPU's (verifying
    many tokens costs what one does): on these CPUs the loss bound rightly holds copies back in a
    reply of 17 tokens, and here the copies themselves are under test."""
    args = ("--target", str(tiny_models["target_fim_context_free"]), "--no-draft", "--ctx", "2048", "-t", "1")
    cache = pinned_costs(tmp_path_factory.mktemp("flat-costs"), *args, flat=True)
    running = Server(*args, keys="k-none,k-files,k-prefix,k-suffix", env=cache)
    yield running
    running.stop()


def walk(server: Server, key: str, **gap) -> dict:
    body = {"input_prefix": PREFIX, "input_suffix": SUFFIX, "n_predict": 17, "temperature": 0, "seed": 3, **gap}
    reply = httpx.post(server.url + "/infill", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_a_gap_that_repeats_nearby_text_drafts_from_it(walk_server):
    """The gap's text once with nothing like it in the prompt, then with it in another file, in the
    prefix, in the suffix: the same text, drafted from where it stands."""
    alone = walk(walk_server, "k-none")
    text = alone["content"]
    assert len(set(text)) == len(text) == 17 and set(text) <= set(string.digits + string.punctuation), (
        "the construction: seventeen different characters, so the reply never repeats itself"
    )
    assert alone["specgen"]["accepted"] == 0 and alone["specgen"]["rounds"] == 17
    placements = {
        "k-files": {"input_extra": [{"filename": "walk.txt", "text": text}]},
        "k-prefix": {"input_prefix": text + "\n" + PREFIX},
        "k-suffix": {"input_suffix": SUFFIX + text + "\n"},
    }
    for key, gap in placements.items():
        copied = walk(walk_server, key, **gap)
        assert copied["content"] == text, key
        assert copied["specgen"]["accepted"] >= 8 and copied["specgen"]["rounds"] <= 9, (key, copied["specgen"])


# -- the prompt and the limits, on their own -----------------------------------------------------


CHARS = FimTokens(pre=1001, suf=1002, mid=1003, pad=1004, rep=1005, sep=1006)


def chars(text: str) -> list[int]:
    """A tokenizer of one token per character, so that every cut can be read off by hand."""
    return [ord(char) for char in text]


def test_the_prompt_puts_files_first_then_prefix_suffix_and_middle():
    assert fim_prompt(CHARS, 1, chars("ab"), chars("cd"), [], 100).tokens == [1, 1001, 97, 98, 1002, 99, 100, 1003]
    assert fim_prompt(CHARS, None, [], [], [], 100).tokens == [1001, 1002, 1003]
    files = files_tokens(CHARS, chars, (("x.py", "XY"), ("y", "")))
    assert files == [
        1005,
        *chars("myproject\n"),
        1006,
        *chars("x.py\nXY"),
        1006,
        *chars("y\n"),
        1006,
        *chars("filename\n"),
    ]
    assert fim_prompt(CHARS, 1, chars("ab"), [], files, 100).tokens == [1, *files, 1001, 97, 98, 1002, 1003]
    assert files_tokens(CHARS, chars, ()) == []
    bare = FimTokens(pre=1001, suf=1002, mid=1003)  # no repository or file tokens: snippet lines between files
    assert files_tokens(bare, chars, (("x.py", "XY"),)) == chars("\n\n--- snippet ---\n\nXY")


def test_a_prompt_over_its_budget_keeps_the_prefixs_end_the_suffixs_start_and_the_files_end():
    """Room for 12 tokens besides the control tokens: the suffix a quarter (3), the prefix the rest;
    with files, half the room is theirs; beyond 4096 they take all but 2048."""
    cut = fim_prompt(CHARS, None, chars("abcdefghij"), chars("0123456789"), [], 3 + 12)
    assert cut.tokens == [1001, *chars("bcdefghij"), 1002, *chars("012"), 1003] and cut.truncated
    short_prefix = fim_prompt(CHARS, None, chars("ab"), chars("0123456789"), [], 3 + 8)
    assert short_prefix.tokens == [1001, *chars("ab"), 1002, *chars("012345"), 1003]
    files = fim_prompt(CHARS, None, chars("abcdefghij"), chars("0123456789"), list(range(500, 520)), 3 + 12)
    assert files.tokens == [*range(514, 520), 1001, *chars("fghij"), 1002, *chars("0"), 1003] and files.truncated
    fits = fim_prompt(CHARS, 1, chars("ab"), chars("cd"), [7, 8], 4 + 6)
    assert fits.tokens == [1, 7, 8, 1001, 97, 98, 1002, 99, 100, 1003] and not fits.truncated
    both = fim_prompt(CHARS, None, list(range(3000)), [], list(range(10000, 19000)), 3 + 8000)
    assert both.tokens[:2] == [19000 - 5952, 19000 - 5951] and len(both.tokens) == 8003
    assert both.tokens[5952:5954] == [1001, 3000 - 2048]


def test_the_files_share_depends_on_the_room_alone_so_the_next_request_reuses_its_cache():
    """An editor's next request, its prefix grown or shrunk, begins with the same tokens."""
    files = list(range(10000, 19000))
    short = fim_prompt(CHARS, None, chars("ab"), chars("cd"), files, 3 + 8000)
    long = fim_prompt(CHARS, None, list(range(3000)), chars("cd"), files, 3 + 8000)
    assert short.tokens[:5952] == long.tokens[:5952] == files[-5952:]
    assert short.tokens[5952:] == [1001, 97, 98, 1002, 99, 100, 1003]


def test_the_server_lays_out_the_prompt_from_the_models_own_tokens(fim_target, tiny_models):
    request = GenRequest("infill", infill=Infill(PREFIX, SUFFIX, FILES))
    assert Prompts(fim_target, 2047).encode(request, 24).tokens == laid_out(fim_target, PREFIX, SUFFIX, FILES)
    with Model(tiny_models["target"], LoadOptions(n_ctx=256, n_threads=1)) as plain:
        with pytest.raises(ApiError, match="no fill-in-the-middle tokens") as error:
            Prompts(plain, 255).encode(request, 24)
        assert error.value.status == 400 and error.value.param == "input_suffix"


def test_n_indent_cuts_before_the_first_later_line_indented_less():
    limits = EditorLimits(4, 0, 0.0)
    assert limits.feed("x = 1\n    y", None) == ("x = 1\n    y", None)
    assert limits.feed(" = 2\n  ", None) == (" = 2\n  ", None), "spaces alone decide nothing yet"
    assert limits.feed("z", None) == ("", "indent")
    assert EditorLimits(4, 0, 0.0).feed("  first line at any depth", None)[1] is None
    assert EditorLimits(1, 0, 0.0).feed("a\n\nb", None) == ("a\n", "indent"), "an empty line ends it too"
    assert EditorLimits(2, 0, 0.0).feed("a\n\t\tb\n c", None) == ("a\n\t\tb\n ", "indent")
    assert EditorLimits(0, 0, 0.0).feed("a\nb", None) == ("a\nb", None)


def test_t_max_predict_ms_ends_at_the_first_line_break_past_the_deadline():
    limits = EditorLimits(0, 100, start=10.0)
    assert limits.feed("ab\ncd", now=10.05) == ("ab\ncd", None), "before the deadline"
    assert limits.feed("ef", now=10.2) == ("ef", None), "past it, but no line break yet"
    assert limits.feed("gh\nij\n", now=10.3) == ("gh\n", "time limit")
    assert limits.feed("last\n", now=None) == ("last\n", None), "the reply's last piece is never timed"


def test_response_fields_pick_values_by_path():
    body = {"content": "x", "timings": {"prompt_n": 3}, "stop": True}
    assert picked(body, ("content", "timings/prompt_n", "timings/nothing", "stop/deeper", "")) == {
        "content": "x",
        "timings/prompt_n": 3,
    }
