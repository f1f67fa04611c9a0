"""Get a pair's GGUF files from the Hugging Face hub.

The only module that imports huggingface_hub, always inside functions so `specgen --help`
stays instant. Files go to the standard Hugging Face cache, shared with every other tool, and
HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_HUB_OFFLINE and HF_TOKEN are read when a download starts
(not when the library was imported). huggingface_hub resumes a transfer cut mid-file and moves
a file into the cache only once it is complete, so a partial download is never loaded as a
model. Before a pair's files are downloaded, their GGUF headers are read with range requests
(a few megabytes) and the pair check runs on them, so a mismatched pair fails in seconds, not
after gigabytes. After a download the file's SHA-256 is compared with the one the hub gives for
it (its LFS object id, from the hub's paths-info API): a file that differs is removed from the
cache, blob and snapshot link, and the run stops with one line; the verdict is kept
(checksums.py), so each file is hashed once. Each failure becomes one SpecgenError line that
names the problem and the way out.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from specgen.errors import SpecgenError
from specgen.models import checksums
from specgen.models.gguf import (
    GGUFError,
    GGUFInfo,
    HeaderTruncated,
    read_info,
    read_prefix,
)
from specgen.models.paths import hub_cache_dir, models_dir
from specgen.models.registry import ModelFile, Pair
from specgen.models.vocab import check_vocabularies

DEFAULT_ENDPOINT = "https://huggingface.co"
TOKENS_PAGE = "https://huggingface.co/settings/tokens"
HEADER_FIRST = 1 << 20  # bytes of a remote file read first for its header; each further read is 4x larger
HEADER_CAP = 64 << 20  # a header not parsed from this many bytes is refused


class HubError(SpecgenError):
    """A download failed: missing repo or file, no access, no network, or a full disk."""


class MismatchedPair(SpecgenError):
    """The headers on the hub show that the pair's draft cannot speak for its target."""


@dataclass(frozen=True)
class Verification:
    """What is known of a model file's bytes against the SHA-256 the hub gives for it."""

    path: Path
    state: str  # VERIFIED, NOT_VERIFIABLE or NOT_CHECKED
    sha256: str = ""  # the file's SHA-256, when it was verified
    checked_at: float = 0.0  # when it was verified, or found not verifiable
    reason: str = ""  # why it was not checked, and how to check it


VERIFIED = "verified"  # its SHA-256 equals the hub's
NOT_VERIFIABLE = "not verifiable"  # the hub gives no SHA-256 for it: a file kept in git, not LFS
NOT_CHECKED = "not checked"  # not compared (yet): offline, the hub did not answer, or not from the hub


def endpoint() -> str:
    """The hub's address: $HF_ENDPOINT (a mirror, a local server), else huggingface.co."""
    address = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    if not address.startswith(("http://", "https://")):
        raise HubError(
            f"HF_ENDPOINT is {address!r}, not an http(s) address; set it to a hub's address, such as "
            f"{DEFAULT_ENDPOINT}, or unset it"
        )
    return address


def offline_by_environment() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def cached_path(model: ModelFile) -> Path | None:
    """Where `model` lies, complete: in the local models folder under its file name, else in the
    Hugging Face cache; None if it was never downloaded. No network."""
    from huggingface_hub import try_to_load_from_cache

    local = models_dir() / model.file
    if local.is_file():
        return local
    try:
        found = try_to_load_from_cache(model.repo, model.file, cache_dir=hub_cache_dir())
    except Exception as error:  # a repo id the client refuses, an unreadable cache
        raise _explain(error, model, offline=True) from error
    return Path(found) if isinstance(found, str) and os.path.isfile(found) else None


def fetch(model: ModelFile, offline: bool = False) -> Path:
    """The local path of `model`, downloaded first if it is not in the cache (unless offline)."""
    found = cached_path(model)
    if found is not None:
        return found
    offline = offline or offline_by_environment()
    import huggingface_hub

    _quiet_hub()
    try:
        path = huggingface_hub.hf_hub_download(
            model.repo, model.file, cache_dir=hub_cache_dir(), endpoint=endpoint(), local_files_only=offline
        )
    except Exception as error:  # each known failure becomes one line below
        raise _explain(error, model, offline) from error
    check = verify(model, Path(path))
    if check.state == NOT_CHECKED:  # the transfer worked, the hub's SHA-256 could not be had: say so
        print(f"specgen: {model.repo}/{model.file} was downloaded but is not verified: {check.reason}", file=sys.stderr)
    return Path(path)


