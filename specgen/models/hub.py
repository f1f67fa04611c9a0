"""Get a pair's GGUF files from the Hugging Face hub.

The only module that imports huggingface_hub, always inside functions so `specgen --help`
stays instant. Files go to the standard Hugging Face cache, shared with every other tool, and
HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_HUB_OFFLINE and HF_TOKEN are read when a download starts
(not when the library was imported). huggingface_hub resumes a transfer cut mid-file and moves
a file into the cache only once it is complete, so a partial download is never loaded as a
model. Each failure becomes one SpecgenError line that names the problem and the way out.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

from specgen.errors import SpecgenError
from specgen.models.paths import hub_cache_dir, models_dir
from specgen.models.registry import ModelFile, Pair

DEFAULT_ENDPOINT = "https://huggingface.co"
TOKENS_PAGE = "https://huggingface.co/settings/tokens"


class HubError(SpecgenError):
    """A download failed: missing repo or file, no access, no network, or a full disk."""


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_by_environment() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def cached_path(model: ModelFile) -> Path | None:
    """Where `model` lies, complete: in the local models folder under its file name, else in the
    Hugging Face cache; None if it was never downloaded. No network."""
    from huggingface_hub import try_to_load_from_cache

    local = models_dir() / model.file
    if local.is_file():
        return local
    found = try_to_load_from_cache(model.repo, model.file, cache_dir=hub_cache_dir())
    return Path(found) if isinstance(found, str) and os.path.isfile(found) else None


def fetch(model: ModelFile, offline: bool = False) -> Path:
    """The local path of `model`, downloaded first if it is not in the cache (unless offline)."""
    found = cached_path(model)
    if found is not None:
        return found
    offline = offline or offline_by_environment()
    import huggingface_hub

    try:
        path = huggingface_hub.hf_hub_download(
            model.repo, model.file, cache_dir=hub_cache_dir(), endpoint=endpoint(), local_files_only=offline
        )
    except Exception as error:  # noqa: BLE001 - each known failure becomes one line below
        raise _explain(error, model, offline) from error
    return Path(path)


def fetch_pair(pair: Pair, roles: tuple[str, ...] = ("target", "draft"), offline: bool = False) -> dict[str, Path]:
    """Both files of a pair (or the roles asked for), with a notice on stderr before a download."""
    models = {role: getattr(pair, role) for role in roles}
    missing = [model for model in models.values() if cached_path(model) is None]
    if missing and (offline or offline_by_environment()):
        raise HubError(
            f"pair '{pair.name}' is not downloaded and offline mode is on; "
            f"run 'specgen pull {pair.name}' while online"
        )
    if missing:
        size = sum(model.size_gb for model in missing)
        print(
            f"specgen: pair '{pair.name}' is not downloaded yet; fetching {size:.1f} GB from {endpoint()} "
            f"into {hub_cache_dir()} (once)",
            file=sys.stderr,
        )
    return {role: fetch(model, offline) for role, model in models.items()}


def _explain(error: Exception, model: ModelFile, offline: bool) -> Exception:
    """One HubError line for a failed download; an unexpected error is returned unchanged."""
    from huggingface_hub import errors

    where = f"{model.repo}/{model.file}"
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


def _not_reachable(where: str, offline: bool) -> HubError:
    if offline:
        return HubError(f"{where} is not in the Hugging Face cache and offline mode is on; pull it while online")
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
    return error


def _status(error: Exception) -> str:
    response = getattr(error, "response", None)
    return str(getattr(response, "status_code", "error"))
