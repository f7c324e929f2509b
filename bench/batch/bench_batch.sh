#!/usr/bin/env bash
# Throughput of ikllm-batch: documents/s and tokens/s with 1, 4, 8 and 16 sequences decoded
# together, against processing the documents one at a time (one `ikllm-batch run` process per
# document, and one process going through them sequentially with --parallel 1).
# Prints a markdown table. Runs niced (shared machines); timings include model loading.
# The one-process-per-document rate is measured on the first ONE_DOCS documents (it is the slow
# baseline; every document costs the same there; 0 skips it).
# Extra ikllm-batch flags for every run: BATCH_ARGS (e.g. --no-batch-invariance); REPEAT=R runs the
# --parallel list R times, interleaved, and reports median seconds.
# usage: bench/batch/bench_batch.sh BUILD_DIR MODEL.gguf [N_DOCS=32] [MAX_TOKENS=48] [THREADS=2]
#                                   [PARALLEL="1 4 8 16"] [ONE_DOCS=N_DOCS] [DOC_WORDS=60]
# Documents have DOC_WORDS to DOC_WORDS+29 words: short documents with long outputs show the decoding
# side (where batching pays), long ones the prompt side (already batched within one document).
set -euo pipefail
build=${1:?build dir}; model=${2:?model.gguf}
n_docs=${3:-32}; max_tokens=${4:-48}; threads=${5:-2}; parallel_list=${6:-"1 4 8 16"}; one_docs=${7:-$n_docs}; doc_words=${8:-60}
tool="$build/ikllm-batch"
work=$(mktemp -d /tmp/ikllm-batch-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Documents of DOC_WORDS..DOC_WORDS+29 words, different enough that no two prompts are the same.
words=(river mountain city train bread garden music star ocean forest engine window letter market bridge winter)
for ((i = 0; i < n_docs; ++i)); do
  text="Report $i."
  for ((k = 0; k < doc_words + i % 30; ++k)); do text+=" ${words[(i * 7 + k * 3) % ${#words[@]}]}"; done
  printf '{"id": "doc%03d", "text": "%s."}\n' "$i" "$text"
done > "$work/docs.jsonl"
cat > "$work/task.json" <<JSON
{"instruction": "Summarize the following report in two sentences.\n\n{document}", "max_tokens": $max_tokens,
 "seed": 1, "temperature": 0}
JSON

# Runs one configuration; echoes "seconds docs prompt_tokens generated_tokens".
measure() {
  local out=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  nice -n 10 "$tool" run --model "$model" --input "$work/docs.jsonl" --task "$work/task.json" --out "$out" \
    --threads "$threads" ${BATCH_ARGS:-} "$@" 2> "$work/log.txt"
  t1=$(date +%s.%N)
  local line; line=$(grep 'done:' "$work/log.txt" | tail -1)
  local prompt gen
  prompt=$(sed -E 's/.* ([0-9]+) prompt \+ ([0-9]+) generated.*/\1/' <<< "$line")
  gen=$(sed -E 's/.* ([0-9]+) prompt \+ ([0-9]+) generated.*/\2/' <<< "$line")
  echo "$(echo "$t1 - $t0" | bc -l) $n_docs $prompt $gen"
}

row() {  # label seconds docs prompt gen one_process_docs_per_s parallel1_docs_per_s
  awk -v l="$1" -v s="$2" -v d="$3" -v p="$4" -v g="$5" -v b="$6" -v q="$7" 'BEGIN {
    r = d / s
    printf "| %s | %.1f | %.3f | %.1f | %.1f | %s | %s |\n", l, s, r, g / s, (p + g) / s,
           (b > 0 ? sprintf("%.2fx", r / b) : (l ~ /^one/ ? "1.00x" : "-")),
           (q > 0 ? sprintf("%.2fx", r / q) : "-") }'
}

echo "model: $(basename "$model"), $n_docs documents of $doc_words+ words, max_tokens $max_tokens, greedy, $threads threads," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

one_rate=0
if [ "$one_docs" -gt 0 ]; then
  # One at a time: a fresh process per document (what a shell loop around a CLI does).
  t0=$(date +%s.%N); prompt=0; gen=0
  head -n "$one_docs" "$work/docs.jsonl" | split -l 1 - "$work/one."
  for f in "$work"/one.*; do
    mv "$f" "$f.jsonl"
    nice -n 10 "$tool" run --model "$model" --input "$f.jsonl" --task "$work/task.json" --out "$work/one.out" \
      --threads "$threads" --parallel 1 2> "$work/log.txt"
    line=$(grep 'done:' "$work/log.txt" | tail -1)
    prompt=$((prompt + $(sed -E 's/.* ([0-9]+) prompt \+ ([0-9]+) generated.*/\1/' <<< "$line")))
    gen=$((gen + $(sed -E 's/.* ([0-9]+) prompt \+ ([0-9]+) generated.*/\2/' <<< "$line")))
  done
  one_s=$(echo "$(date +%s.%N) - $t0" | bc -l)
  one_rate=$(echo "$one_docs / $one_s" | bc -l)
fi

# REPEAT rounds over the --parallel list (interleaved, so that a slow spell of a shared machine
# hits every mode alike); each row reports the median round.
repeat=${REPEAT:-1}
declare -A all_s
results=()
for ((round = 0; round < repeat; ++round)); do
  for p in $parallel_list; do
    read -r s d pr g < <(measure "$work/p$p.jsonl" --parallel "$p")
    all_s[$p]+="$s "
    [ "$round" = 0 ] && results+=("$p $d $pr $g")
  done
done
median() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
p1_rate=0
for r in "${results[@]}"; do
  read -r p d pr g <<< "$r"
  [ "$p" = 1 ] && p1_rate=$(echo "$d / $(median "${all_s[1]}")" | bc -l)
done
echo "| mode | seconds | documents/s | generated tokens/s | all tokens/s | speed-up vs one process per document | speed-up vs --parallel 1 |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
if [ "$one_docs" -gt 0 ]; then
  label="one process per document"
  [ "$one_docs" != "$n_docs" ] && label+=" (first $one_docs documents)"
  row "$label" "$one_s" "$one_docs" "$prompt" "$gen" 0 0
fi
for r in "${results[@]}"; do
  read -r p d pr g <<< "$r"
  row "--parallel $p" "$(median "${all_s[$p]}")" "$d" "$pr" "$g" "$one_rate" "$p1_rate"
done
if [ "$repeat" -gt 1 ]; then
  for p in $parallel_list; do echo "--parallel $p: seconds per round ${all_s[$p]}(median in the table)"; done
fi
