"""The one place a generation is put together: a `Request` (what to generate) and a `Generation`
(the drafter chosen for it, its grammar's lifetime, the loop, the cost recheck after the reply).

Every front end (`run`, `chat`, `serve`, `bench` and its audits) builds its generations here, so
that what one times, serves or audits is the same drafter under the same grammar. This layer sits
between the machinery below it (llama, models, decoding) and the front ends above it.
"""
