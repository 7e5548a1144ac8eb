#!/bin/sh
# demo/train.sh STEPS: a stand-in for a training program, run by
# quota-sched-agent.  It trains in STEPS steps of a quarter of a second,
# saves a checkpoint (the last step done) after each, and starts from its
# checkpoint: an attempt after a preemption resumes where the one before
# stopped.  On SIGTERM (a stop) it saves and exits.  Each attempt notes
# where it started in the checkpoint folder's "attempts".
steps=${1:-40}
dir=${QUOTA_SCHED_CHECKPOINT_DIR:?run by quota-sched-agent}
step=0
[ -f "$dir/step" ] && step=$(cat "$dir/step")
echo "attempt $QUOTA_SCHED_ATTEMPT started at step $step" >>"$dir/attempts"
trap 'exit 0' TERM
while [ "$step" -lt "$steps" ]; do
	sleep 0.25
	step=$((step + 1))
	echo "$step" >"$dir/step.new" && mv "$dir/step.new" "$dir/step"
done
