/*-------------------------------------------------------------------------
 *
 * agent.h
 *		What the files of quota-sched-agent share: its options (one
 *		AgentOptions, filled by options.c), the jobs it holds, and the
 *		functions one file calls in another.
 *
 * The agent is one thread and one loop (main.c); these are its parts.  A
 * job runs through a LaunchOps, the table of what its launcher does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_H
#define QS_AGENT_H

#include "util.h"
#include "part_limits.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define AGENT_VERSION QS_VERSION_STRING	/* the Makefile's, from quota_sched.control */

/* The agent's options (see usage()), as parse_options() leaves them. */
typedef struct AgentOptions
{
	const char *conninfo;		/* --dbname: libpq connection string or URI */
	char		agent[129];		/* --agent, by default HOST/QUEUE */
	const char *queue;			/* --queue */
	const char *unit;			/* --capacity-unit, NULL: any */
	long		instances;		/* --instances */
	const char *labels;			/* --labels as a JSON object ("{}": none) */
	const char *address;		/* --address; NULL: the database takes the name */
	double		lease;			/* --lease, seconds */
	double		heartbeat;		/* --heartbeat, seconds (default: lease / 3) */
	double		grace;			/* --grace, seconds */
	bool		json;			/* --log-format=json */
	const char *checkpoint_root;	/* --checkpoint-root, made absolute */
	const char *log_dir;		/* --log-dir, made absolute */
	long		log_max_bytes;	/* --log-max-bytes: of each attempt's file */
	char		host[256];		/* this host's name (gethostname) */
	bool		keep_checkpoints;	/* --keep-checkpoints */
	long		exit_after;		/* --exit-after, 0: never */
	bool		noop;			/* --noop */
	bool		drain;			/* --drain: SIGTERM lets the jobs finish */
	bool		listen;			/* false with --no-listen */
	bool		wake_wait;		/* agent_wait where the server has it (--wake) */
	FILE	   *pickup_log;		/* --pickup-log: "job_id microseconds" a claim */
	const char *start_cmd;		/* external launcher: all three, or none */
	const char *status_cmd;
	const char *stop_cmd;
	double		status_interval;	/* --status-interval (default: heartbeat) */
	double		cmd_timeout;	/* --cmd-timeout, seconds */
	const char *run_as;			/* --run-as: the jobs' OS user; NULL: the agent's */
	uid_t		run_as_uid;
	gid_t		run_as_gid;
	const char *run_as_home;
	bool		same_user;		/* --same-user: the jobs run as the agent's user */
	DeviceList	devices;		/* --devices (n 0: none) */
	const char *device_node_pattern;	/* --device-node-pattern */
	bool		cgroup;			/* --cgroup: a cgroup per part */
	long long	memory_per_instance;	/* --memory-per-instance, bytes; 0: no limit */
	double		cpus_per_instance;	/* --cpus-per-instance; 0: no limit */
	const char *state_dir;		/* --state-dir, made absolute */
	bool		keep_jobs;		/* --keep-jobs: SIGTERM leaves the parts running */
} AgentOptions;

extern AgentOptions opts;

/* Why a job is being stopped. */
typedef enum StopKind
{
	STOP_NONE,					/* runs, or ended by itself */
	STOP_REQUESTED,				/* the database asked for a stop: report STOPPED */
	STOP_LOST,					/* no longer ours: kill, tell nothing */
	STOP_SHUTDOWN				/* the agent shuts down: release */
} StopKind;

/* What is to be told to the database of a job. */
typedef enum Action
{
	ACT_NONE,					/* the child runs */
	ACT_REPORT,					/* report state (reason, exit_code) */
	ACT_RELEASE,				/* release the job */
	ACT_DROP					/* forget it */
} Action;

typedef struct LaunchOps LaunchOps;

/* what the database gets of an attempt's output at its end: its last bytes */
#define OUTPUT_TAIL_BYTES 4096

/*
 * The output of a job's attempt (output.c): the file the agent writes it
 * to, LOG_DIR/JOB_ID/attempt-N.log (up to --log-max-bytes), and its last
 * OUTPUT_TAIL_BYTES in memory, a ring, for the report of its end.
 */
typedef struct AttemptLog
{
	bool		opened;			/* output is taken (the attempt started) */
	int			fd;				/* the file; -1: none (not opened, failed) */
	char		path[PATH_MAX]; /* "": none */
	long long	written;		/* bytes of output in the file */
	long long	dropped;		/* bytes not written, over --log-max-bytes */
	char		tail[OUTPUT_TAIL_BYTES];	/* a ring of the last bytes */
	size_t		tail_len;		/* bytes in the ring */
	size_t		tail_pos;		/* where the next byte goes */
} AttemptLog;

/*
 * A job's rendezvous (rendezvous.c): a part claimed waits (its command not
 * started) until every part of the attempt is claimed and rank 0's port is
 * known, from job_peers(); then its command gets the variables of its
 * place (QUOTA_SCHED_HOSTS, MASTER_ADDR, RANK, ...).
 */
