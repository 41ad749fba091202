#!/usr/bin/env bash
# A stand-in for torchrun / mpirun (test_ranks.sh): starts two children of "$@" with the
# variables a launcher gives its ranks, and waits for both.
set -u
for r in 0 1; do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 "$@" &
done
wait
