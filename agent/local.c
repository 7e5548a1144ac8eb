/*-------------------------------------------------------------------------
 *
 * local.c
 *		Local children, local_launch_ops: a job's command (payload->'command',
 *		an argv) run by quota-sched-agent as a child process in a process
 *		group of its own, and what its exit status means for the job.
 *
 * A stop sends SIGTERM to the process group, SIGKILL after the grace
 * period (at once on a second SIGTERM to the agent).  The command's stdout
 * and stderr are a pipe the agent reads as the loop polls it, into the
 * attempt's file and tail (output.c); at the child's end what is left in
 * it is read before the end is told.
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
	int			out_fd;			/* the read end of its output's pipe; -1: closed */
} LocalJob;

/*
 * cannot_start: the job's command could not be started for want of a pipe,
 * a fork or the run-as user (what: the call that failed, errno: why): the
 * agent's fault, not the job's, so the job is released, with the reason
 * (no attempt counted), and the agent claims nothing for a while
 * (agent_fault).
 */
static void
cannot_start(Job *job, const char *what)
{
	int			e = errno;

	log_event("error", "job_not_started", job, "%s: %s", what, strerror(e));
	job->action = ACT_RELEASE;
	snprintf(job->reason, sizeof(job->reason), "agent %s could not start it: %s: %s",
			 opts.agent, what, strerror(e));
	agent_fault();
}

/*
 * exec_failed: the job's command could not be run (f: what the shim or
 * its child said): the job fails if the command is at fault (no such
 * program, ...), or is released if the agent is (a fork, a setuid).
 */
static void
exec_failed(Job *job, char **argv, const ShimFailure *f)
{
	const char *hint = f->err == E2BIG ?
		" (its arguments and environment together are over the system's limit; pass big inputs in a file)" : "";

	if (f->agent_side)
	{
		errno = f->err;
		cannot_start(job, f->what);
		return;
	}
	log_event("info", "job_exec_failed", job, "could not run %s: %s%s", argv[0],
			  strerror(f->err), hint);
	set_report(job, "FAILED", 0, false, "could not run \"%s\": %s%s", argv[0],
			   strerror(f->err), hint);
}

/*
 * make_pipes makes the pipe through which the shim tells a command that
 * could not be run (errpipe) and that of the job's output (outpipe, its
 * read end not blocking), all close-on-exec: nothing the agent runs
 * inherits them (the command gets the output's write end as its stdout
 * and stderr, dup2).  False if they could not be had (none is left open).
 */
static bool
make_pipes(int errpipe[2], int outpipe[2])
{
	int			i;

	if (pipe(errpipe) != 0)
		return false;
	if (pipe(outpipe) != 0)
	{
		close(errpipe[0]);
		close(errpipe[1]);
		return false;
	}
	for (i = 0; i < 2; i++)
	{
		fcntl(errpipe[i], F_SETFD, FD_CLOEXEC);
		fcntl(outpipe[i], F_SETFD, FD_CLOEXEC);
	}
	fcntl(outpipe[0], F_SETFL, fcntl(outpipe[0], F_GETFL) | O_NONBLOCK);
	return true;
}

/*
 * exec_went_through waits for the shim's word on the command (errfd): true
 * if it runs; else the shim is reaped and the job's end set (exec_failed).
 */
static bool
exec_went_through(Job *job, char **argv, pid_t pid, int errfd)
{
	ShimFailure f;
	ssize_t		n;
	int			status;

	do
		n = read(errfd, &f, sizeof(f));
	while (n < 0 && errno == EINTR);
	close(errfd);
	if (n != sizeof(f))
		return true;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	close_checkpoint_dir(job);
	close_attempt_log(job);
	exec_failed(job, argv, &f);
	return false;
}

/*
 * spawn_command forks the job's shim (shim.c), which runs argv for the job
 * and all it starts, its output into the pipe the agent reads.  A command
 * that cannot be run is told through a close-on-exec pipe (exec_failed);
 * else the job runs.
 */
static void
spawn_command(Job *job, char **argv)
{
	LocalJob   *lj = (LocalJob *) job;
	char		line[1024];
	int			errpipe[2];
	int			outpipe[2];
	pid_t		pid;

	if (!make_pipes(errpipe, outpipe))
	{
		close_checkpoint_dir(job);
		close_attempt_log(job);
		cannot_start(job, "pipe");
		return;
	}
	pid = fork();
	if (pid == 0)
	{
		close(errpipe[0]);
		close(outpipe[0]);
		run_shim(job, argv, errpipe[1], outpipe[1]);
	}
	close(errpipe[1]);
	close(outpipe[1]);
	describe_argv(argv, line, sizeof(line));
	if (pid < 0)
	{
		close(errpipe[0]);
		close(outpipe[0]);
		close_checkpoint_dir(job);
		close_attempt_log(job);
		cannot_start(job, "fork");
		return;
	}
	setpgid(pid, pid);			/* both sides, whichever runs first */
	lj->out_fd = outpipe[0];
	if (!exec_went_through(job, argv, pid, errpipe[0]))
		return;
	lj->pid = pid;
	job->alive = true;
	agent_fault_cleared();
	log_event("info", "job_started", job, "pid %d, %d instance(s), checkpoints in %s, output in %s: %s",
			  (int) pid, job->instances, job->checkpoint_dir,
			  job->log.path[0] ? job->log.path : "(no file)", line);
}

/*
 * start_job runs the job's command (the claim's "LEN:BYTES" argv) once the
 * job has its checkpoint directory; a command that cannot be read, or with
 * an argument too long to exec, fails the job; a directory that cannot be
 * had releases it (prepare_checkpoint_dir).
 */
