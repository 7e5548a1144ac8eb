#!/bin/sh
# demo/train.sh STEPS [PROGRESS]: a stand-in for a training program, run by
# quota-sched-agent.  It trains in STEPS steps of a quarter of a second,
# saves a checkpoint (the last step done) after each, and starts from its
# checkpoint: an attempt after a preemption resumes where the one before
# stopped.  On SIGTERM (a stop) it saves and exits.  Each attempt notes
# where it started in the checkpoint folder's "attempts".  With PROGRESS (a
# folder), it also appends each step to PROGRESS/job-ID.step and each
# attempt's note to PROGRESS/job-ID.attempts, readable by all, for the
# demo's queries: the checkpoint folder itself is closed to all but the
# job's user.  (Appends, by the shell itself: no process more a step.)
steps=${1:-40}
progress=${2:-}
dir=${QUOTA_SCHED_CHECKPOINT_DIR:?run by quota-sched-agent}
umask 022
# publish NAME LINE: LINE appended to PROGRESS/job-ID.NAME
publish() {
	[ -z "$progress" ] || echo "$2" >>"$progress/job-$QUOTA_SCHED_JOB_ID.$1"
}
step=0
[ -f "$dir/step" ] && step=$(cat "$dir/step")
echo "attempt $QUOTA_SCHED_ATTEMPT started at step $step" >>"$dir/attempts"
publish attempts "attempt $QUOTA_SCHED_ATTEMPT started at step $step"
trap 'exit 0' TERM
while [ "$step" -lt "$steps" ]; do
	sleep 0.25
	step=$((step + 1))
	echo "$step" >"$dir/step.new" && mv "$dir/step.new" "$dir/step"
	publish step "$step"
done
