"""Each API key is a separate user of `specgen serve`: nothing one key's requests leave behind (KV
caches, the copy memory) serves or is reported to another key. A real server on loopback with
three keys (given as SPECGEN_API_KEY, comma-separated), raw HTTP requests, and token counts taken
from the tokenizer in this process."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx
import pytest
from servers import SPECGEN, Server, pinned_costs

KEYS = ("key-one", "key-two", "key-three", "key-four")
OPENING = "shared system text with a long common prefix " * 12


@pytest.fixture(scope="module")
def users_server(tiny_models, tmp_path_factory):
    """Auto drafting (the default), so the copy memory is in play, and keys from the environment;
    a change of pass size costs nothing (`pinned_costs`)."""
    args = (
        "--target",
        str(tiny_models["target"]),
        "--draft",
        str(tiny_models["draft"]),
        "--ctx",
        "2048",
        "-t",
        "1",
        "-n",
        "8",
    )
    running = Server(*args, keys=" , ".join(KEYS), env=pinned_costs(tmp_path_factory.mktemp("costs"), *args))
    yield running
    running.stop()


def complete(server: Server, key: str, prompt: str, **fields) -> dict:
    reply = httpx.post(
        f"{server.url}/v1/completions",
        json={"prompt": prompt, "max_tokens": 8, **fields},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def shared(a: list[int], b: list[int]) -> int:
    """How many leading tokens two token lists have in common."""
    count = 0
    while count < min(len(a), len(b)) and a[count] == b[count]:
        count += 1
    return count


def test_every_key_is_served_and_others_are_refused(users_server):
    """(GET /v1/models, so that the other tests find every key without a history.)"""
    for key in KEYS:
        reply = httpx.get(f"{users_server.url}/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert reply.status_code == 200 and reply.json()["data"][0]["id"] == "tiny-target"
    for key in ("key-one,key-two", "KEY-ONE", "key"):
        reply = httpx.post(
            f"{users_server.url}/v1/completions",
            json={"prompt": "a", "max_tokens": 1},
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        assert reply.status_code == 401 and reply.json()["error"]["code"] == "invalid_api_key"


def test_a_prefix_sent_with_one_key_is_never_reused_for_another(users_server, target_model):
    """K2's prompt shares a long opening with K1's earlier one: nothing is reused for K2. Each key
    then finds its own earlier prompt's prefix, and only that."""
    first, second = OPENING + "client one asks", OPENING + "client two asks"
    tokens_first = target_model.tokenize(first, add_special=True, parse_special=False)
    tokens_second = target_model.tokenize(second, add_special=True, parse_special=False)
    common = shared(tokens_first, tokens_second)
    assert common > 100 and common < min(len(tokens_first), len(tokens_second))

    complete(users_server, KEYS[0], first)
    other = complete(users_server, KEYS[1], second)
    assert other["usage"]["prompt_tokens"] == len(tokens_second)
    assert other["specgen"]["prefilled_tokens"] == len(tokens_second), "K1's prefix reused for K2"
    assert other["usage"]["prompt_tokens_details"]["cached_tokens"] == 0

    own = complete(users_server, KEYS[0], second)  # K1 again: its own first prompt shares the opening
    assert own["specgen"]["prefilled_tokens"] == len(tokens_second) - common
    back = complete(users_server, KEYS[1], first)  # K2 again: its own second prompt shares the opening
    assert back["specgen"]["prefilled_tokens"] == len(tokens_first) - common
    assert back["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_a_reply_served_to_one_key_is_not_copied_for_another(users_server):
    """The same seeded greedy request: sent again with the same key it copies from the reply that
    key was served (fewer rounds); sent with another key it drafts exactly as it did the first time."""
    request = {"prompt": "zq the print of self wx", "max_tokens": 40, "temperature": 0, "seed": 5}
    first = complete(users_server, KEYS[2], **request)["specgen"]
    again = complete(users_server, KEYS[2], **request)["specgen"]
    other = complete(users_server, KEYS[3], **request)["specgen"]
    assert again["rounds"] < first["rounds"], "the key's own memory is used"
    assert (other["rounds"], other["accepted"], other["drafted"]) == (
        first["rounds"],
        first["accepted"],
        first["drafted"],
    )


def test_one_key_cannot_fill_the_queue_the_keys_share(tiny_models):
    """A queue of 4 and two keys: one key may hold 3 of the 5 places (the running request and two
    waiting); its third waiting request is refused, while the other key's is queued."""
    keys = ("key-a", "key-b")
    running = Server(
        "--target",
        str(tiny_models["target_endless"]),
        "--no-draft",
        "-k",
        "0",
        "--ctx",
        "32768",
        "-t",
        "1",
        "--queue",
        "4",
        "-n",
        "100000",
        keys=",".join(keys),
    )
    held = []
    try:

        def send(key: str) -> None:  # a request left open on a raw socket: hung up by closing it
            body = b'{"prompt": "x = 1", "max_tokens": 100000, "stream": true}'
            sock = socket.create_connection(
                (running.url.split("//")[1].rsplit(":", 1)[0], int(running.url.rsplit(":", 1)[1])), timeout=10
            )
            sock.sendall(
                b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer "
                + key.encode()
                + b"\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            held.append(sock)

        def health() -> dict:
            return httpx.get(f"{running.url}/health", headers={"Authorization": "Bearer key-b"}, timeout=10).json()

        def settle(waiting: int) -> None:
            deadline = time.time() + 20
            while (health()["waiting"] < waiting or not health()["busy"]) and time.time() < deadline:
                time.sleep(0.05)
            assert health()["waiting"] == waiting, "\n".join(running.lines)

        send("key-a")
        settle(0)  # it runs
        for waiting in (1, 2):
            send("key-a")
            settle(waiting)
        refused = httpx.post(
            f"{running.url}/v1/completions",
            json={"prompt": "a", "max_tokens": 2},
            headers={"Authorization": "Bearer key-a"},
            timeout=10,
        )
        assert refused.status_code == 503 and "share of the queue" in refused.json()["error"]["message"]
        assert int(refused.headers["Retry-After"]) >= 1
        send("key-b")
        settle(3)  # the other key's request waits in the place key-a could not take
    finally:
        for sock in held:
            sock.close()
        running.stop()


def test_keys_from_a_file_are_each_a_user_and_the_command_line_key_gets_a_note(tiny_models, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("# the editor\nfile-key-one\n\n  file-key-two  \n")
    running = Server(
        "--target",
        str(tiny_models["target"]),
        "--no-draft",
        "--ctx",
        "256",
        "-t",
        "1",
        "-n",
        "2",
        "--api-key-file",
        str(keys),
        "--api-key",
        "cli-key",
    )
    try:
        for key, status in (("file-key-one", 200), ("file-key-two", 200), ("cli-key", 200), ("# the editor", 401)):
            reply = httpx.get(f"{running.url}/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=10)
            assert reply.status_code == status, key
        assert "SPECGEN_API_KEY or --api-key-file keeps it private" in running.wait_for("--api-key shows the key")
    finally:
        running.stop()


@pytest.mark.parametrize("content, error", [(None, "cannot read --api-key-file"), ("# none\n\n", "holds no key")])
def test_an_unreadable_or_empty_key_file_is_one_line_of_error(tiny_models, tmp_path, content, error):
    keys = tmp_path / "keys"
    if content is not None:
        keys.write_text(content)
    done = subprocess.run(
        [*SPECGEN, "serve", "--target", str(tiny_models["target"]), "--api-key-file", str(keys)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and error in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
