#!/usr/bin/env bash
# FCP egos of issue 44 on the three BayesBelief layouts: each trained against a pool of the SP zoo's
# snapshots (4 stages) of seeds 0 and 1 (SP seed 2 stays held out, the partner FCP is measured
# against), a resumable run under runs/ppo/fcp/ (rerun after a kill: finished runs are skipped,
# an interrupted one continues). A layout whose SP seeds are not finished (no DONE in the zoo) is
# skipped with a message, and the script exits 3 at the end.
#
#   scripts/train_fcp.sh                       # everything, in order (after scripts/train_zoo.sh)
#   TIME_LIMIT=3600 scripts/train_fcp.sh       # stop after an hour; rerun to continue
#   LAYOUTS="cramped_room" STEPS=20000 ROOT=/tmp/fcp scripts/train_fcp.sh   # a smoke run
set -euo pipefail
cd "$(dirname "$0")/.."
LAYOUTS=${LAYOUTS:-"cramped_room coord_ring forced_coord"}
SEEDS=${SEEDS:-"0"}
POOL_SEEDS=${POOL_SEEDS:-"0 1"}
STEPS=${STEPS:-4000000}
ZOO=${ZOO:-runs/ppo/zoo}
ROOT=${ROOT:-runs/ppo/fcp}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
deadline=$(( $(date +%s) + ${TIME_LIMIT:-1000000000} ))
skipped=0
for layout in $LAYOUTS; do
  pool="$ROOT/pool_${layout}"
  missing=""
  for s in $POOL_SEEDS; do
    [ -f "$ZOO/sp_${layout}_seed${s}/DONE" ] || missing="$missing $ZOO/sp_${layout}_seed${s}"
  done
  if [ -n "$missing" ]; then echo "skip v2/$layout: SP runs not finished:$missing"; skipped=1; continue; fi
  if [ ! -f "$pool/READY" ]; then     # the pool: copies of the snapshots (policy + card), once
    rm -rf "$pool"
    for s in $POOL_SEEDS; do
      mkdir -p "$pool/seed$s"
      cp "$ZOO/sp_${layout}_seed${s}"/snapshots/*.msgpack "$ZOO/sp_${layout}_seed${s}"/snapshots/*.json "$pool/seed$s/"
    done
    touch "$pool/READY"
  fi
  for seed in $SEEDS; do
    out="$ROOT/fcp_${layout}_seed${seed}"
    if [ -f "$out/DONE" ]; then continue; fi
    left=$(( deadline - $(date +%s) ))
    if [ "$left" -le 60 ]; then echo "time limit reached; rerun to continue"; exit 0; fi
    mkdir -p "$out"
    echo "== fcp v2/$layout seed $seed, pool $pool -> $out"
    rc=0
    timeout "$left" nice -n "${NICE:-15}" "$PY" -m beliefgate.cli train ppo --layout "v2/$layout" --kind fcp \
      --pool "$pool" --steps "$STEPS" --seed "$seed" --out "$out" --resume || rc=$?
    if [ "$rc" = 124 ]; then echo "time limit reached inside $out; rerun to continue"; exit 0; fi
    if [ "$rc" != 0 ]; then exit "$rc"; fi
    touch "$out/DONE"
  done
done
if [ "$skipped" = 1 ]; then echo "fcp incomplete: rerun after the SP runs finish"; exit 3; fi
echo "fcp complete under $ROOT"
