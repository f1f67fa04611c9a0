#!/bin/bash
# How these files were made, at commit af45599, from the repository root ($T, $D, $BIN as
# benchmarks/scripts/llama-cpp/json_check.sh says; that script holds the commands this folder's run
# used, written out here then). Both prompts were written after every change they measure.
benchmarks/scripts/llama-cpp/json_check.sh benchmarks/results/2026-11-26-final-check-5 4
