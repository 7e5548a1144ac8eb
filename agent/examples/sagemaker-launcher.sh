#!/bin/sh
# agent/examples/sagemaker-launcher.sh: an external launcher for
# quota-sched-agent, in the shape of one that runs each job as an Amazon
# SageMaker training job.  Give it to the agent as
#
#   quota-sched-agent ... \
#       --start-cmd='/path/sagemaker-launcher.sh start' \
#       --status-cmd='/path/sagemaker-launcher.sh status' \
#       --stop-cmd='/path/sagemaker-launcher.sh stop'
#
# The agent passes everything through the environment (nothing is put into
# the command line): QUOTA_SCHED_JOB_ID, QUOTA_SCHED_ATTEMPT,
# QUOTA_SCHED_INSTANCE_COUNT, QUOTA_SCHED_CHECKPOINT_DIR, QUOTA_SCHED_AGENT,
# and the payload (start: on stdin and in the file QUOTA_SCHED_PAYLOAD_FILE,
# any size up to the 1 MiB the database takes; also QUOTA_SCHED_PAYLOAD when
# it is under 128 KiB) or QUOTA_SCHED_HANDLE (status, stop).
#
#   start   starts the job; prints its handle (the training job's name)
#   status  prints RUNNING, SUCCEEDED, FAILED [CODE [REASON]] or STOPPED
#   stop    asks for the job to stop (the agent then polls status)
#
# Here the "remote service" is a stand-in, so that the example runs anywhere
# (the tests, test/t/014_agent_external.pl, use it): a directory
# ($QS_STANDIN_DIR, default $TMPDIR/quota-sched-standin) with one folder per
# training job, and a detached background process that plays the training
# job.  The comments marked "real:" show the AWS CLI call each step stands
# for.  The stand-in reads these payload keys (real code would use jq):
#
#   {"training_image": "...", "seconds": 30, "exit_code": 0}
#
# training_image is required (a start without it fails, as CreateTrainingJob
# would); the stand-in job runs for "seconds", then ends with "exit_code"
# (0: Completed, else Failed).
set -eu

SERVICE=${QS_STANDIN_DIR:-${TMPDIR:-/tmp}/quota-sched-standin}

# field KEY: a top-level number or string of the payload (crude, stand-in only),
# read from its file (the file goes once the start command has ended)
field() {
	cat "${QUOTA_SCHED_PAYLOAD_FILE:-/dev/null}" | tr '\n' ' ' |
		sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\{0,1\}\([^\",}]*\).*/\1/p"
}

# put FILE VALUE: write a stand-in file at once (readers never see half of it)
put() {
	printf '%s\n' "$2" > "$1.tmp" && mv "$1.tmp" "$1"
}

job_dir() {
	dir="$SERVICE/${QUOTA_SCHED_HANDLE:?QUOTA_SCHED_HANDLE is not set}"
	if [ ! -d "$dir" ]; then
		echo "ResourceNotFound: no training job $QUOTA_SCHED_HANDLE" >&2
		exit 1
	fi
}

case "${1:-}" in
start)
	image=$(field training_image)
	if [ -z "$image" ]; then
		echo "ValidationException: the payload has no training_image" >&2
		exit 1
	fi
	# Training job names are unique for good in an account and region, and a
	# job may be started again with the same attempt number (after a
	# release): a suffix of the time and this process keeps them apart.
	name="qs-$QUOTA_SCHED_JOB_ID-$QUOTA_SCHED_ATTEMPT-$(date +%s)-$$"

	# real:
	#   aws sagemaker create-training-job --training-job-name "$name" \
	#     --algorithm-specification "TrainingImage=$image,TrainingInputMode=File" \
	#     --role-arn "$SAGEMAKER_ROLE_ARN" \
	#     --resource-config "InstanceType=ml.g5.xlarge,InstanceCount=$QUOTA_SCHED_INSTANCE_COUNT,VolumeSizeInGB=50" \
	#     --checkpoint-config "S3Uri=s3://$BUCKET/checkpoints/job-$QUOTA_SCHED_JOB_ID" \
	#     --output-data-config "S3OutputPath=s3://$BUCKET/output" \
	#     --stopping-condition MaxRuntimeInSeconds=86400 \
	#     --hyper-parameters "$(jq -c '.hyperparameters // {}' "$QUOTA_SCHED_PAYLOAD_FILE")" \
	#     > /dev/null
	# (the S3 checkpoint prefix per job plays the part of
	# QUOTA_SCHED_CHECKPOINT_DIR: an attempt after a preemption resumes from it)
	dir="$SERVICE/$name"
	mkdir -p "$dir"
	put "$dir/status" InProgress
	seconds=$(field seconds)
	code=$(field exit_code)
	# the stand-in training job: detached (setsid, no inherited output), as
	# a job on another system would be
	setsid sh -c '
		dir=$1 seconds=$2 code=$3
		put() { printf "%s\n" "$2" > "$1.tmp" && mv "$1.tmp" "$1"; }
		trap "put \"\$dir/status\" Stopped; exit 143" TERM
		echo $$ > "$dir/pid.tmp" && mv "$dir/pid.tmp" "$dir/pid"
		i=0
		while [ "$i" -lt $((seconds * 10)) ]; do
			sleep 0.1
			i=$((i + 1))
		done
		if [ "$code" = 0 ]; then
			put "$dir/status" Completed
		else
			put "$dir/exit_code" "$code"
			put "$dir/status" Failed
		fi' sh "$dir" "${seconds:-5}" "${code:-0}" < /dev/null > "$dir/log" 2>&1 &
	while [ ! -s "$dir/pid" ]; do sleep 0.05; done
	echo "$name"
	;;
status)
	job_dir
	# real:
	#   aws sagemaker describe-training-job --training-job-name "$QUOTA_SCHED_HANDLE" \
	#     --query '[TrainingJobStatus, FailureReason]' --output text
	# (FailureReason, when there is one, goes after FAILED as the reason)
	case "$(cat "$dir/status")" in
	InProgress | Stopping) echo RUNNING ;;
	Completed) echo SUCCEEDED ;;
	Failed) echo "FAILED $(cat "$dir/exit_code")" ;;
	Stopped) echo STOPPED ;;
	*)
		echo "unexpected status $(cat "$dir/status")" >&2
		exit 1
		;;
	esac
	;;
stop)
	job_dir
	# real:
	#   aws sagemaker stop-training-job --training-job-name "$QUOTA_SCHED_HANDLE"
	# (it returns at once; the job goes Stopping, then Stopped)
	if [ "$(cat "$dir/status")" = InProgress ]; then
		put "$dir/status" Stopping
		kill -TERM "$(cat "$dir/pid")" 2> /dev/null || true
	fi
	;;
*)
	echo "usage: $0 start|status|stop (run by quota-sched-agent)" >&2
	exit 2
	;;
esac
