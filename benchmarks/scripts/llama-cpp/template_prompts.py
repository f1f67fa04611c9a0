"""Write each prompt of specgen prompt files, chat-templated by the target's own template, to
DIR/<kind>-<n>.txt, so llama.cpp's tools (`-f FILE`) decode from the tokens specgen's bench does.

    python benchmarks/scripts/llama-cpp/template_prompts.py DIR TARGET.gguf benchmarks/prompts/heldout/*
"""

import sys
from pathlib import Path

from specgen.bench.prompts import read_prompt_files
from specgen.llama.model import LoadOptions, Model


def main() -> None:
    out, target, sources = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    out.mkdir(parents=True, exist_ok=True)
    with Model(target, LoadOptions(n_ctx=256)) as model:
        for prompt in read_prompt_files(sources, None):
            text = model.apply_chat_template(list(prompt.messages) or [("user", prompt.text)])
            (out / (prompt.name.replace(":", "-") + ".txt")).write_text(text)
            print(prompt.name)


if __name__ == "__main__":
    main()
