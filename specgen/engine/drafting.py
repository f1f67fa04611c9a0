"""Which drafter a generation hands the loop: the draft model or copying, the auto policy over
them where K is auto, a prediction drafted from where one is given.

This is the one factory of drafters for the front ends (it left `llama.calibrate`, which keeps
only the timing of passes and the cost cache it reads from here)."""

from __future__ import annotations

from typing import cast

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Drafter, Vocabulary
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.prediction import Prediction, PredictionDrafter
from specgen.decoding.drafters.suffix import SuffixIndex
from specgen.decoding.loop import GenerationConfig
from specgen.decoding.policy import Policy
from specgen.llama.calibrate import cached_costs, will_measure
from specgen.llama.model import Model
from specgen.llama.vocabmap import DraftVocabulary


def base_drafter(draft_model: Model | DraftVocabulary | None) -> Drafter:
    """What drafts for run, chat and serve: the draft model when there is one, else copying from
    what was written (it costs nothing to draft, and auto copies only where it pays). With
    K = 0 the loop drafts nothing either way: plain decoding."""
    return ModelDrafter(draft_model) if draft_model is not None else PromptLookupDrafter()


def loaded_draft(drafter: Drafter | None) -> Model | DraftVocabulary | None:
    """The draft model `drafter` drafts with, as the llama layer loaded it (None unless it is a
    `ModelDrafter`). The loop knows it only as a `DraftModel`; the front ends build a ModelDrafter
    only over what `pair.open_models` loaded (`base_drafter`), so it is a Model or DraftVocabulary."""
    if not isinstance(drafter, ModelDrafter):
        return None
    return cast("Model | DraftVocabulary", drafter.model)


def measures_costs(target: Model, drafter: Drafter | None, config: GenerationConfig, auto: bool) -> bool:
    """Whether `drafter_for` with these arguments (and no costs given) times the machine's passes
    first, as auto does where nothing is cached: the reply then starts late, and a front end says why."""
    if not auto or drafter is None:
        return False
    return will_measure(target, loaded_draft(drafter), seeded=config.sampling.seed is not None)


def drafter_for(
    target: Model,
    drafter: Drafter | None,
    config: GenerationConfig,
    auto: bool,
    shared: tuple[SuffixIndex, ...] = (),
    costs: StepCosts | None = None,
    prediction: Prediction | None = None,
    quoted: bool = False,
    example: str = "",
) -> Drafter | None:
    """The drafter to hand the loop: `drafter` itself (a draft model, prompt lookup, or None), or
    with `auto` the auto policy over it, starting from this machine's step costs and
    copying also from `shared` (a conversation's index, a `LookupMemory`'s) and from prompt
    lookup's own shared sources, and offering what the output's record pattern predicts in the
    target's vocabulary. With a `prediction` (the text the output is expected to resemble, in
    the target's tokens) auto offers it too, and a fixed K drafts from it where it knows its
    place, `drafter` elsewhere. `quoted`: the reply is written in JSON (a schema, tool calls), so
    auto copies also from the prompt's text as JSON escapes it; `example`: a document of the
    reply's JSON shape (`grammar.schema_example` of its schema), whose keys auto copies in the
    reply's first record.

    A seeded run decides from cached costs alone (or a fixed profile), not from live timings,
    so that the same seed gives the same draft lengths and so the same text. `costs`: the step
    costs when the caller measured them already (serve does, once, before taking requests).
    """
    if not auto:
        return PredictionDrafter(prediction, drafter) if prediction is not None else drafter
    if drafter is None:
        return drafter
    model = drafter if isinstance(drafter, ModelDrafter) else None
    if isinstance(drafter, PromptLookupDrafter):
        shared = (*shared, *drafter.shared)
    seeded = config.sampling.seed is not None
    costs = costs or cached_costs(target, loaded_draft(model), seeded=seeded)
    vocabulary = Vocabulary(target.piece, target.continuation)
    return AutoDrafter(
        model=model,
        policy=Policy(costs, config.draft_tokens, timed=not seeded),
        shared=shared,
        vocabulary=vocabulary,
        prediction=prediction,
        quoted=quoted,
        example=example,
    )
