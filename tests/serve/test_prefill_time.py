"""A request's `prefill_s` is its own prompt's way into the caches: the time spent keeping the
previous user's caches (serve.states) is not charged to it. The scheduler runs in this process
on the tiny target, whose save of its KV state is made slow on purpose (0.4 s: a large context's
real save) so that the difference is plain."""

from __future__ import annotations

import asyncio
import time

from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.loop import GenerationConfig
from specgen.serve.scheduler import Failed, Finished, Gone, Job, Limits, Scheduler
from specgen.serve.wire import GenRequest

SLOW_SAVE_S = 0.4


def test_saving_the_last_users_caches_is_not_counted_in_the_next_users_prefill(target_model, monkeypatch):
    real_save, saves = target_model.save_state, []

    def slow_save():
        time.sleep(SLOW_SAVE_S)
        saves.append(target_model.tokens)
        return real_save()

    monkeypatch.setattr(target_model, "save_state", slow_save)
    target_model.truncate(0)

    async def serve_two() -> list[Finished]:
        limits = Limits(queue=2, prompt_tokens=1000, saved_bytes=64 * 2**20, users=2)
        done = []
        with Scheduler(target_model, PromptLookupDrafter(), GenerationConfig(2, 0), False, limits) as scheduler:
            for user, prompt in ((0, "def first_user(a, b):\n    return"), (1, "class SecondUser:\n    pass")):
                job = Job(GenRequest(kind="completion", prompt=prompt, max_tokens=2), user)
                scheduler.submit(job)
                while not isinstance(event := await job.next(), (Finished, Failed, Gone)):
                    pass
                assert isinstance(event, Finished), event
                done.append(event)
        return done

    first, second = asyncio.run(serve_two())
    assert len(saves) == 1  # before the second request, the first user's caches were saved
    assert second.outcome.prefill.seconds < SLOW_SAVE_S / 2, second.outcome.prefill
    assert first.outcome.prefill.seconds < SLOW_SAVE_S / 2  # nothing to save before the first
    target_model.truncate(0)
