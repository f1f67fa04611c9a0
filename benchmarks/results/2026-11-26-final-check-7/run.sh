#!/bin/bash
# How these files were made, at commit a3975f6 plus this folder, from the repository root ($T, $D,
# $BIN as benchmarks/scripts/llama-cpp/json_check.sh says). Both prompts were written at the end of
# the session, after every change they measure.
benchmarks/scripts/llama-cpp/json_check.sh benchmarks/results/2026-11-26-final-check-7 3
