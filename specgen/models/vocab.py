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
    """Compare tokenizer type, size, every shared token text, then BOS/EOS ids."""
    if target.vocab_type != draft.vocab_type:
        return Verdict(False, f"vocabulary types differ: {target.vocab_type!r} vs {draft.vocab_type!r}")
    t_tokens, d_tokens = target.tokens, draft.tokens
    if abs(len(t_tokens) - len(d_tokens)) > MAX_SIZE_DIFFERENCE:
        return Verdict(
            False,
            f"vocabulary sizes differ by more than {MAX_SIZE_DIFFERENCE}: {len(t_tokens)} vs {len(d_tokens)}",
        )
    for index, (a, b) in enumerate(zip(t_tokens, d_tokens, strict=False)):
        if a != b:
            return Verdict(False, f"token {index} differs: {a!r} vs {b!r}")
    for label, t_id, d_id in (("BOS", target.bos_id, draft.bos_id), ("EOS", target.eos_id, draft.eos_id)):
        if t_id != d_id:
            return Verdict(False, f"{label} token ids differ: {t_id} vs {d_id}")
    return Verdict(True, f"same {target.vocab_type!r} vocabulary of {min(len(t_tokens), len(d_tokens))} tokens")
