/*-------------------------------------------------------------------------
 *
 * remote.c
 *		The external launcher (--start-cmd, --status-cmd, --stop-cmd): a job
 *		that runs on another system, started, watched and stopped there by
 *		the launcher's commands.
 *
 * The start command (run with /bin/sh -c, the job's facts and payload in
 * its environment, never substituted into the command line) starts it
 * there and prints a handle; the status command, run every
 * --status-interval with that handle, says RUNNING, SUCCEEDED, FAILED or
 * STOPPED; the stop command asks the other system to stop it, after which
 * the status is polled until it has stopped or the grace period has
 * passed.  These commands are child processes too, one at a time per job,
 * watched by the same loop and killed after --cmd-timeout: a command that
 * hangs stalls nothing.  The handle lives in the agent's memory only.
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const helper_names[] = {"", "start", "status", "stop"};

/*
 * read_helper_output reads what the job's command wrote (non-blocking);
 * keeps the first bytes of its stdout and of its stderr.
 */
void
read_helper_output(Job *job)
{
	int		   *fds[2] = {&job->out_fd, &job->err_fd};
	char	   *bufs[2] = {job->out, job->err};
	size_t	   *lens[2] = {&job->out_len, &job->err_len};
	size_t		caps[2] = {sizeof(job->out), sizeof(job->err)};
	int			k;

	for (k = 0; k < 2; k++)
	{
		char		chunk[1024];
		ssize_t		n;

		while (*fds[k] >= 0)
		{
			n = read(*fds[k], chunk, sizeof(chunk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n <= 0)
			{
				close(*fds[k]);
				*fds[k] = -1;
				break;
			}
			if (*lens[k] + 1 < caps[k])
			{
				size_t		take = (size_t) n;

				if (take > caps[k] - 1 - *lens[k])
					take = caps[k] - 1 - *lens[k];
				memcpy(bufs[k] + *lens[k], chunk, take);
				*lens[k] += take;
				bufs[k][*lens[k]] = '\0';
			}
		}
	}
}

/*
 * exec_helper, in the forked child: stdout and stderr to the pipes, the
 * job's payload (start) or handle (status, stop) in the environment, then
 * /bin/sh -c CMD.
 */
static void
exec_helper(const Job *job, const char *cmd, const char *payload, int outp[2], int errp[2])
{
	child_setup(job);
	dup2(outp[1], STDOUT_FILENO);
	dup2(errp[1], STDERR_FILENO);
	close(outp[0]);
	close(outp[1]);
	close(errp[0]);
	close(errp[1]);
	if (payload)
		setenv("QUOTA_SCHED_PAYLOAD", payload, 1);
	else
		unsetenv("QUOTA_SCHED_PAYLOAD");
	if (job->started)
		setenv("QUOTA_SCHED_HANDLE", job->handle, 1);
	else
		unsetenv("QUOTA_SCHED_HANDLE");
	execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
	fprintf(stderr, "could not run /bin/sh: %s\n", strerror(errno));
	_exit(127);
}

/*
 * start_helper runs one of the launcher's commands for the job with
 * /bin/sh -c, in a process group of its own, its stdout and stderr read by
 * the loop.  The job's facts are in its environment: QUOTA_SCHED_JOB_ID,
 * _ATTEMPT, _INSTANCE_COUNT, _CHECKPOINT_DIR, _AGENT, and QUOTA_SCHED_PAYLOAD
 * (start) or QUOTA_SCHED_HANDLE (status, stop).  False if it could not be
 * started (logged).
 */
static bool
start_helper(Job *job, Helper which, const char *payload)
{
	const char *cmd = which == HELPER_START ? opts.start_cmd :
		which == HELPER_STATUS ? opts.status_cmd : opts.stop_cmd;
	int			outp[2] = {-1, -1},
				errp[2] = {-1, -1};
	pid_t		pid;

	if (pipe(outp) != 0 || pipe(errp) != 0)
	{
		log_event("error", "command_not_started", job, "%s command: pipe: %s",
				  helper_names[which], strerror(errno));
		if (outp[0] >= 0)
		{
			close(outp[0]);
			close(outp[1]);
		}
		return false;
	}
	fcntl(outp[0], F_SETFD, FD_CLOEXEC);
	fcntl(errp[0], F_SETFD, FD_CLOEXEC);
	pid = fork();
	if (pid == 0)
		exec_helper(job, cmd, payload, outp, errp);
	close(outp[1]);
	close(errp[1]);
	if (pid < 0)
	{
		log_event("error", "command_not_started", job, "%s command: fork: %s",
				  helper_names[which], strerror(errno));
		close(outp[0]);
		close(errp[0]);
		return false;
	}
	setpgid(pid, pid);
	fcntl(outp[0], F_SETFL, fcntl(outp[0], F_GETFL) | O_NONBLOCK);
	fcntl(errp[0], F_SETFL, fcntl(errp[0], F_GETFL) | O_NONBLOCK);
	job->helper = which;
	job->helper_pid = pid;
	job->helper_deadline = now_mono() + opts.cmd_timeout;
	job->helper_killed = false;
	job->helper_cancelled = false;
	job->out_fd = outp[0];
	job->err_fd = errp[0];
	job->out_len = job->err_len = 0;
	job->out[0] = job->err[0] = '\0';
	return true;
}

/* kill_helper kills the job's running command (its process group) */
void
kill_helper(Job *job)
{
	signal_group(job, job->helper_pid, SIGKILL);
}

/* remote_ended: the remote job has ended (or is given up): what to tell the database */
static void remote_ended(Job *job, const char *state, int exit_code, bool has_exit_code,
						 const char *fmt,...) PRINTF_LIKE(5, 6);

static void
remote_ended(Job *job, const char *state, int exit_code, bool has_exit_code, const char *fmt,...)
{
	char		reason[512] = "";

	if (fmt)
	{
		va_list		ap;

		va_start(ap, fmt);
		vsnprintf(reason, sizeof(reason), fmt, ap);
		va_end(ap);
	}
	job->alive = false;
	log_event("info", "job_exited", job, "remote job %s: %s%s%s",
			  job->started ? job->handle : "(not started)", state,
			  reason[0] ? ": " : "", reason);
	settle(job, state, exit_code, has_exit_code, reason);
}

/*
 * describe_helper_end says how a command ended, for the log and a reason:
 * its exit, and the last line it wrote on stderr.
 */
static void
describe_helper_end(Job *job, int status, char *buf, size_t cap)
{
	char		errline[300];

	if (job->helper_killed)
		snprintf(buf, cap, "did not finish within %g s (--cmd-timeout): killed", opts.cmd_timeout);
	else
		describe_wait_status(status, buf, cap);
	last_line(job->err, errline, sizeof(errline));
	if (errline[0])
	{
		size_t		len = strlen(buf);

		append(buf, cap, &len, ": %s", errline);
	}
}

/*
 * status_failed: the status command printed FAILED [CODE] [REASON] (rest:
 * what follows FAILED).
 */
static void
status_failed(Job *job, const char *rest)
{
	char	   *end;
	long		code;

	errno = 0;
	code = strtol(rest, &end, 10);
	if (end != rest && errno == 0 && code >= INT_MIN && code <= INT_MAX &&
		(*end == '\0' || *end == ' ' || *end == '\t'))
	{
		rest = end + strspn(end, " \t");
		if (*rest)
			remote_ended(job, "FAILED", (int) code, true, "%s", rest);
		else
			remote_ended(job, "FAILED", (int) code, true, "exit code %ld", code);
	}
	else
		remote_ended(job, "FAILED", 0, false, "%s", *rest ? rest : "the remote job failed");
}

/*
 * status_answer: what the status command printed: RUNNING, SUCCEEDED,
 * FAILED [CODE] [REASON], or STOPPED (by this agent, or else a failure).
 * Anything else is asked again later.
 */
static void
status_answer(Job *job, const char *line)
{
	char		word[16];
	size_t		n = strcspn(line, " \t");
	const char *rest;

	if (n >= sizeof(word))
		n = sizeof(word) - 1;
	memcpy(word, line, n);
	word[n] = '\0';
	rest = line + strcspn(line, " \t");
	rest += strspn(rest, " \t");
	if (strcmp(word, "RUNNING") == 0)
		return;
	if (strcmp(word, "SUCCEEDED") == 0)
		remote_ended(job, "SUCCEEDED", 0, true, NULL);
	else if (strcmp(word, "FAILED") == 0)
		status_failed(job, rest);
	else if (strcmp(word, "STOPPED") == 0)
	{
		if (job->stop != STOP_NONE)
			remote_ended(job, "STOPPED", 0, false, NULL);
		else
			remote_ended(job, "FAILED", 0, false, "the remote job %s was stopped, not by this agent",
						 job->handle);
	}
	else
		log_event("warning", "status_unknown", job,
				  "the status command printed \"%s\", not RUNNING, SUCCEEDED, FAILED or STOPPED; asking again later",
				  line);
}

/* start_cmd_ended: the start command ended: a handle (its first line), or a failure */
static void
start_cmd_ended(Job *job, bool ok, const char *line, const char *how, double now)
{
	if (ok && line[0])
	{
		snprintf(job->handle, sizeof(job->handle), "%s", line);
		job->started = true;
		job->next_status = now + opts.status_interval;
		log_event("info", "job_started", job, "remote handle %s, %d instance(s), checkpoints in %s",
				  job->handle, job->instances, job->checkpoint_dir);
	}
	else if (ok)
		remote_ended(job, "FAILED", 0, false,
					 "the start command printed no handle (its stdout's first line)");
	else
		remote_ended(job, "FAILED", 0, false, "the start command failed (%s)", how);
}

/*
 * status_cmd_ended: the status command ended: its answer, or (failed)
 * asked again after --status-interval, or after 1 s while the job stops.
 */
static void
status_cmd_ended(Job *job, bool ok, const char *line, const char *how, double now)
{
	job->next_status = now + (job->term_at > 0 && opts.status_interval > 1 ? 1 : opts.status_interval);
	if (!ok)
		log_event("warning", job->helper_killed ? "status_timeout" : "status_failed", job,
				  "the status command of %s %s; asking again in %g s", job->handle, how,
				  job->next_status - now);
	else
		status_answer(job, line);
}

/*
 * stop_cmd_ended: the stop command ended: the grace period runs from the
 * first one's end, the status is asked at once; a failed one is tried
 * again in 1 s.
 */
static void
stop_cmd_ended(Job *job, bool ok, const char *line, const char *how, double now)
{
	(void) line;
	if (job->stop_deadline == 0)
		job->stop_deadline = now + opts.grace;
	job->next_status = now;
	if (ok)
	{
		job->stop_ok = true;
		log_event("info", "stop_sent", job, "the stop command of %s succeeded; waiting up to %.1f s for the remote job to stop",
				  job->handle, job->stop_deadline - now);
	}
	else
	{
		job->stop_retry_at = now + 1;
		log_event("warning", "stop_failed", job, "the stop command of %s failed (%s); trying again in 1 s",
				  job->handle, how);
	}
}

/* log_command_stderr: what the job's command said on stderr goes to the log, a line an event */
static void
log_command_stderr(Job *job, Helper which)
{
	const char *p;

	for (p = job->err; *p;)
	{
		size_t		n = strcspn(p, "\n");

		if (n > 0)
			log_event("info", "command_output", job, "%s command: %.*s",
					  helper_names[which], (int) n, p);
		p += n;
		if (*p)
			p++;
	}
}

/*
 * helper_ended: one of the job's commands has ended: what it wrote is
 * read to the end and its stderr logged; then what its end means (unless
 * it was killed on purpose: its answer is moot).
 */
void
helper_ended(Job *job, int status)
{
	Helper		which = job->helper;
	bool		ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !job->helper_killed;
	char		how[700];
	char		line[1024];
	double		now = now_mono();

	read_helper_output(job);
	if (job->out_fd >= 0)
		close(job->out_fd);
	if (job->err_fd >= 0)
		close(job->err_fd);
	job->out_fd = job->err_fd = -1;
	job->helper = HELPER_NONE;
	job->helper_pid = 0;
	log_command_stderr(job, which);
	describe_helper_end(job, status, how, sizeof(how));
	first_line(job->out, line, sizeof(line));
	if (job->helper_cancelled)
		return;

	switch (which)
	{
		case HELPER_START:
			start_cmd_ended(job, ok, line, how, now);
			break;
		case HELPER_STATUS:
			status_cmd_ended(job, ok, line, how, now);
			break;
		case HELPER_STOP:
			stop_cmd_ended(job, ok, line, how, now);
			break;
		case HELPER_NONE:
			break;
	}
}

/*
 * remote_tick: what a remote job needs now.  Kills a command past its
 * deadline; once the start command has given a handle, runs the status
 * command every --status-interval, or, when the job is being stopped, the
 * stop command, then the status command until the remote job has stopped
 * or the grace period has passed.
 */
void
remote_tick(Job *job, double now)
{
	if (!job->alive)
		return;
	if (job->helper_pid > 0)
	{
		if (!job->helper_killed && now >= job->helper_deadline)
		{
			job->helper_killed = true;
			kill_helper(job);
			log_event("warning", "command_timeout", job, "the %s command ran for %g s (--cmd-timeout): killed",
					  helper_names[job->helper], opts.cmd_timeout);
		}
		return;
	}
	if (!job->started)
		return;
	if (job->term_at > 0 && job->stop_deadline > 0 &&
		(now >= job->stop_deadline || got_term > 1))
	{
		log_event("warning", "stop_unconfirmed", job,
				  "the remote job %s has not said it stopped %s: taken as stopped",
				  job->handle, got_term > 1 ? "(a second signal)" : "within the grace period");
		remote_ended(job, "STOPPED", 0, false, NULL);
		return;
	}
	if (job->term_at > 0 && !job->stop_ok && now >= job->stop_retry_at)
	{
		/* the stop command, at once, then again each second until it succeeds */
		if (!start_helper(job, HELPER_STOP, NULL))
		{
			job->stop_retry_at = now + 1;
			if (job->stop_deadline == 0)
				job->stop_deadline = now + opts.grace;
		}
	}
	else if (job->term_at > 0 && job->stop_deadline == 0)
		return;					/* not yet asked to stop: no status before */
	else if (now >= job->next_status)
	{
		if (!start_helper(job, HELPER_STATUS, NULL))
			job->next_status = now + opts.status_interval;
	}
}

/* remote_wake: when remote_tick has something to do for the job (1e300: nothing) */
double
remote_wake(const Job *job)
{
	double		t = 1e300;

	if (!job->alive)
		return t;
	if (job->helper_pid > 0)
		return job->helper_killed ? t : job->helper_deadline;
	if (!job->started)
		return t;
	if (job->term_at > 0)
	{
		if (!job->stop_ok && job->stop_retry_at < t)
			t = job->stop_retry_at;
		if (job->stop_deadline == 0)
			return t;
		if (job->stop_deadline < t)
			t = job->stop_deadline;
	}
	return job->next_status < t ? job->next_status : t;
}

/*
 * start_remote: the job's checkpoint directory, then its start command.  The
 * job holds its instances from now on.
 */
void
start_remote(Job *job, const char *payload)
{
	job->remote = true;
	if (!prepare_checkpoint_dir(job))
		return;
	if (!start_helper(job, HELPER_START, payload))
	{
		job->action = ACT_RELEASE;
		snprintf(job->reason, sizeof(job->reason), "agent %s could not run its start command",
				 opts.agent);
		return;
	}
	job->alive = true;
	log_event("info", "job_starting", job, "start command running (pid %d)", (int) job->helper_pid);
}
