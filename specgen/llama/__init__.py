"""Everything that touches llama.cpp: the only layer that imports llama_cpp (lazily, in `library`),
so that `--help` and the pure layers below load without it."""
