"""A loopback stand-in for the part of the Hugging Face hub that hf_hub_download and get_paths_info speak.

The real huggingface_hub client talks to it through HF_ENDPOINT. Like the hub, the `resolve`
endpoint answers HEAD and GET for a file stored with LFS with the commit (X-Repo-Commit), the
file's SHA-256 and size (X-Linked-Etag, X-Linked-Size) and a 302 redirect to a separate "CDN"
origin, which serves the bytes with Range support (open `bytes=N-` and closed `bytes=N-M`
ranges, or none at all with `ranges` off, counting what each file served). A file kept in git
itself (`in_git`) is served by `resolve` directly, with its git blob id as ETag. `paths-info`
(POST /api/models/{repo}/paths-info/{revision}, form field `paths`) lists each asked-for file
as the hub does: type, git oid, size, path, and for LFS files `lfs` {oid: the SHA-256, size,
pointerSize}. `claimed` makes the hub report another SHA-256 for a file than its bytes have (a
damaged upload or transfer). Errors carry the hub's X-Error-Code header: RepoNotFound,
RevisionNotFound and EntryNotFound (404), GatedRepo (401 without the right token). Every
request is recorded, and a file's next transfers can be cut half-way, to exercise resuming.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<file>.+)$")
CDN = re.compile(r"^/cdn/(?P<sha>[0-9a-f]{64})$")
PATHS_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/paths-info/(?P<revision>[^/]+)$")


@dataclass
class Request:
    origin: str  # "hub" or "cdn"
    method: str
    path: str
    headers: dict  # names in lower case


@dataclass
class HubState:
    files: dict = field(default_factory=dict)  # (repo, filename) -> bytes
    gated: dict = field(default_factory=dict)  # repo -> token that opens it
    in_git: set = field(default_factory=set)  # (repo, filename) kept in git, not LFS: no SHA-256 on the hub
    claimed: dict = field(default_factory=dict)  # (repo, filename) -> the SHA-256 the hub reports instead
    cuts: dict = field(default_factory=dict)  # sha256 of a blob -> how many more downloads to cut mid-way
    served: dict = field(default_factory=dict)  # sha256 of a blob -> bytes of it sent so far
    ranges: bool = True  # honour Range headers (a CDN that does not sends the whole file)
    paths_info_down: bool = False  # paths-info answers 403 (not retried): the hub's SHA-256 cannot be had
    requests: list = field(default_factory=list)
    cdn_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def blob(self, sha: str) -> bytes | None:
        return next((data for data in self.files.values() if sha256(data) == sha), None)

    def reported_sha(self, repo: str, name: str) -> str:
        """The SHA-256 the hub gives for an LFS file: its bytes' own, unless `claimed` says otherwise."""
        return self.claimed.get((repo, name)) or sha256(self.files[(repo, name)])

    def path_info(self, repo: str, name: str) -> dict:
        """One entry of a paths-info answer, in the hub's JSON shape."""
        data = self.files[(repo, name)]
        if (repo, name) in self.in_git:
            return {"type": "file", "oid": git_oid(data), "size": len(data), "path": name}
        pointer = lfs_pointer(self.reported_sha(repo, name), len(data))
        return {
            "type": "file",
            "oid": git_oid(pointer),
            "size": len(data),
            "path": name,
            "lfs": {"oid": self.reported_sha(repo, name), "size": len(data), "pointerSize": len(pointer)},
        }


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def commit_of(repo: str) -> str:
    return hashlib.sha1(repo.encode()).hexdigest()


