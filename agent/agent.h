/*-------------------------------------------------------------------------
 *
 * agent.h
 *		What the files of quota-sched-agent share: its options (one
 *		AgentOptions, filled by options.c), the jobs it holds, and the
 *		functions one file calls in another.
 *
 * The agent is one thread and one loop (main.c); these are its parts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_H
#define QS_AGENT_H

#include "util.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#define AGENT_VERSION "0.2"

/* The agent's options (see usage()), as parse_options() leaves them. */
typedef struct AgentOptions
{
	const char *conninfo;		/* --dbname: libpq connection string or URI */
	char		agent[129];		/* --agent, by default HOST/QUEUE */
	const char *queue;			/* --queue */
	const char *unit;			/* --capacity-unit, NULL: any */
	long		instances;		/* --instances */
	double		lease;			/* --lease, seconds */
	double		heartbeat;		/* --heartbeat, seconds (default: lease / 3) */
	double		grace;			/* --grace, seconds */
	bool		json;			/* --log-format=json */
	const char *checkpoint_root;	/* --checkpoint-root, made absolute */
	bool		keep_checkpoints;	/* --keep-checkpoints */
	long		exit_after;		/* --exit-after, 0: never */
	bool		noop;			/* --noop */
	bool		listen;			/* false with --no-listen */
	FILE	   *pickup_log;		/* --pickup-log: "job_id microseconds" a claim */
	const char *start_cmd;		/* external launcher: all three, or none */
	const char *status_cmd;
	const char *stop_cmd;
	double		status_interval;	/* --status-interval (default: heartbeat) */
	double		cmd_timeout;	/* --cmd-timeout, seconds */
} AgentOptions;

extern AgentOptions opts;

typedef enum StopKind
{
	STOP_NONE,					/* runs, or ended by itself */
	STOP_REQUESTED,				/* the database asked for a stop: report STOPPED */
	STOP_LOST,					/* no longer ours: kill, tell nothing */
	STOP_SHUTDOWN				/* the agent shuts down: release */
} StopKind;

typedef enum Action
{
	ACT_NONE,					/* the child runs */
	ACT_REPORT,					/* report state (reason, exit_code) */
	ACT_RELEASE,				/* release the job */
	ACT_DROP					/* forget it */
} Action;

typedef enum Helper
{
	HELPER_NONE,
	HELPER_START,				/* --start-cmd */
	HELPER_STATUS,				/* --status-cmd */
	HELPER_STOP					/* --stop-cmd */
} Helper;

typedef struct Job
{
	int64_t		id;
	char		id_text[24];
	int			attempt;
	char		attempt_text[16];
	int			instances;
	pid_t		pid;			/* the child, and its process group; 0: none */
	bool		alive;			/* the child has not been reaped */
	StopKind	stop;
	double		term_at;		/* when SIGTERM was sent (0: not yet) */
	bool		killed;			/* SIGKILL sent */
	double		lease_deadline; /* by then the lease may have run out */
	bool		seen;			/* in the last heartbeat's answer */
	char		checkpoint_dir[PATH_MAX];
	Action		action;
	const char *state;			/* for ACT_REPORT */
	char		reason[512];
	int			exit_code;
	bool		has_exit_code;
	int			tries;			/* reports or releases that failed, not refused */
	double		retry_at;		/* when to try again (monotonic s); 0: now */

	/*
	 * A job run by an external launcher (remote): alive from its claim until
	 * its end is known; pid stays 0.  At most one command runs for it.
	 */
	bool		remote;
	bool		started;		/* the start command gave a handle */
	char		handle[1024];
	Helper		helper;			/* the command that runs now */
	pid_t		helper_pid;
	double		helper_deadline;	/* killed then (--cmd-timeout) */
	bool		helper_killed;	/* SIGKILL sent: timed out */
	bool		helper_cancelled;	/* killed on purpose: its answer is moot */
	int			out_fd;			/* its stdout and stderr; -1: closed */
	int			err_fd;
	char		out[2048];
	size_t		out_len;
	char		err[2048];
	size_t		err_len;
	double		next_status;	/* when to run the status command next */
	double		stop_deadline;	/* the first stop command ended: grace ends then */
	bool		stop_ok;		/* a stop command succeeded */
	double		stop_retry_at;	/* a stop command failed: again then */
} Job;

/* the loop's wishes: a claim, a heartbeat as soon as it can */
extern bool want_claim;
extern bool want_heartbeat;

/* options.c */
extern void parse_options(int argc, char **argv);

/* quota_sched_agent.c */
extern pid_t agent_pid;			/* this process: its children check they outlive it */
extern volatile sig_atomic_t got_term;	/* SIGTERMs and SIGINTs received */
extern bool shutting_down;
extern void begin_stop(Job *job, StopKind kind, const char *why);

/* jobs.c */
extern Job **jobs;
extern int	njobs;
extern long jobs_done;
extern Job *find_job(int64_t id);
extern bool still_running(int64_t id);
extern Job *add_job(int64_t id, int attempt, int instances);
extern void remove_job(Job *job);
extern int	busy_instances(void);
extern int	alive_children(void);
extern void set_report(Job *job, const char *state, int exit_code, bool has_exit_code,
					   const char *fmt,...) PRINTF_LIKE(5, 6);
extern void settle(Job *job, const char *state, int code, bool has_code, const char *reason);
extern int	ensure_private_dir(const char *path, char *err, size_t errcap);
extern bool prepare_checkpoint_dir(Job *job);
extern void remove_checkpoint_dir(Job *job);
extern void signal_group(const Job *job, pid_t pgid, int sig);
extern void child_setup(const Job *job);

/* protocol.c */
extern double next_heartbeat;
extern void flush_actions(void);
extern void do_heartbeat(void);
extern void do_claim(void);

/* local.c */
extern void start_job(Job *job, const char *argv_text);
extern void child_ended(Job *job, int status);

/* remote.c */
extern void start_remote(Job *job, const char *payload);
extern void read_helper_output(Job *job);
extern void kill_helper(Job *job);
extern void helper_ended(Job *job, int status);
extern void remote_tick(Job *job, double now);
extern double remote_wake(const Job *job);

/* log.c */
extern double now_mono(void);
extern long long now_real_us(void);
extern double cpu_seconds(void);
extern void log_event(const char *level, const char *event, const Job *job,
					  const char *fmt,...) PRINTF_LIKE(4, 5);
extern void fatal(const char *fmt,...) PRINTF_LIKE(1, 2);

#endif							/* QS_AGENT_H */