typedef struct Rendezvous
{
	bool		waiting;		/* claimed, its start held for its peers */
	char	   *command_error;	/* the claim's, kept while it waits (malloc'd) */
	char	   *argv_text;
	char	   *payload;
	double		ask_at;			/* when to ask job_peers again (monotonic s) */
	double		waited_from;	/* when it began to wait */
	bool		known;			/* the fields below are set: it may start */
	int			nhosts;			/* parts of the job */
	int			rank;			/* this part's */
	int			port;			/* rank 0's rendezvous port */
	char	   *hosts;			/* the parts' addresses in rank order, comma-separated */
	char		address[256];	/* this part's address */
	char		master[256];	/* rank 0's address */
} Rendezvous;

/*
 * A job the agent holds, whichever way it runs: each launcher's job (local.c's
 * LocalJob, remote.c's RemoteJob) has a Job as its first member, and the
 * launcher's operations (ops) are the only code that looks further.
 */
typedef struct Job
{
	const LaunchOps *ops;		/* how it runs */
	int64_t		id;
	char		id_text[24];
	int			attempt;
	char		attempt_text[16];
	int			instances;		/* what it holds here: its part's, on several hosts */
	int			job_instances;	/* the job's instance_count, on all its hosts */
	int			array_index;	/* its index in its array; -1: in none */
	bool		alive;			/* runs: its child is not reaped, or its remote
								 * end is not known */
	StopKind	stop;
	double		term_at;		/* when its stop began (0: not yet) */
	double		lease_deadline; /* by then the lease may have run out */
	bool		seen;			/* in the last heartbeat's answer */
	char		checkpoint_dir[PATH_MAX];
	Action		action;
	const char *state;			/* for ACT_REPORT */
	char		reason[512];
	int			exit_code;
	bool		has_exit_code;
	int			tries;			/* reports or releases that failed, not refused */
	AttemptLog	log;			/* its output */
	bool		tell_attempt;	/* attempt_started() is to be called */
	const char *handle;			/* the external launcher's handle; NULL: none */
	double		retry_at;		/* when to try again (monotonic s); 0: now */
	uint64_t	device_mask;	/* the devices it holds (bits of opts.devices) */
	char		devices[4096];	/* their names, comma-separated ("": none) */
	Rendezvous	rdv;			/* its place among the job's parts (rendezvous.c) */
} Job;

/* What the claim says of a job, for its launcher's start. */
typedef struct ClaimedJob
{
	const char *command_error;	/* why payload->'command' cannot run; NULL: it can */
	const char *argv_text;		/* the command as "LEN:BYTES" pieces (split_argv) */
	const char *payload;		/* the job's payload, JSON */
} ClaimedJob;

/*
 * What the shim, or its child for the command, tells the agent through a
 * pipe when the command could not be run (nothing: it runs).
 */
typedef struct ShimFailure
{
	int			agent_side;		/* the agent's fault (fork, setuid): release */
	int			err;			/* errno */
	char		what[64];		/* the call that failed */
} ShimFailure;

/* the file descriptors a job may have the loop poll, at most */
#define LAUNCH_MAX_FDS 2

/*
 * LaunchOps: how jobs are run, a table of callbacks in the manner of
 * pg_basebackup's WalWriteMethodOps.  Two implementations: local children
 * (local.c, local_launch_ops) and the external launcher (remote.c,
 * remote_launch_ops, with --start-cmd); every job of an agent has the same.
 * The callbacks are all set; the loop and the protocol call nothing else
 * that knows how a job runs.
 */
struct LaunchOps
{
	/* a new job of this kind, zeroed but for what the kind needs; NULL: no memory */
	Job		   *(*new_job) (void);

	/* starts a job just claimed, or sets what to tell if it cannot run */
	void		(*start) (Job *job, const ClaimedJob *claimed);

	/* begins to stop the alive job (begin_stop has just set term_at) */
	void		(*stop) (Job *job, const char *why);

	/* what the alive job needs now: a kill after the grace, a command, ... */
	void		(*tick) (Job *job, double now);

	/* when tick next has something to do (1e300: nothing) */
	double		(*wake) (const Job *job);

	/* whether the child pid, just reaped, was the job's; if so, its end taken */
	bool		(*reaped) (Job *job, pid_t pid, int status);

	/* puts the descriptors the loop is to poll for the job in fds; how many */
	int			(*poll_fds) (const Job *job, struct pollfd *fds);

	/* after poll(): reads what came for the job */
	void		(*input) (Job *job);

	/* frees the job; what it still holds is let go */
	void		(*free_job) (Job *job);
};

extern const LaunchOps local_launch_ops;
extern const LaunchOps remote_launch_ops;

/* the loop's wishes: a claim, a heartbeat, agent_ready as soon as it can */
extern bool want_claim;
extern bool want_heartbeat;
extern bool want_ready;

/* options.c */
extern void parse_options(int argc, char **argv);

