"""`specgen serve`: an OpenAI-compatible HTTP server (and llama-server's /infill) over one thread
that owns the models; every reply comes from the same decoding loop as the command line's."""
