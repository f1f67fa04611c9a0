#!/bin/bash
# How these files were made, at commit a0c69f0, from the repository root ($T, $D, $BIN as
# benchmarks/scripts/llama-cpp/json_check.sh says; that script holds the commands this folder's run
# used, written out here then).
R=benchmarks/results/2026-11-26-final-check-4
benchmarks/scripts/llama-cpp/json_check.sh $R 2
python $R/order.py > $R/order.txt   # plain and auto in alternating order on a one-sentence answer