/* main.c */
extern pid_t agent_pid;			/* this process: its children check they outlive it */
extern volatile sig_atomic_t got_term;	/* SIGTERMs and SIGINTs received */
extern bool shutting_down;
extern bool draining;
extern bool kill_at_once(void);

/* jobs.c */
extern const LaunchOps *launcher;	/* how the jobs claimed from now on run */
extern Job **jobs;
extern int	njobs;
extern long jobs_done;
extern Job *find_job(int64_t id);
extern bool still_running(int64_t id);
extern Job *add_job(int64_t id, int attempt, int instances);
extern void remove_job(Job *job);
extern int	busy_instances(void);
extern int	alive_children(void);
extern void begin_stop(Job *job, StopKind kind, const char *why);
extern void enforce_deadlines(double now);
extern void set_report(Job *job, const char *state, int exit_code, bool has_exit_code,
					   const char *fmt,...) PRINTF_LIKE(5, 6);
extern void settle(Job *job, const char *state, int code, bool has_code, const char *reason);
extern int	ensure_checkpoint_root(const char *path, bool repair, char *err, size_t errcap);
extern int	ensure_dir(const char *path, mode_t mode, bool owner_any, bool repair, char *err,
					   size_t errcap);
extern bool prepare_checkpoint_dir(Job *job);
extern void close_checkpoint_dir(Job *job);
extern void remove_checkpoint_dir(Job *job);
extern void signal_group(const Job *job, pid_t pgid, int sig);
extern void child_setup(const Job *job);
extern void reset_child(const Job *job);

/* output.c */
extern void setup_log_dir(const char *arg);
extern void open_attempt_log(Job *job);
extern void attempt_output(Job *job, const char *buf, size_t n);
extern void attempt_note(Job *job, const char *fmt,...) PRINTF_LIKE(2, 3);
extern void close_attempt_log(Job *job);
extern size_t attempt_tail(const Job *job, char *out, size_t cap);

/* shim.c */
extern void run_shim(Job *job, char **argv, int errfd, const int outpipe[2]);
extern void become_subreaper(void);
extern void kill_strays(const pid_t *keep, int n);

/* local.c */
extern void sweep_strays(void);
extern void lease_renewed(Job *job);
extern int	keep_parts(void);
extern void adopt_parts(void);

/*
 * A part the state directory records (state.c): what an agent started
 * again needs to adopt it.
 */
typedef struct PartRecord
{
	pid_t		pid;			/* its shim */
	bool		mine;			/* recorded by an agent of this --agent name */
	int64_t		job;
	int			attempt;
	int			instances;
	int			job_instances;
	unsigned long long start;	/* the shim's start time (/proc, clock ticks) */
	char		checkpoint_dir[PATH_MAX];
	char		log_path[PATH_MAX];
	char		devices[4096];	/* as Job.devices had them ("": none) */
} PartRecord;

/* state.c */
extern void setup_state_dir(const char *arg);
extern unsigned long long proc_start_time(pid_t pid);
extern void state_write_part(const Job *job, pid_t pid);
extern void state_write_lease(const Job *job, pid_t pid);
extern double state_read_lease(pid_t pid);
extern void state_mark(pid_t pid, const char *ext);
extern bool state_has(pid_t pid, const char *ext);
extern void state_write_end(const Job *job, pid_t pid, int status, bool fenced);
extern bool state_read_end(Job *job, pid_t pid, int *status, bool *fenced);
extern void state_forget(pid_t pid);
extern void state_parts(void (*found) (const PartRecord *rec));

/* devices.c */
extern const char *devices_problem(void);
extern bool devices_take(Job *job);
extern bool devices_adopt(Job *job, const char *names);
extern void devices_free(Job *job);
extern void devices_setenv(const Job *job);

/* cgroup.c */
extern const char *cgroups_problem(void);
extern void cgroup_sweep(void);
extern bool cgroup_create(const Job *job, pid_t shim, const char **what);
extern bool cgroup_enter(const Job *job, pid_t shim, const char **what);
extern long cgroup_finish(const Job *job, pid_t shim);

/* rendezvous.c */
extern bool want_peers;
extern void begin_rendezvous(Job *job, const ClaimedJob *claimed);
extern void do_rendezvous(void);
extern double rendezvous_wake(const Job *job);
extern void end_wait(Job *job, Action action, const char *why);
extern void free_rendezvous(Job *job);
extern void set_rendezvous_env(const Job *job);

/* protocol.c */
extern double next_heartbeat;
extern void agent_fault(void);
extern void agent_fault_cleared(void);
extern void flush_actions(void);
extern void flush_or_claim(void);
extern void do_heartbeat(void);
extern bool may_take(void);
extern void do_claim(void);
extern void do_ready(void);

/* log.c */
extern double now_mono(void);
extern long long now_real_us(void);
extern double cpu_seconds(void);
extern void log_event(const char *level, const char *event, const Job *job,
					  const char *fmt,...) PRINTF_LIKE(4, 5);
extern void fatal(const char *fmt,...) PRINTF_LIKE(1, 2);

#endif							/* QS_AGENT_H */
