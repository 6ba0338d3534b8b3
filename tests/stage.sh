#!/usr/bin/env bash
# Runs one stage of make test and prints how long it took, whether it passed or not.
set -u
name=$1; shift
start=$(date +%s)
"$@"; rc=$?
echo "stage ${name}: $(( $(date +%s) - start )) s (exit ${rc})"
exit $rc
