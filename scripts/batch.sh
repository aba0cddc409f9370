#!/usr/bin/env bash
# Plan (and execute) the example query files for the built-in toolsets with a real model.
#   OPENAI_API_KEY=... bash scripts/batch.sh            # plan only
#   OPENAI_API_KEY=... bash scripts/batch.sh --execute  # plan and run
# Results go to scripts/results/<name>.results.jsonl; rerunning skips finished queries.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p scripts/results
for file in scripts/queries/*.jsonl; do
  name=$(basename "$file" .jsonl)
  toolplan batch "$file" --out "scripts/results/$name.results.jsonl" \
    --summary-json "scripts/results/$name.summary.json" "$@"
done