def verify(model: ModelFile, path: Path, offline: bool = False) -> Verification:
    """Compare `path`, the cached file of `model`, with the SHA-256 the hub gives for it, once: a
    verdict kept from an earlier check holds while the file is unchanged. A file that differs is
    removed from the Hugging Face cache, and HubError says so."""
    known = checksums.recorded(path)
    if known is not None:
        return _verification(path, known)
    commit = _snapshot_commit(model, path)
    if commit is None:
        return Verification(
            path, NOT_CHECKED, reason=f"found in {path.parent}, not downloaded: specgen checks its downloads"
        )
    if offline or offline_by_environment():
        return Verification(path, NOT_CHECKED, reason="offline mode is on; pull again online to check it")
    try:
        expected = lfs_sha256(model, commit)
    except LookupError as error:
        return Verification(path, NOT_CHECKED, reason=str(error))
    except Exception as error:  # noqa: BLE001 - the check is retried on the next pull
        return Verification(path, NOT_CHECKED, reason=str(_explain(error, model, offline=False, reading=True)))
    verdict = _compare(model, path, expected)
    checksums.record(path, verdict)
    return _verification(path, verdict)


def _compare(model: ModelFile, path: Path, expected: str | None) -> checksums.Verdict:
    """Hash the file and compare it with `expected` (None: the hub has no SHA-256 for it, nothing
    to hash); a file that differs is removed from the cache and raises HubError."""
    if expected is None:
        return checksums.Verdict("", False, time.time())
    actual = checksums.file_sha256(path)
    if actual != expected.lower():
        _remove_from_cache(path)
        raise HubError(
            f"the download of {model.repo}/{model.file} is damaged: its SHA-256 is {actual[:16]}..., the hub's "
            f"is {expected[:16]}...; it was removed: run the command again to download it anew (if it fails "
            f"again, tell the repo's owners: {endpoint()}/{model.repo}/discussions)"
        )
    return checksums.Verdict(actual, True, time.time())


def _quiet_hub() -> None:
    """huggingface_hub logs each retry and resume of a failing download as a warning, a dozen
    lines before specgen's one line saying what failed: shown only with SPECGEN_DEBUG=1."""
    if os.environ.get("SPECGEN_DEBUG") != "1":
        from huggingface_hub.utils import logging

        logging.set_verbosity_error()


def _verification(path: Path, verdict: checksums.Verdict) -> Verification:
    return Verification(path, VERIFIED if verdict.verified else NOT_VERIFIABLE, verdict.sha256, verdict.checked_at)


def lfs_sha256(model: ModelFile, commit: str) -> str | None:
    """The SHA-256 the hub gives for `model` at `commit` (its LFS object id); None for a file kept
    in git rather than LFS, which has none. LookupError when the hub does not list the file."""
    from huggingface_hub import HfApi

    entries = HfApi(endpoint=endpoint()).get_paths_info(model.repo, [model.file], revision=commit)
    entry = next((entry for entry in entries if entry.path == model.file), None)
    if entry is None:
        raise LookupError(f"the hub does not list {model.file} at commit {commit[:12]}; pull again later to check it")
    lfs = getattr(entry, "lfs", None)
    return lfs.sha256 if lfs is not None else None


def _snapshot_commit(model: ModelFile, path: Path) -> str | None:
    """The commit of the Hugging Face cache snapshot that `path` lies in; None outside the cache."""
    snapshots = hub_cache_dir() / f"models--{model.repo.replace('/', '--')}" / "snapshots"
    try:
        return path.relative_to(snapshots).parts[0]
    except ValueError:
        return None


def _remove_from_cache(path: Path) -> None:
    """Delete a cached file: its snapshot link, then the blob it points to."""
    blob = path.resolve()
    for item in (path, blob):
        with contextlib.suppress(FileNotFoundError):
            item.unlink()


