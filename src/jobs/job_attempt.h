/*-------------------------------------------------------------------------
 *
 * job_attempt.h
 *		The attempts of jobs as their agents tell them (issue 21, "a job's
 *		own output"): the rows of quota_sched.job_attempt, written by
 *		attempt_started, report and release (src/agent_api.c) through these
 *		functions only (src/job_attempt.c).
 *
 * Callers have checked that the agent holds the job, for the calling
 * login (or an admin), are connected to SPI and run as the extension's
 * owner (QsBeginSystemWrite).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_ATTEMPT_H
#define QS_JOB_ATTEMPT_H

/* what job_attempt keeps of an attempt's output: its last bytes */
#define QS_MAX_OUTPUT_BYTES 4096
/* an output argument longer than this is refused, not cut */
#define QS_MAX_OUTPUT_ARG_BYTES 65536
#define QS_MAX_HOST_BYTES 255
#define QS_MAX_LOG_PATH_BYTES 4096
#define QS_MAX_HANDLE_BYTES 1024
/* attempt_started's devices: how many, and the bytes of each name */
#define QS_MAX_DEVICES 256
#define QS_MAX_DEVICE_BYTES 128

extern char *QsAttemptTextArg(FunctionCallInfo fcinfo, int argno, const char *what,
							  size_t limit);
extern Datum QsAttemptDevicesArg(FunctionCallInfo fcinfo, int argno);
extern char *QsAttemptOutputArg(FunctionCallInfo fcinfo, int argno);
extern char *QsSafeOutput(const char *s);
extern bool QsAttemptLostBy(int64 job_id, int32 attempt, const char *agent);
/* What attempt_started says of a run: each NULL (port 0) for none. */
typedef struct QsAttemptStart
{
	const char *host;
	const char *log_path;
	const char *handle;
	int32		port;			/* the rendezvous port (rank 0) */
	Datum		devices;		/* the host's devices given the part, a text[];
								 * (Datum) 0: none, or kept */
} QsAttemptStart;

extern Datum QsRecordAttemptStart(int64 job_id, int32 attempt, int32 rank, const char *agent,
								  const QsAttemptStart *start);
extern void QsRecordAttemptEnd(int64 job_id, int32 attempt, int32 rank, const char *agent,
							   const int32 *exit_code, const char *output);

#endif							/* QS_JOB_ATTEMPT_H */
