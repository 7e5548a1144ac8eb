/*-------------------------------------------------------------------------
 *
 * remote.c
 *		The external launcher (--start-cmd, --status-cmd, --stop-cmd),
 *		remote_launch_ops: a job that runs on another system, started,
 *		watched and stopped there by the launcher's commands.
 *
 * The start command (run with /bin/sh -c, the job's facts and payload in
 * its environment, never substituted into the command line) starts it
 * there and prints a handle; the status command, run every
 * --status-interval with that handle, says RUNNING, SUCCEEDED, FAILED or
 * STOPPED; the stop command asks the other system to stop it, after which
 * the status is polled until it has stopped or the grace period has
 * passed.  These commands are child processes too, one at a time per job,
 * watched by the same loop and killed after --cmd-timeout: a command that
 * hangs stalls nothing.  What the commands print goes to the attempt's
 * output (output.c: its file, and its tail for the database), which is
 * told the handle too (attempt_started).
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

/* The launcher's commands. */
typedef enum Helper
{
	HELPER_NONE,
	HELPER_START,				/* --start-cmd */
	HELPER_STATUS,				/* --status-cmd */
	HELPER_STOP					/* --stop-cmd */
} Helper;

static const char *const helper_names[] = {"", "start", "status", "stop"};

/*
 * A job run by the external launcher: alive from its claim until its end
 * is known.  At most one command runs for it.
 */
typedef struct RemoteJob
{
	Job			job;			/* first: a RemoteJob is a Job */
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
	char		payload_file[PATH_MAX]; /* the payload, for the start command; "": none */
} RemoteJob;

/*
 * read_helper_output reads what the job's command wrote (non-blocking);
 * keeps the first bytes of its stdout and of its stderr, and all of both
 * goes to the attempt's output.
 */
