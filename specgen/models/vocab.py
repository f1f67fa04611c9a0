"""Can this draft model speak for this target? Decided from the two GGUF headers alone.

Speculative decoding feeds the draft's token ids to the target, so both must use one
vocabulary: the same tokenizer type, the same token texts for every id they share, and
sizes no further apart than the padding some families add to their larger models.
"""

from __future__ import annotations

from dataclasses import dataclass

from specgen.models.gguf import GGUFInfo

MAX_SIZE_DIFFERENCE = 128


@dataclass(frozen=True)
class Verdict:
    compatible: bool
    reason: str


def check_vocabularies(target: GGUFInfo, draft: GGUFInfo) -> Verdict:
    """Compare tokenizer type, size, every shared token text, then BOS/EOS ids. Token texts are
    compared only where the two vocabularies' digests differ (equal digests, equal texts), so
    headers read without their texts (`read_info(tokens=False)`) suffice for a matched pair."""
    if target.vocab_type != draft.vocab_type:
        return Verdict(False, f"vocabulary types differ: {target.vocab_type!r} vs {draft.vocab_type!r}")
    t_size, d_size = target.vocab_size, draft.vocab_size
    if abs(t_size - d_size) > MAX_SIZE_DIFFERENCE:
        return Verdict(False, f"vocabulary sizes differ by more than {MAX_SIZE_DIFFERENCE}: {t_size} vs {d_size}")
    if not same_texts(target, draft):
        if len(target.tokens) != t_size or len(draft.tokens) != d_size:
            raise ValueError("vocabularies that differ are compared by their texts: read both headers with them")
        for index, (a, b) in enumerate(zip(target.tokens, draft.tokens, strict=False)):
            if a != b:
                return Verdict(False, f"token {index} differs: {a!r} vs {b!r}")
    for label, t_id, d_id in (("BOS", target.bos_id, draft.bos_id), ("EOS", target.eos_id, draft.eos_id)):
        if t_id != d_id:
            return Verdict(False, f"{label} token ids differ: {t_id} vs {d_id}")
    return Verdict(True, f"same {target.vocab_type!r} vocabulary of {min(t_size, d_size)} tokens")


def same_texts(target: GGUFInfo, draft: GGUFInfo) -> bool:
    """Whether the two headers' token texts are known equal from their digests alone."""
    return bool(target.vocab_digest) and target.vocab_digest == draft.vocab_digest
