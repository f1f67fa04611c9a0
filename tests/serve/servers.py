"""The `specgen serve` process and HTTP helpers that the serve test modules share (moved out of
test_serve.py so that other modules import them from a module that is not itself a test)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import openai
from costfiles import plant_pinned_costs

from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.events import Summary
from specgen.decoding.loop import GenerationConfig, generate

SPECGEN = [sys.executable, "-m", "specgen"]
KEY = "test-key-123"
OTHER_KEY = "another-key-456"


def tiny_pair(target: Path, draft: Path) -> tuple[str, ...]:
    """A server's arguments for a tiny pair with the suite's K (3), context (2048) and threads (1)."""
    return ("--target", str(target), "--draft", str(draft), "-k", "3", "--ctx", "2048", "-t", "1")


class Server:
    """A `specgen serve` process on a free loopback port; its stderr lines are kept as they come."""

    def __init__(self, *args: str, keys: str = "", env: dict[str, str] | None = None):
        env = {**os.environ, "SPECGEN_API_KEY": keys, **(env or {})}
        self.process = subprocess.Popen(
            [*SPECGEN, "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.url = re.search(r"(http://\S+)/v1 ", self.wait_for("serving")).group(1)

    def _read(self) -> None:
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, fragment: str, count: int = 1, timeout: float = 60) -> str:
        """The count-th stderr line holding `fragment`, waiting for it to come."""
        with self._changed:
            found = self._changed.wait_for(
                lambda: len([x for x in self.lines if fragment in x]) >= count or self.process.poll() is not None,
                timeout,
            )
            hits = [x for x in self.lines if fragment in x]
            assert found and len(hits) >= count, f"no {fragment!r} on stderr:\n" + "\n".join(self.lines)
            return hits[count - 1]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=30)


def pinned_costs(folder: Path, *args: str, flat: bool = False) -> dict[str, str]:
    """The environment of a server whose step costs are this machine's (measured by a first start
    of `specgen serve *args`, cached in `folder`) but for the cost of a change of pass size, made
    nothing, and with `flat` the cost of verifying many tokens (`costfiles.plant_pinned_costs`):
    where this is used the copies themselves are under test."""
    env = {"SPECGEN_CACHE_DIR": str(folder)}
    Server(*args, env=env).stop()  # measures this machine's costs and caches them
    plant_pinned_costs(folder, flat)
    return env


def client(server: Server, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0, timeout=60)


def post(server: Server, path: str, key: str | None = KEY, **kwargs) -> httpx.Response:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    return httpx.post(server.url + path, headers=headers, timeout=60, **kwargs)


def reference(target, draft, tokens: list[int], max_tokens: int = 24) -> tuple[str, list[int], Summary]:
    """What the loop itself produces for these prompt tokens: the text, the tokens, the Summary."""
    texts, out = [], []
    for event in generate(target, ModelDrafter(draft), tokens, GenerationConfig(max_tokens, 3)):
        if isinstance(event, Summary):
            return "".join(texts), out, event
        texts.append(event.text)
        out += event.tokens
    raise AssertionError("no summary")
