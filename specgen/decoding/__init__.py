"""Decoding, pure: the speculative loop, its sampling and verification math, the drafters and
the auto policy over them. Imports nothing of llama.cpp, files or the views: models are handed in."""
