# Shared by scripts/train_zoo.sh, train_bp.sh and train_fcp.sh (sourced): one resumable training run.
# The caller sets PY (the python), deadline (epoch seconds, from TIME_LIMIT) and exports PYTHONPATH.
#
#   train_run OUT LABEL ARGS...   # `beliefgate train ppo ARGS... --out OUT --resume`, niced (NICE, default 15)
#
# A run with OUT/DONE is skipped; one that finishes gets OUT/DONE. With 60 s or less left of the
# time limit, or when the limit is reached inside a run, the script stops with exit 0 (rerun to
# continue: the run resumes from its last saved update); a failed run stops it with the run's status,
# except a run that gave up (PPOConfig.give_up_at: OUT/GAVE_UP), which returns 3 to the caller (and
# is returned as 3 again, without training, on a rerun).
train_run() {
  local out=$1 label=$2
  shift 2
  if [ -f "$out/DONE" ]; then return 0; fi
  if [ -f "$out/GAVE_UP" ]; then return 3; fi
  local left=$(( deadline - $(date +%s) ))
  if [ "$left" -le 60 ]; then echo "time limit reached; rerun to continue"; exit 0; fi
  mkdir -p "$out"
  echo "== $label -> $out"
  local rc=0
  timeout "$left" nice -n "${NICE:-15}" "$PY" -m beliefgate.cli train ppo "$@" --out "$out" --resume || rc=$?
  if [ "$rc" = 124 ]; then echo "time limit reached inside $out; rerun to continue"; exit 0; fi
  if [ "$rc" != 0 ] && [ -f "$out/GAVE_UP" ]; then echo "gave up: $(cat "$out/GAVE_UP")"; return 3; fi
  if [ "$rc" != 0 ]; then exit "$rc"; fi
  touch "$out/DONE"
}
