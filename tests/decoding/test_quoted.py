"""A reply written in JSON copies from the prompt's text as JSON escapes it: the escaping is
JSON's own (checked against the json module), copies run on across escaped line ends where
copies from the prompt alone break at each, and the output stays the target's: greedy token for
token on a target that writes the prompt back as a JSON string, sampled in distribution on the
real tiny model, where a copier that peeks at the accept test (a planted bias) fails the test.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import pytest
from scripted import WritesBack
from stathelp import PeeksAtTheAcceptTest, position_pvalues

from specgen.decoding.auto import AutoDrafter, copy_sources
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Vocabulary
from specgen.decoding.drafters.pattern import PatternSource
from specgen.decoding.drafters.quoted import json_escaped, quoted_source
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.decoding.sampling import SamplingParams

CHEAP = StepCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.2, 64: 1.5}, {})  # copies pay at any length
N = 1200
DEPTH = 4
ALPHA = 0.001
TOP_K = SamplingParams(temperature=1.0, top_k=8)


def test_the_escaping_is_jsons_own():
    rng = random.Random(5)
    alphabet = 'ab "\\\n\r\t\b\f\x00\x01\x1f\x7fé€😀/'
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert json_escaped(text) == json.dumps(text, ensure_ascii=False)[1:-1], repr(text)


CHARS = Vocabulary(piece=lambda t: chr(t).encode(), tokenize=lambda text: [ord(c) for c in text])


def test_the_source_holds_the_prompts_text_escaped_and_none_where_nothing_is_escaped():
    prompt = [ord(c) for c in 'say "hi"\nthen go']
    assert quoted_source(prompt, CHARS).tokens.tolist() == [ord(c) for c in 'say \\"hi\\"\\nthen go']
    assert quoted_source([ord(c) for c in "nothing to escape"], CHARS) is None


WORDS = random.Random(7).sample(
    [
        "alpha",
        "brick",
        "cider",
        "delta",
        "ember",
        "fjord",
        "gusto",
        "heron",
        "ivory",
        "jolly",
        "koala",
        "lemon",
        "mango",
        "noble",
        "oasis",
        "pearl",
        "quilt",
        "raven",
    ],
    18,
)
FILE = "".join(
    f'def {a}_{b}(x):\n    return "{c}" + x\n\n' for a, b, c in zip(WORDS[::3], WORDS[1::3], WORDS[2::3], strict=True)
)


def written_back(quoted: bool) -> tuple[int, int, dict]:
    """A reply that writes FILE back as a JSON string, greedy, with auto over cheap copies: the
    target's passes, the most copied tokens one round kept, and the summary's count by source."""
    prompt = [ord(c) for c in f"save this file:\n{FILE}"]
    output = [ord(c) for c in '{"content": "' + json_escaped(FILE) + '"}']
    target = WritesBack(prompt, output)
    drafter = AutoDrafter(None, Policy(CHEAP, 8, timed=False, risk=math.inf), vocabulary=CHARS, quoted=quoted)
    *rounds, summary = generate(target, drafter, prompt, GenerationConfig(max_tokens=len(output), draft_tokens=8))
    assert [t for r in rounds for t in r.tokens] == output  # greedy: the target's own reply, whatever was drafted
    return target.passes, max(r.accepted for r in rounds), summary.by_source


def test_copies_of_the_escaped_text_run_across_line_ends_where_copies_of_the_prompt_break():
    alone, longest_alone, sources_alone = written_back(quoted=False)
    quoted, longest, sources = written_back(quoted=True)
    line = max(len(json_escaped(line + "\n")) for line in FILE.splitlines())
    assert longest_alone <= line < 2 * line < longest  # a kept copy runs across two line ends and more
    assert quoted < alone / 2
    # the escaped prompt's copies are reported apart: most of what was kept came from it
    assert "quoted" not in sources_alone and sources["quoted"].kept > len(json_escaped(FILE)) / 2, sources


# -- sampled, on the real tiny model ------------------------------------------------------------

PROMPT = 'a "b"\nc a "b"\nc a'


def samples(target, make, prompt, k, seeds) -> list[tuple[int, ...]]:
    out = []
    for seed in seeds:
        config = GenerationConfig(DEPTH, k, SamplingParams(TOP_K.temperature, TOP_K.top_k, TOP_K.top_p, seed))
        events = list(generate(target, make(), prompt, config))
        got = [t for e in events[:-1] for t in e.tokens]
        out.append(tuple(got + [-1] * (DEPTH - len(got))))
    return out


@pytest.fixture(scope="module")
def setting(target_model):
    """The prompt, target-alone samples, and a vocabulary whose tokens for the escaped prompt are
    the prompt's, then earlier samples after it: the quoted source matches the whole prompt, longer
    than any match inside the prompt itself, so its copies are the ones offered, and often kept;
    and the second tokens of those earlier samples (the first copy comes after the first token,
    which the prefill's row gives)."""
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    baseline = samples(target_model, lambda: None, prompt, 0, range(10**6, 10**6 + N))
    before = samples(target_model, lambda: None, prompt, 0, range(10**7, 10**7 + 5))
    earlier = [t for sample in before for t in [*prompt, *sample] if t >= 0]
    escaped = json_escaped(
        b"".join(map(target_model.piece, prompt[:-1])).decode()
    )  # the loop prepares all but the last
    vocabulary = Vocabulary(target_model.piece, lambda text: earlier if text == escaped else [])
    return prompt, baseline, vocabulary, {sample[1] for sample in before}


class Quoting(AutoDrafter):
    """Auto with the quoted source, keeping its first copy (None: it copied nothing)."""

    def __init__(self, vocabulary):
        # the record pattern is tested elsewhere; here only copies
        sources = [s for s in copy_sources(vocabulary=vocabulary, quoted=True) if not isinstance(s, PatternSource)]
        super().__init__(None, Policy(CHEAP, 4, timed=False, risk=math.inf), sources=sources)
        self.first: tuple[int, ...] | None = None

    def propose(self, history, last, k, params, draws, keep=None):
        draft = super().propose(history, last, k, params, draws, keep)
        if self.first is None and draft.source.copied:
            self.first = tuple(draft.tokens)
        return draft


class Peeking(PeeksAtTheAcceptTest, Quoting):
    """Biased: copies only where the accept test's uniform is small."""


@pytest.mark.parametrize("peeking", [False, True], ids=["quoted copies", "peeking"])
def test_quoted_copies_sample_the_target_distribution_and_a_peeking_copier_fails(target_model, setting, peeking):
    prompt, baseline, vocabulary, seconds = setting
    made = []

    def make():
        made.append((Peeking if peeking else Quoting)(vocabulary))
        return made[-1]

    pvalues = position_pvalues(samples(target_model, make, prompt, 4, range(N)), baseline)
    assert (min(pvalues) > ALPHA / len(pvalues)) != peeking, pvalues
    if not peeking:  # the first copy went on with an earlier sample after the prompt: only the quoted source holds one
        assert sum(d.first is not None and d.first[0] in seconds for d in made) > N // 2, Counter(d.first for d in made)
