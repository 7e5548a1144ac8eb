/*-------------------------------------------------------------------------
 *
 * local.c
 *		Local children: a job's command (payload->'command', an argv) run
 *		by quota-sched-agent as a child process in a process group of its
 *		own, and what its exit status means for the job.
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
	job->pid = pid;
	job->alive = true;
	log_event("info", "job_started", job, "pid %d, %d instance(s), checkpoints in %s: %s",
			  (int) pid, job->instances, job->checkpoint_dir, line);
}

/*
 * start_job runs the job's command (the claim's "LEN:BYTES" argv) once the
 * job has its checkpoint directory; a command that cannot be read, or a
 * directory that cannot be had, fails the job.
 */
void
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
 * child_ended: what a child's exit status means for its job.  What the job
 * left behind in its process group goes with it.
 */
void
child_ended(Job *job, int status)
{
	char		how[128];
	bool		exited = WIFEXITED(status);
	int			code = exited ? WEXITSTATUS(status) : 0;

	job->alive = false;
	signal_group(job, job->pid, SIGKILL);
	describe_wait_status(status, how, sizeof(how));
	log_event("info", "job_exited", job, "pid %d: %s", (int) job->pid, how);

	settle(job, exited && code == 0 ? "SUCCEEDED" : "FAILED", exited ? code : 0, exited,
		   exited && code == 0 ? "" : how);
}
