"""Model files: GGUF headers, the pairs of models.toml, local discovery, the vocabulary check and
downloads (the only importer of huggingface_hub, in `hub`); no llama.cpp."""
