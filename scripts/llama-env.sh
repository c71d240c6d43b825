# Sourced by scripts/test.sh and scripts/bench.sh: installs the real model's server
# (scripts/llama-setup.sh: built once, about 15-20 minutes on two cores, cached under
# ~/.cache/batch-pacer/llama) and exports LLAMA_SERVER and LLAMA_MODEL from the line it
# prints last (`LLAMA_SERVER=... LLAMA_MODEL=...`).
llama="$(bash scripts/llama-setup.sh | tail -n 1)"
case "$llama" in
  LLAMA_SERVER=*" LLAMA_MODEL="*) ;;
  *) echo "scripts/llama-setup.sh did not end with LLAMA_SERVER=... LLAMA_MODEL=... (got: $llama)" >&2; exit 1 ;;
esac
LLAMA_SERVER="${llama#LLAMA_SERVER=}"
LLAMA_SERVER="${LLAMA_SERVER%% LLAMA_MODEL=*}"
LLAMA_MODEL="${llama##* LLAMA_MODEL=}"
export LLAMA_SERVER LLAMA_MODEL
echo "LLAMA_SERVER=$LLAMA_SERVER LLAMA_MODEL=$LLAMA_MODEL"