static void
start_job(Job *job, const char *argv_text)
{
	char	  **argv = split_argv(argv_text);
	int			i;

	if (argv == NULL || argv[0] == NULL)
		set_report(job, "FAILED", 0, false, "the job's command could not be read");
	else if ((i = long_argument(argv, MAX_ARG_BYTES)) >= 0)
	{
		log_event("info", "job_not_runnable", job, "argument %d is %zu bytes, over %d",
				  i, strlen(argv[i]), MAX_ARG_BYTES);
		set_report(job, "FAILED", 0, false,
				   "argument %d of the job's command is %zu bytes, over Linux's %d-byte limit per argument; pass big inputs in a file",
				   i, strlen(argv[i]), MAX_ARG_BYTES);
	}
	else if (prepare_checkpoint_dir(job))
	{
		if (!job->log.opened)	/* opened while the part waited for its peers */
			open_attempt_log(job);
		spawn_command(job, argv);
	}
	free_argv(argv);
}

/*
 * local_new_job: a LocalJob, zeroed (no child yet, no pipe).  NULL if out
 * of memory.
 */
static Job *
local_new_job(void)
{
	LocalJob   *lj = calloc(1, sizeof(LocalJob));

	if (lj == NULL)
		return NULL;
	lj->out_fd = -1;
	return &lj->job;
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

/* local_stop: SIGTERM to the job's processes (through its shim); SIGKILL after the grace */
static void
local_stop(Job *job, const char *why)
{
	LocalJob   *lj = (LocalJob *) job;

	if (kill(lj->pid, SIGTERM) != 0)
		log_event("warning", "kill_failed", job, "kill(%d, SIGTERM): %s", (int) lj->pid,
				  strerror(errno));
	log_event("info", "job_stopping", job,
			  "%s: SIGTERM to the job's processes (shim %d), SIGKILL in %g s",
			  why, (int) lj->pid, opts.grace);
}

/*
 * local_tick: SIGKILL once the grace period has passed (or on a second
 * signal): SIGUSR1 asks the shim to kill every process of the job
 */
static void
local_tick(Job *job, double now)
{
	LocalJob   *lj = (LocalJob *) job;

	if (job->term_at > 0 && !lj->killed && (now >= job->term_at + opts.grace || kill_at_once()))
	{
		lj->killed = true;
		kill(lj->pid, SIGUSR1);
		log_event("info", "job_killed", job, "SIGKILL to the job's processes (shim %d)",
				  (int) lj->pid);
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
 * read_output reads what the job's command wrote to its pipe, as much as
 * there is now, into its attempt's output (attempt_output); at the end
 * of the pipe, or at the child's end (last), it is closed: a process the
 * job left that still holds it writes to nobody.
 */
static void
read_output(LocalJob *lj, bool last)
{
	char		chunk[8192];
	ssize_t		n;
	int			reads = 0;

	/* at the end, 8 MiB at most: a process left behind may write on */
	while (lj->out_fd >= 0)
	{
		n = read(lj->out_fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && !(last && ++reads > 1024))
		{
			attempt_output(&lj->job, chunk, (size_t) n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !last)
			return;
		close(lj->out_fd);
		lj->out_fd = -1;
	}
}

/*
 * sweep_strays kills what the agent adopted as a subreaper and is no shim
 * of its jobs (kill_strays); called as a child ends, when it adopts.
 */
void
sweep_strays(void)
{
	pid_t	   *keep = calloc(njobs + 1, sizeof(pid_t));
	int			n = 0,
				i;

	if (keep == NULL)
		return;
	for (i = 0; i < njobs; i++)
		if (jobs[i]->ops == &local_launch_ops && jobs[i]->alive)
			keep[n++] = ((LocalJob *) jobs[i])->pid;
	kill_strays(keep, n);
	free(keep);
}

/*
 * child_ended: what the shim's exit status (the command's) means for its
 * job, once what is left of its output is read; the job's directory is
 * closed to the run-as user again.  The shim
 * has ended every process the job started; if it was killed itself, what
 * was left is the agent's now, and killed.
 */
static void
child_ended(LocalJob *lj, int status)
{
	Job		   *job = &lj->job;
	char		how[128];
	bool		exited = WIFEXITED(status);
	int			code = exited ? WEXITSTATUS(status) : 0;

	read_output(lj, true);
	job->alive = false;
	sweep_strays();
	close_checkpoint_dir(job);
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

/* local_poll_fds: the pipe of the child's output, read as it comes */
static int
local_poll_fds(const Job *job, struct pollfd *fds)
{
	const LocalJob *lj = (const LocalJob *) job;

	if (lj->out_fd < 0)
		return 0;
	fds[0].fd = lj->out_fd;
	fds[0].events = POLLIN;
	return 1;
}

/* local_input: what the child wrote */
static void
local_input(Job *job)
{
	read_output((LocalJob *) job, false);
}

/* local_free_job: the job's memory and pipe (its child, if any, is reaped or killed) */
static void
local_free_job(Job *job)
{
	LocalJob   *lj = (LocalJob *) job;

	if (lj->out_fd >= 0)
		close(lj->out_fd);
	free(job);
}

const LaunchOps local_launch_ops = {
	.new_job = local_new_job, .start = local_start, .stop = local_stop,
	.tick = local_tick, .wake = local_wake, .reaped = local_reaped,
	.poll_fds = local_poll_fds, .input = local_input, .free_job = local_free_job
};
