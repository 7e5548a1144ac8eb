/*-------------------------------------------------------------------------
 *
 * local.c
 *		Local children, local_launch_ops: a job's command (payload->'command',
 *		an argv) run by quota-sched-agent as a child process in a process
 *		group of its own, and what its exit status means for the job.
 *
 * A stop sends SIGTERM to the process group, SIGKILL after the grace
 * period (at once on a second SIGTERM to the agent).
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A job run as a local child. */
typedef struct LocalJob
{
	Job			job;			/* first: a LocalJob is a Job */
	pid_t		pid;			/* the child, and its process group; 0: none */
	bool		killed;			/* SIGKILL sent */
} LocalJob;

/*
 * cannot_start: the job's command could not be started for want of a pipe
 * or a fork (call): the job is released, with the reason.
 */
static void
cannot_start(Job *job, const char *call, const char *reason_prefix)
{
	int			e = errno;

	log_event("error", "job_not_started", job, "%s: %s", call, strerror(e));
	job->action = ACT_RELEASE;
	snprintf(job->reason, sizeof(job->reason), "agent %s could not start it: %s%s",
			 opts.agent, reason_prefix, strerror(e));
}

/*
 * exec_command, in the forked child: its own process group, default
 * signals, the job's environment, then the command.  If exec fails, its
 * errno goes to errfd.
 */
static void
exec_command(const Job *job, char **argv, int errfd)
{
	int			child_errno;

	child_setup(job);
	/* a user's job gets none of the agent's own database credentials */
	unsetenv("PGPASSWORD");
	unsetenv("PGPASSFILE");
	unsetenv("PGSERVICE");
	unsetenv("PGSERVICEFILE");
	unsetenv("PGSSLKEY");
	execvp(argv[0], argv);
	child_errno = errno;
	if (write(errfd, &child_errno, sizeof(child_errno)) < 0)
		_exit(127);
	_exit(127);
}

/*
 * spawn_command forks and execs argv for the job.  An exec that fails is
 * told through a close-on-exec pipe: the job fails with the reason.
 */
static void
spawn_command(Job *job, char **argv)
{
	char		line[1024];
	int			errpipe[2];
	int			child_errno = 0;
	ssize_t		n;
	pid_t		pid;

	if (pipe(errpipe) != 0)
	{
		cannot_start(job, "pipe", "");
		return;
	}
	fcntl(errpipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(errpipe[1], F_SETFD, FD_CLOEXEC);

	pid = fork();
	if (pid == 0)
	{
		close(errpipe[0]);
		exec_command(job, argv, errpipe[1]);
	}
	close(errpipe[1]);
	describe_argv(argv, line, sizeof(line));
	if (pid < 0)
	{
		close(errpipe[0]);
		cannot_start(job, "fork", "fork: ");
		return;
	}
	setpgid(pid, pid);			/* both sides, whichever runs first */
	do
		n = read(errpipe[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(errpipe[0]);
	if (n == sizeof(child_errno))
	{
		int			status;

		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		log_event("info", "job_exec_failed", job, "could not run %s: %s", argv[0],
				  strerror(child_errno));
		set_report(job, "FAILED", 0, false, "could not run \"%s\": %s", argv[0],
				   strerror(child_errno));
		return;
	}
	((LocalJob *) job)->pid = pid;
	job->alive = true;
	log_event("info", "job_started", job, "pid %d, %d instance(s), checkpoints in %s: %s",
			  (int) pid, job->instances, job->checkpoint_dir, line);
}

/*
 * start_job runs the job's command (the claim's "LEN:BYTES" argv) once the
 * job has its checkpoint directory; a command that cannot be read, or a
 * directory that cannot be had, fails the job.
 */
static void
start_job(Job *job, const char *argv_text)
{
	char	  **argv = split_argv(argv_text);

	if (argv == NULL || argv[0] == NULL)
		set_report(job, "FAILED", 0, false, "the job's command could not be read");
	else if (prepare_checkpoint_dir(job))
		spawn_command(job, argv);
	free_argv(argv);
}

/*
 * local_new_job: a LocalJob, zeroed (no child yet).  NULL if out of memory.
 */
static Job *
local_new_job(void)
{
	return calloc(1, sizeof(LocalJob));
}

/*
 * local_start: the job's command, unless the claim says it has none that
 * can run: the job then fails with the claim's reason.
 */
static void
local_start(Job *job, const ClaimedJob *claimed)
{
	if (claimed->command_error)
	{
		log_event("info", "job_not_runnable", job, "%s", claimed->command_error);
		set_report(job, "FAILED", 0, false, "%s", claimed->command_error);
	}
	else
		start_job(job, claimed->argv_text);
}

/* local_stop: SIGTERM to the child's process group; SIGKILL after the grace */
static void
local_stop(Job *job, const char *why)
{
	LocalJob   *lj = (LocalJob *) job;

	signal_group(job, lj->pid, SIGTERM);
	log_event("info", "job_stopping", job, "%s: SIGTERM to process group %d, SIGKILL in %g s",
			  why, (int) lj->pid, opts.grace);
}

/* local_tick: SIGKILL once the grace period has passed (or on a second signal) */
static void
local_tick(Job *job, double now)
{
	LocalJob   *lj = (LocalJob *) job;

	if (job->term_at > 0 && !lj->killed && (now >= job->term_at + opts.grace || got_term > 1))
	{
		lj->killed = true;
		signal_group(job, lj->pid, SIGKILL);
		log_event("info", "job_killed", job, "SIGKILL to process group %d", (int) lj->pid);
	}
}

/* local_wake: the end of the grace period of a child being stopped */
static double
local_wake(const Job *job)
{
	const LocalJob *lj = (const LocalJob *) job;

	if (job->alive && job->term_at > 0 && !lj->killed)
		return job->term_at + opts.grace;
	return 1e300;
}

/*
 * child_ended: what a child's exit status means for its job.  What the job
 * left behind in its process group goes with it.
 */
static void
child_ended(LocalJob *lj, int status)
{
	Job		   *job = &lj->job;
	char		how[128];
	bool		exited = WIFEXITED(status);
	int			code = exited ? WEXITSTATUS(status) : 0;

	job->alive = false;
	signal_group(job, lj->pid, SIGKILL);
	describe_wait_status(status, how, sizeof(how));
	log_event("info", "job_exited", job, "pid %d: %s", (int) lj->pid, how);

	settle(job, exited && code == 0 ? "SUCCEEDED" : "FAILED", exited ? code : 0, exited,
		   exited && code == 0 ? "" : how);
}

/* local_reaped: whether pid was the job's child; if so, its end */
static bool
local_reaped(Job *job, pid_t pid, int status)
{
	LocalJob   *lj = (LocalJob *) job;

	if (!job->alive || lj->pid != pid)
		return false;
	child_ended(lj, status);
	return true;
}

/* local_poll_fds: a child's output goes where the agent's does: nothing to poll */
static int
local_poll_fds(const Job *job, struct pollfd *fds)
{
	(void) job;
	(void) fds;
	return 0;
}

/* local_input: nothing to read (see local_poll_fds) */
static void
local_input(Job *job)
{
	(void) job;
}

/* local_free_job: the job's memory (its child, if any, is reaped or killed) */
static void
local_free_job(Job *job)
{
	free(job);
}

const LaunchOps local_launch_ops = {
	.new_job = local_new_job, .start = local_start, .stop = local_stop,
	.tick = local_tick, .wake = local_wake, .reaped = local_reaped,
	.poll_fds = local_poll_fds, .input = local_input, .free_job = local_free_job
};
