"""specgen: fast local text generation with exact speculative decoding over llama.cpp."""

__version__ = "0.1.0"