static void
read_helper_output(Job *job)
{
	RemoteJob  *rj = (RemoteJob *) job;
	int		   *fds[2] = {&rj->out_fd, &rj->err_fd};
	char	   *bufs[2] = {rj->out, rj->err};
	size_t	   *lens[2] = {&rj->out_len, &rj->err_len};
	size_t		caps[2] = {sizeof(rj->out), sizeof(rj->err)};
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
			attempt_output(job, chunk, (size_t) n);
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
 * write_payload_file writes the job's payload into a file of its own in
 * the checkpoint root (mode 0600, which only the agent's user may enter),
 * for the start command: its stdin and QUOTA_SCHED_PAYLOAD_FILE.  The file
 * is removed when the start command has ended (remove_payload_file).
 * False if it could not be written (logged).
 */
static bool
write_payload_file(Job *job, const char *payload)
{
	RemoteJob  *rj = (RemoteJob *) job;
	size_t		len = strlen(payload),
				off = 0;
	int			fd;

	snprintf(rj->payload_file, sizeof(rj->payload_file), "%s/.payload-job-%s-XXXXXX",
			 opts.checkpoint_root, job->id_text);
	fd = mkstemp(rj->payload_file);
	if (fd < 0)
	{
		log_event("error", "command_not_started", job, "start command: mkstemp(\"%s\"): %s",
				  rj->payload_file, strerror(errno));
		rj->payload_file[0] = '\0';
		return false;
	}
	while (off < len)
	{
		ssize_t		n = write(fd, payload + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
	}
	if (off < len || close(fd) != 0)
	{
		log_event("error", "command_not_started", job, "start command: could not write \"%s\": %s",
				  rj->payload_file, strerror(errno));
		unlink(rj->payload_file);
		rj->payload_file[0] = '\0';
		return false;
	}
	return true;
}

/* remove_payload_file: the start command has ended (or will not run): its payload file goes */
static void
remove_payload_file(Job *job)
{
	RemoteJob  *rj = (RemoteJob *) job;

	if (rj->payload_file[0])
		unlink(rj->payload_file);
	rj->payload_file[0] = '\0';
}

/*
 * exec_helper, in the forked child: stdout and stderr to the pipes, the
 * job's payload (start: its file on stdin, QUOTA_SCHED_PAYLOAD_FILE, and
 * QUOTA_SCHED_PAYLOAD when it fits Linux's limit per string) or its handle
 * (status, stop) in the environment, then /bin/sh -c CMD.
 */
static void
exec_helper(const Job *job, const char *cmd, const char *payload, int outp[2], int errp[2])
{
	const RemoteJob *rj = (const RemoteJob *) job;
	int			fd;

	child_setup(job);
	dup2(outp[1], STDOUT_FILENO);
	dup2(errp[1], STDERR_FILENO);
	close(outp[0]);
	close(outp[1]);
	close(errp[0]);
	close(errp[1]);
	unsetenv("QUOTA_SCHED_PAYLOAD");
	unsetenv("QUOTA_SCHED_PAYLOAD_FILE");
	if (payload && rj->payload_file[0] && (fd = open(rj->payload_file, O_RDONLY)) >= 0)
	{
		dup2(fd, STDIN_FILENO);
		close(fd);
		setenv("QUOTA_SCHED_PAYLOAD_FILE", rj->payload_file, 1);
	}
	if (payload && strlen("QUOTA_SCHED_PAYLOAD=") + strlen(payload) + 1 <= MAX_ARG_BYTES)
		setenv("QUOTA_SCHED_PAYLOAD", payload, 1);
	if (rj->started)
		setenv("QUOTA_SCHED_HANDLE", rj->handle, 1);
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
 * _ATTEMPT, _INSTANCE_COUNT, _CHECKPOINT_DIR, _AGENT, and the payload
 * (start: exec_helper) or QUOTA_SCHED_HANDLE (status, stop).  False if it
 * could not be started (logged).
 */
static bool
start_helper(Job *job, Helper which, const char *payload)
{
	RemoteJob  *rj = (RemoteJob *) job;
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
	rj->helper = which;
	rj->helper_pid = pid;
	rj->helper_deadline = now_mono() + opts.cmd_timeout;
	rj->helper_killed = false;
	rj->helper_cancelled = false;
	rj->out_fd = outp[0];
	rj->err_fd = errp[0];
	rj->out_len = rj->err_len = 0;
	rj->out[0] = rj->err[0] = '\0';
	if (which != HELPER_STATUS)
		attempt_note(job, "the %s command runs (pid %d)", helper_names[which], (int) pid);
	return true;
}

/* kill_helper kills the job's running command (its process group) */
static void
kill_helper(Job *job)
{
	RemoteJob  *rj = (RemoteJob *) job;

	signal_group(job, rj->helper_pid, SIGKILL);
}

/* remote_ended: the remote job has ended (or is given up): what to tell the database */
static void remote_ended(Job *job, const char *state, int exit_code, bool has_exit_code,
						 const char *fmt,...) PRINTF_LIKE(5, 6);

static void
remote_ended(Job *job, const char *state, int exit_code, bool has_exit_code, const char *fmt,...)
{
	RemoteJob  *rj = (RemoteJob *) job;
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
			  rj->started ? rj->handle : "(not started)", state,
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
	RemoteJob  *rj = (RemoteJob *) job;
	char		errline[300];

	if (rj->helper_killed)
		snprintf(buf, cap, "did not finish within %g s (--cmd-timeout): killed", opts.cmd_timeout);
	else
		describe_wait_status(status, buf, cap);
	last_line(rj->err, errline, sizeof(errline));
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
	RemoteJob  *rj = (RemoteJob *) job;
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
						 rj->handle);
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
	RemoteJob  *rj = (RemoteJob *) job;

	if (ok && line[0])
	{
		snprintf(rj->handle, sizeof(rj->handle), "%s", line);
		rj->started = true;
		job->handle = rj->handle;
		job->tell_attempt = true;	/* the database is told the handle */
		rj->next_status = now + opts.status_interval;
		log_event("info", "job_started", job, "remote handle %s, %d instance(s), checkpoints in %s",
				  rj->handle, job->instances, job->checkpoint_dir);
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
	RemoteJob  *rj = (RemoteJob *) job;

	rj->next_status = now + (job->term_at > 0 && opts.status_interval > 1 ? 1 : opts.status_interval);
	if (!ok)
		log_event("warning", rj->helper_killed ? "status_timeout" : "status_failed", job,
				  "the status command of %s %s; asking again in %g s", rj->handle, how,
				  rj->next_status - now);
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
	RemoteJob  *rj = (RemoteJob *) job;

	(void) line;
	if (rj->stop_deadline == 0)
		rj->stop_deadline = now + opts.grace;
	rj->next_status = now;
	if (ok)
	{
		rj->stop_ok = true;
		log_event("info", "stop_sent", job, "the stop command of %s succeeded; waiting up to %.1f s for the remote job to stop",
				  rj->handle, rj->stop_deadline - now);
	}
	else
	{
		rj->stop_retry_at = now + 1;
		log_event("warning", "stop_failed", job, "the stop command of %s failed (%s); trying again in 1 s",
				  rj->handle, how);
	}
}

/* log_command_stderr: what the job's command said on stderr goes to the log, a line an event */
static void
log_command_stderr(Job *job, Helper which)
{
	RemoteJob  *rj = (RemoteJob *) job;
	const char *p;

	for (p = rj->err; *p;)
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
static void
helper_ended(Job *job, int status)
{
	RemoteJob  *rj = (RemoteJob *) job;
	Helper		which = rj->helper;
	bool		ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !rj->helper_killed;
	char		how[700];
	char		line[1024];
	double		now = now_mono();

	read_helper_output(job);
	if (rj->out_fd >= 0)
		close(rj->out_fd);
	if (rj->err_fd >= 0)
		close(rj->err_fd);
	rj->out_fd = rj->err_fd = -1;
	rj->helper = HELPER_NONE;
	rj->helper_pid = 0;
	log_command_stderr(job, which);
	if (which == HELPER_START)
		remove_payload_file(job);
	describe_helper_end(job, status, how, sizeof(how));
	first_line(rj->out, line, sizeof(line));
	if (rj->helper_cancelled)
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
static void
remote_tick(Job *job, double now)
{
	RemoteJob  *rj = (RemoteJob *) job;

	if (!job->alive)
		return;
	if (rj->helper_pid > 0)
	{
		if (!rj->helper_killed && now >= rj->helper_deadline)
		{
			rj->helper_killed = true;
			kill_helper(job);
			log_event("warning", "command_timeout", job, "the %s command ran for %g s (--cmd-timeout): killed",
					  helper_names[rj->helper], opts.cmd_timeout);
		}
		return;
	}
	if (!rj->started)
		return;
	if (job->term_at > 0 && rj->stop_deadline > 0 &&
		(now >= rj->stop_deadline || kill_at_once()))
	{
		log_event("warning", "stop_unconfirmed", job,
				  "the remote job %s has not said it stopped %s: taken as stopped",
				  rj->handle, kill_at_once() ? "(a second signal)" : "within the grace period");
		remote_ended(job, "STOPPED", 0, false, NULL);
		return;
	}
	if (job->term_at > 0 && !rj->stop_ok && now >= rj->stop_retry_at)
	{
		/* the stop command, at once, then again each second until it succeeds */
		if (!start_helper(job, HELPER_STOP, NULL))
		{
			rj->stop_retry_at = now + 1;
			if (rj->stop_deadline == 0)
				rj->stop_deadline = now + opts.grace;
		}
	}
	else if (job->term_at > 0 && rj->stop_deadline == 0)
		return;					/* not yet asked to stop: no status before */
	else if (now >= rj->next_status)
	{
		if (!start_helper(job, HELPER_STATUS, NULL))
			rj->next_status = now + opts.status_interval;
	}
}

/* remote_wake: when remote_tick has something to do for the job (1e300: nothing) */
static double
remote_wake(const Job *job)
{
	const RemoteJob *rj = (const RemoteJob *) job;
	double		t = 1e300;

	if (!job->alive)
		return t;
	if (rj->helper_pid > 0)
		return rj->helper_killed ? t : rj->helper_deadline;
	if (!rj->started)
		return t;
	if (job->term_at > 0)
	{
		if (!rj->stop_ok && rj->stop_retry_at < t)
			t = rj->stop_retry_at;
		if (rj->stop_deadline == 0)
			return t;
		if (rj->stop_deadline < t)
			t = rj->stop_deadline;
	}
	return rj->next_status < t ? rj->next_status : t;
}

/*
 * start_remote: the job's checkpoint directory, then its start command.  The
 * job holds its instances from now on.
 */
static void
start_remote(Job *job, const char *payload)
{
	RemoteJob  *rj = (RemoteJob *) job;

	if (!prepare_checkpoint_dir(job))
		return;
	if (!job->log.opened)		/* opened while the part waited for its peers */
		open_attempt_log(job);
	if (!write_payload_file(job, payload) || !start_helper(job, HELPER_START, payload))
	{
		remove_payload_file(job);
		close_attempt_log(job);
		job->action = ACT_RELEASE;
		snprintf(job->reason, sizeof(job->reason), "agent %s could not run its start command",
				 opts.agent);
		agent_fault();
		return;
	}
	agent_fault_cleared();
	job->alive = true;
	log_event("info", "job_starting", job, "start command running (pid %d)", (int) rj->helper_pid);
}

/* remote_new_job: a RemoteJob, its descriptors closed.  NULL if out of memory. */
static Job *
remote_new_job(void)
{
	RemoteJob  *rj = calloc(1, sizeof(RemoteJob));

	if (rj == NULL)
		return NULL;
	rj->out_fd = -1;
	rj->err_fd = -1;
	return &rj->job;
}

/* remote_start: the start command, with the job's payload (its command is not the agent's to run) */
static void
remote_start(Job *job, const ClaimedJob *claimed)
{
	start_remote(job, claimed->payload);
}

/*
 * remote_stop: the stop command goes first (remote_tick runs it once the
 * start command has given a handle); a status command that runs is moot.
 */
static void
remote_stop(Job *job, const char *why)
{
	RemoteJob  *rj = (RemoteJob *) job;

	if (rj->helper == HELPER_STATUS && rj->helper_pid > 0)
	{
		rj->helper_cancelled = true;
		kill_helper(job);
	}
	log_event("info", "job_stopping", job, "%s: the stop command for %s%s, then up to %g s for it to stop",
			  why, rj->started ? rj->handle : "the remote job",
			  rj->started ? "" : " once the start command has ended", opts.grace);
}

/* remote_reaped: whether pid was the job's command; if so, its end */
static bool
remote_reaped(Job *job, pid_t pid, int status)
{
	if (((RemoteJob *) job)->helper_pid != pid)
		return false;
	helper_ended(job, status);
	return true;
}

/* remote_poll_fds: the running command's stdout and stderr, read as they come */
static int
remote_poll_fds(const Job *job, struct pollfd *fds)
{
	const RemoteJob *rj = (const RemoteJob *) job;
	int			n = 0;

	if (rj->out_fd >= 0)
	{
		fds[n].fd = rj->out_fd;
		fds[n++].events = POLLIN;
	}
	if (rj->err_fd >= 0)
	{
		fds[n].fd = rj->err_fd;
		fds[n++].events = POLLIN;
	}
	return n;
}

/* remote_input: what the running command wrote */
static void
remote_input(Job *job)
{
	if (((RemoteJob *) job)->helper_pid > 0)
		read_helper_output(job);
}

/* remote_free_job: a command still running for the job is not waited for any more */
static void
remote_free_job(Job *job)
{
	RemoteJob  *rj = (RemoteJob *) job;

	if (rj->out_fd >= 0)
		close(rj->out_fd);
	if (rj->err_fd >= 0)
		close(rj->err_fd);
	remove_payload_file(job);
	free(rj);
}

const LaunchOps remote_launch_ops = {
	.new_job = remote_new_job, .start = remote_start, .stop = remote_stop,
	.tick = remote_tick, .wake = remote_wake, .reaped = remote_reaped,
	.poll_fds = remote_poll_fds, .input = remote_input, .free_job = remote_free_job
};
