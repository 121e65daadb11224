#!/usr/bin/env bash
# The behaviour-preference (BP) population of issue 44 on the three BayesBelief layouts: one
# reward-conditioned network per layout, trained over the 12 weight sets of
# beliefgate/rl/bp_population.yaml (environment j trains on set j mod 12), each a resumable run under
# runs/ppo/bp/ (rerun after a kill: finished runs are skipped, an interrupted one continues from its
# last saved update).
#
#   scripts/train_bp.sh                        # everything, in order
#   TIME_LIMIT=3600 scripts/train_bp.sh        # stop after an hour; rerun to continue
#   LAYOUTS="cramped_room" STEPS=20000 ROOT=/tmp/bp scripts/train_bp.sh   # a smoke run
set -euo pipefail
cd "$(dirname "$0")/.."
LAYOUTS=${LAYOUTS:-"cramped_room coord_ring forced_coord"}
SEEDS=${SEEDS:-"0"}
STEPS=${STEPS:-6000000}
ROOT=${ROOT:-runs/ppo/bp}
# 48 environments: each of the 12 weight sets trains in 4 of them
CONFIG=${CONFIG:-'{"num_envs": 48, "rollout_len": 128, "minibatches": 4}'}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
deadline=$(( $(date +%s) + ${TIME_LIMIT:-1000000000} ))
source scripts/train_lib.sh
weights=()
while IFS= read -r line; do weights+=(--weights "$line"); done < <("$PY" -m beliefgate.rl.population)
for layout in $LAYOUTS; do
  for seed in $SEEDS; do
    out="$ROOT/bp_${layout}_seed${seed}"
    if [ -f "$out/DONE" ]; then continue; fi
    mkdir -p "$out"
    printf '%s\n' "$CONFIG" > "$out/train_config.json"
    train_run "$out" "bp v2/$layout seed $seed (${#weights[@]} weight args)" --layout "v2/$layout" --kind bp \
      "${weights[@]}" --config "$out/train_config.json" --steps "$STEPS" --seed "$seed"
  done
done
echo "bp complete under $ROOT"