def fetch_pair(
    pair: Pair, roles: tuple[str, ...] = ("target", "draft"), offline: bool = False, precheck: bool = False
) -> dict[str, Path]:
    """Both files of a pair (or the roles asked for), with a notice on stderr before a download;
    with `precheck` (and both roles), their headers are checked as a pair before any download."""
    models = {role: getattr(pair, role) for role in roles}
    missing = _missing(pair, models.values(), offline)
    if missing and precheck and len(models) == 2:
        check_remote_pair(pair)
    if missing:
        size = sum(model.size_gb for model in missing)
        print(
            f"specgen: pair '{pair.name}' is not downloaded yet; fetching {size:.1f} GB from {endpoint()} "
            f"into {hub_cache_dir()} (once)",
            file=sys.stderr,
        )
    return {role: fetch(model, offline) for role, model in models.items()}


def check_remote_pair(pair: Pair) -> None:
    """Raise MismatchedPair when the pair's headers (cached files', else read from the hub) do not match."""
    target, draft = header(pair.target), header(pair.draft)
    verdict = check_vocabularies(target, draft)
    if not verdict.compatible:
        raise MismatchedPair(
            f"{pair.draft.file} cannot draft for {pair.target.file}: {verdict.reason} (read from their "
            f"headers on the hub; nothing downloaded); fix pair '{pair.name}' in {pair.source or 'models.toml'}"
        )


def pair_headers(pair: Pair, offline: bool = False) -> tuple[GGUFInfo, GGUFInfo]:
    """The target's and the draft's GGUF headers: of the cached files, else read from the hub by
    range requests (a few MB, not the files); offline, a missing file is the offline error."""
    _missing(pair, (pair.target, pair.draft), offline)
    return header(pair.target), header(pair.draft)


def _missing(pair: Pair, models, offline: bool) -> list[ModelFile]:
    """Those of `models` (files of `pair`) not downloaded; none may be while offline."""
    missing = [model for model in models if cached_path(model) is None]
    if missing and (offline or offline_by_environment()):
        raise HubError(f"pair '{pair.name}' is not downloaded and {_offline_why(f'specgen pull {pair.name}')}")
    return missing


def header(model: ModelFile) -> GGUFInfo:
    """The GGUF header of `model`: from the cached file, else from the hub by range requests."""
    found = cached_path(model)
    return read_info(found) if found is not None else remote_header(model)


def remote_header(model: ModelFile) -> GGUFInfo:
    """The header of `model` on the hub, read in growing ranges (1, 4, 16... MB) until it parses."""
    where = f"{model.repo}/{model.file}"
    data, want = b"", HEADER_FIRST
    while True:
        try:
            more, size = _read_range(model, len(data), want)
        except Exception as error:  # each known failure becomes one line
            raise _explain(error, model, offline=False, reading=True) from error
        data += more
        try:
            return read_prefix(data, where, size)
        except HeaderTruncated as error:
            if len(data) >= size or want >= HEADER_CAP:
                raise GGUFError(
                    f"{where} on the hub: no GGUF header in its first {len(data):,} bytes; "
                    "it is damaged or not a model: fix the pair in models.toml"
                ) from error
        want = min(want * 4, HEADER_CAP)


def _read_range(model: ModelFile, start: int, stop: int) -> tuple[bytes, int]:
    """Bytes start..stop-1 of `model` on the hub (fewer at its end) and the file's size, with the
    hub client's session and credentials; a server that ignores Range is cut off at stop."""
    from huggingface_hub import get_session, hf_hub_url
    from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

    url = hf_hub_url(model.repo, model.file, endpoint=endpoint())
    headers = {**build_hf_headers(), "Range": f"bytes={start}-{stop - 1}", "Accept-Encoding": "identity"}
    session = get_session()
    if hasattr(session, "stream"):  # httpx (huggingface_hub 1.0 on)
        with session.stream("GET", url, headers=headers, follow_redirects=True) as response:
            hf_raise_for_status(response)
            return _take(response, response.iter_bytes(), start, stop)
    # requests (huggingface_hub before 1.0), which the installed stubs do not describe
    with session.get(url, headers=headers, stream=True, allow_redirects=True) as response:  # type: ignore[call-arg, attr-defined]
        hf_raise_for_status(response)
        return _take(response, response.iter_content(1 << 16), start, stop)


def _take(response, chunks, start: int, stop: int) -> tuple[bytes, int]:
    """At most stop - start bytes of a ranged answer, and the whole file's size it reports."""
    skip = start if response.status_code == 200 else 0  # the whole file: skip to `start`
    total = response.headers.get("Content-Range", "").rpartition("/")[2]
    size = int(total) if total.isdigit() else int(response.headers.get("Content-Length", stop) or stop)
    out = bytearray()
    for chunk in chunks:
        out += chunk
        if len(out) >= skip + stop - start:
            break
    return bytes(out[skip : skip + stop - start]), size


