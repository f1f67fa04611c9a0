"""The terminal views: the streamed answer for pipelines, the live Rich view of what the drafter
does, and the chat REPL; each consumes the loop's events."""