def git_oid(data: bytes) -> str:
    """The git blob id of `data`, as the hub reports it for files kept in git (and LFS pointers)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha: str, size: int) -> bytes:
    """The pointer file git keeps for an LFS object."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {size}\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: HubState
    origin: str

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def do_GET(self) -> None:
        self.answer(body=True)

    def do_POST(self) -> None:
        self.answer(body=True)

    def answer(self, body: bool) -> None:
        with self.state.lock:
            headers = {key.lower(): value for key, value in self.headers.items()}
            self.state.requests.append(Request(self.origin, self.command, self.path, headers))
        if self.origin == "cdn":
            self.cdn(body)
        elif self.command == "POST":
            self.paths_info()
        else:
            self.resolve(body)

    def repo_error(self, repo: str | None) -> bool:
        """Answer the hub's error for a repo that is missing or gated to this request; True if answered."""
        if repo not in {known for known, _ in self.state.files}:
            self.error(404, "RepoNotFound", "Repository not found")
            return True
        token = self.state.gated.get(repo)
        if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
            self.error(401, "GatedRepo", f"Access to model {repo} is restricted.", repo)
            return True
        return False

    def resolve(self, body: bool) -> None:
        match = RESOLVE.match(self.path.split("?")[0])
        if self.repo_error(match and match["repo"]):
            return
        repo, name = match["repo"], match["file"]
        data = self.state.files.get((repo, name))
        if data is None:
            return self.error(404, "EntryNotFound", f"{name} does not exist on main", repo)
        if (repo, name) in self.state.in_git:
            return self.serve(data, body, {"X-Repo-Commit": commit_of(repo), "ETag": f'"{git_oid(data)}"'})
        digest = self.state.reported_sha(repo, name)
        self.send_response(302)
        self.send_header("Location", f"{self.state.cdn_url}/cdn/{sha256(data)}")
        self.send_header("X-Repo-Commit", commit_of(repo))
        self.send_header("X-Linked-Etag", f'"{digest}"')
        self.send_header("X-Linked-Size", str(len(data)))
        self.send_header("ETag", f'"{git_oid(lfs_pointer(digest, len(data)))}"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def paths_info(self) -> None:
        if self.state.paths_info_down:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))  # the form, so the connection stays usable
            return self.error(403, "Forbidden", "paths-info is down")
        match = PATHS_INFO.match(self.path.split("?")[0])
        if self.repo_error(match and match["repo"]):
            return
        repo = match["repo"]
        if match["revision"] not in ("main", commit_of(repo)):
            return self.error(404, "RevisionNotFound", f"Invalid rev id: {match['revision']}", repo)
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
        entries = [
            self.state.path_info(repo, name) for name in form.get("paths", []) if (repo, name) in self.state.files
        ]  # the hub leaves out paths it does not have
        payload = json.dumps(entries).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def error(self, status: int, code: str, message: str, repo: str | None = None) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if repo:
            self.send_header("X-Repo-Commit", commit_of(repo))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def cdn(self, body: bool) -> None:
        match = CDN.match(self.path.split("?")[0])
        data = self.state.blob(match["sha"]) if match else None
        if data is None:
            return self.error(404, "NotFound", "no such blob")
        self.serve(data, body, {})

    def serve(self, data: bytes, body: bool, headers: dict) -> None:
        """The bytes of a file, or the range of them asked for, cut half-way while `cuts` says so."""
        sha = sha256(data)
        start, end = _range(self.headers.get("Range"), len(data)) if self.state.ranges else (0, len(data))
        partial = (start, end) != (0, len(data))
        self.send_response(206 if partial else 200)
        for name, value in headers.items():
            self.send_header(name, value)
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if not body:
            return
        if not _closed(self.headers.get("Range")) and self.cut(sha):
            end = start + (end - start) // 2
            self.close_connection = True
        self.send(sha, data[start:end])

    def send(self, sha: str, chunk: bytes) -> None:
        with self.state.lock:
            self.state.served[sha] = self.state.served.get(sha, 0) + len(chunk)
        try:
            self.wfile.write(chunk)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client read what it wanted and left
            self.close_connection = True

    def cut(self, sha: str) -> bool:
        with self.state.lock:
            left = self.state.cuts.get(sha, 0)
            self.state.cuts[sha] = max(left - 1, 0)
        return left > 0


def _closed(header: str | None) -> bool:
    """Whether a Range header asks for `bytes=N-M`: a header read, not a download."""
    return bool(re.fullmatch(r"bytes=\d+-\d+", header or ""))


def _range(header: str | None, size: int) -> tuple[int, int]:
    """The [start, end) of `bytes=N-` or `bytes=N-M` (M inclusive), clipped to the file; all of it without one."""
    found = re.match(r"bytes=(\d+)-(\d*)$", header or "")
    if not found:
        return 0, size
    start = min(int(found.group(1)), size)
    return start, min(int(found.group(2)) + 1, size) if found.group(2) else size


class FakeHub:
    """Two loopback servers (hub and CDN origins) sharing one HubState; stop() shuts both down."""

    def __init__(self):
        self.state, self.stopped = HubState(), False
        self.servers = [self._server("hub"), self._server("cdn")]
        self.url = f"http://127.0.0.1:{self.servers[0].server_address[1]}"
        self.state.cdn_url = f"http://127.0.0.1:{self.servers[1].server_address[1]}"
        self.threads = [
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            for server in self.servers
        ]
        for thread in self.threads:
            thread.start()

    def _server(self, origin: str) -> ThreadingHTTPServer:
        handler = type(f"{origin}Handler", (_Handler,), {"state": self.state, "origin": origin})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        return server

    def add(self, repo: str, filename: str, path: Path) -> bytes:
        data = Path(path).read_bytes()
        self.state.files[(repo, filename)] = data
        return data

    def downloads(self) -> list[Request]:
        """The GET requests for file bytes (the CDN's), in order, but for header reads (closed ranges)."""
        return [
            r
            for r in self.state.requests
            if r.origin == "cdn" and r.method == "GET" and not _closed(r.headers.get("range"))
        ]

    def header_reads(self) -> list[Request]:
        """The GET requests for a closed range of a file's bytes: reading its header."""
        return [
            r
            for r in self.state.requests
            if r.origin == "cdn" and r.method == "GET" and _closed(r.headers.get("range"))
        ]

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        for server in self.servers:
            server.shutdown()
            server.server_close()
        for thread in self.threads:
            thread.join(timeout=5)