def _explain(error: Exception, model: ModelFile, offline: bool, reading: bool = False) -> Exception:
    """One HubError line for anything the hub client raised (KeyboardInterrupt is no Exception)."""
    from huggingface_hub import errors

    where = f"{model.repo}/{model.file}"
    if isinstance(error, HubError):  # specgen's own, already one line (a bad HF_ENDPOINT)
        return error
    if isinstance(error, errors.HFValidationError):
        return HubError(f"the hub client refuses {where}: {_first_line(error)}; fix the repo or file in models.toml")
    if reading and _unreachable(error):
        return _not_reachable(where, offline)
    if isinstance(error, errors.GatedRepoError):
        return HubError(
            f"{model.repo} is gated ({_status(error)}): accept its terms at {endpoint()}/{model.repo}, "
            f"then set HF_TOKEN to a read token of that account ({TOKENS_PAGE})"
        )
    if isinstance(error, errors.RepositoryNotFoundError):
        return HubError(
            f"the hub has no repo '{model.repo}' ({_status(error)}); fix the repo in models.toml, "
            "or set HF_TOKEN if it is private"
        )
    if isinstance(error, errors.RemoteEntryNotFoundError):
        return HubError(f"repo {model.repo} has no file '{model.file}' (404); fix the file name in models.toml")
    if isinstance(error, errors.LocalEntryNotFoundError):
        return _not_reachable(where, offline)
    if isinstance(error, errors.HfHubHTTPError):
        return HubError(f"the hub answered {_status(error)} for {where}; try again later")
    return _transport_or_disk(error, where)


def _unreachable(error: Exception) -> bool:
    """A connection that could not be opened (httpx's ConnectError, requests' ConnectionError)."""
    return any(kind.__name__ in ("ConnectError", "ConnectTimeout", "ConnectionError") for kind in type(error).__mro__)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _offline_why(pull: str) -> str:
    """Why nothing may be downloaded now (HF_HUB_OFFLINE in the environment, else --offline), and
    the way out: `pull` while online."""
    if offline_by_environment():
        return f"HF_HUB_OFFLINE={os.environ['HF_HUB_OFFLINE'].strip()} is set; unset it and run '{pull}' while online"
    return f"--offline is on; run '{pull}' while online"


def _not_reachable(where: str, offline: bool) -> HubError:
    if offline:
        return HubError(f"{where} is not in the Hugging Face cache and {_offline_why('specgen pull PAIR')}")
    return HubError(
        f"cannot reach {endpoint()} to download {where} (network down?); "
        "check the connection, a proxy or HF_ENDPOINT, then run the command again"
    )


# HTTP libraries huggingface_hub has used across releases, and their "transfer failed" errors
_TRANSPORT_ERRORS = {
    "httpx2": ("TransportError",),
    "httpx": ("TransportError",),
    "requests.exceptions": ("ConnectionError", "ChunkedEncodingError", "Timeout"),
}


def _transport_errors() -> tuple[type, ...]:
    """The transport errors of the HTTP libraries already loaded. A library that raised an error
    is loaded, so nothing is imported here: a library missing from this install cannot turn the
    user's download error into an ImportError."""
    found = []
    for module, names in _TRANSPORT_ERRORS.items():
        library = sys.modules.get(module)
        found += [getattr(library, name) for name in names if isinstance(getattr(library, name, None), type)]
    return tuple(found)


def _transport_or_disk(error: Exception, where: str) -> Exception:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return HubError(
            f"the disk is full while downloading {where} into {hub_cache_dir()}; "
            "free some space, or set HF_HOME to a folder on a larger disk"
        )
    if isinstance(error, _transport_errors()) or "Consistency check failed" in str(error):
        return HubError(f"the download of {where} was cut short ({type(error).__name__}); run the command again")
    return HubError(
        f"the Hugging Face client failed on {where} ({type(error).__name__}: {_first_line(error)}); "
        "run the command again, or with SPECGEN_DEBUG=1 to see why"
    )


def _status(error: Exception) -> str:
    response = getattr(error, "response", None)
    return str(getattr(response, "status_code", "error"))
