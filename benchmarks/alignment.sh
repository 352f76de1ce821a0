#!/usr/bin/env bash
# Judge-human agreement of G-Eval on UniEval's human-judgment sets (the folder $ALIGNMENT_DATA),
# with the default model, comparing scoring methods on the same judge in one command each.
# Usage: benchmarks/alignment.sh OUT_DIR [all|qags|topical|baseline|qags-sampling|topical-sampling|faithfulness] [SAMPLING_LIMIT]
# The README's table: benchmarks/alignment.sh OUT all 60, then python benchmarks/alignment_table.py OUT
# JUDGE_MODEL=/path/to/model.gguf (or a model name) measures another judge.
# LIMIT=N judges only the first N records of each set (a larger judge's first pass; the cache keeps
# every call, so a later run with a larger LIMIT or none judges only the records not yet judged).
# DIMENSIONS="naturalness coherence" runs only those Topical-Chat dimensions (default: all four).
# Writes OUT_DIR/<set>-<dimension>.{json,jsonl}; the README's table comes from the JSON files.
set -euo pipefail
out=${1:?output folder}; which=${2:-all}; sampling_limit=${3:-}
data="${ALIGNMENT_DATA:-$(cd "$(dirname "$0")/.." && pwd)/tests/data/alignment}"  # default: the excerpts
mkdir -p "$out"

meta() {  # name file metric human methods... -- extra options
  local name=$1 file=$2 metric=$3 human=$4; shift 4
  /usr/bin/time -f "$name: %e s wall" localeval meta-eval "$data/$file" -m "$metric" --human "$human" \
    --threads 1 ${JUDGE_MODEL:+--model "$JUDGE_MODEL"} ${LIMIT:+--limit "$LIMIT"} --out "$out/$name.jsonl" --report "$out/$name.json" "$@" \
    || [ $? -eq 3 ]
}

if [ "$which" = qags ] || [ "$which" = all ]; then
  for set in cnndm xsum; do
    meta "qags_$set-consistency" "qags_$set.json" geval:consistency scores.consistency \
      --field input=source --field actual_output=system_output --group doc_id \
      --method logprobs --method top
  done
fi

if [ "$which" = topical ] || [ "$which" = all ]; then
  dialogue=(--field input=source --field actual_output=system_output --field context=context --group source)
  dimensions=${DIMENSIONS:-naturalness engagingness groundedness coherence}
  for dim in $dimensions; do
    [ "$dim" = coherence ] && continue
    meta "topical_chat-$dim" topical_chat.json "geval:$dim" "scores.$dim" "${dialogue[@]}" \
      --method logprobs --method top
  done
  # Coherence of a response to a dialogue (the coherence preset is for summaries).
  [[ " $dimensions " == *" coherence "* ]] && meta "topical_chat-coherence" topical_chat.json geval "scores.coherence" "${dialogue[@]}" \
    --method logprobs --method top \
    --metric-option name=coherence --metric-option 'score_range=[1,3]' \
    --metric-option 'evaluation_params=["input","actual_output"]' \
    --metric-option 'field_labels={"input":"Conversation History","actual_output":"Response"}' \
    --metric-option 'criteria=Coherence: the response follows logically from the conversation history and stays on its topic.' \
    --metric-option 'evaluation_steps=["Read the conversation history.","Read the response and check that it follows from what was said last and stays on topic.","Assign a score for coherence: 1 incoherent, 2 partly coherent, 3 coherent."]'
fi

if [ "$which" = baseline ] || [ "$which" = all ]; then  # no judge: the word count of the output
  for set in cnndm xsum; do
    meta "qags_$set-consistency-baseline" "qags_$set.json" output_length scores.consistency \
      --field input=source --field actual_output=system_output --group doc_id
  done
  for dim in naturalness engagingness groundedness coherence; do
    meta "topical_chat-$dim-baseline" topical_chat.json output_length "scores.$dim" \
      --field input=source --field actual_output=system_output --group source
  done
fi

# Sampling costs 20 generations per item: it runs on the first SAMPLING_LIMIT records only.
if [ -n "$sampling_limit" ] && { [ "$which" = qags-sampling ] || [ "$which" = all ]; }; then
  meta "qags_cnndm-consistency-sampling" qags_cnndm.json geval:consistency scores.consistency \
    --field input=source --field actual_output=system_output --limit "$sampling_limit" \
    --method logprobs --method top --method sampling
fi
if [ -n "$sampling_limit" ] && { [ "$which" = topical-sampling ] || [ "$which" = all ]; }; then
  meta "topical_chat-naturalness-sampling" topical_chat.json geval:naturalness scores.naturalness \
    --field input=source --field actual_output=system_output --field context=context --group source \
    --limit "$sampling_limit" --method logprobs --method top --method sampling
fi

# Faithfulness against QAGS's human consistency labels, three ways to get the claims judged (the
# first 60 CNN/DailyMail summaries; the article is the retrieval context): the output's sentences
# (the default), claims the judge lists, and claims judged against facts the judge lists first.
if [ "$which" = faithfulness ]; then
  rag=(--field input=source --field retrieval_context=source --field actual_output=system_output --limit 60
       --metric-option include_reason=false)
  meta "qags_cnndm-faithfulness-sentences" qags_cnndm.json faithfulness scores.consistency "${rag[@]}"
  meta "qags_cnndm-faithfulness-extracted" qags_cnndm.json faithfulness scores.consistency "${rag[@]}" \
    --metric-option claims=extracted
  meta "qags_cnndm-faithfulness-truths" qags_cnndm.json faithfulness scores.consistency "${rag[@]}" \
    --metric-option claims=extracted --metric-option truths_extraction_limit=16
fi
