/*
 * agent/quota_sched_agent.c: quota-sched-agent, the launcher agent of
 * quota_sched (issue 12), on libpq.
 *
 * It runs the agent loop of the README's "Launcher agents" for one job
 * queue: it LISTENs on quota_sched_dispatch and quota_sched_stop, claims up
 * to its free instances on a notification and at each heartbeat (a
 * notification is a wake-up only: what it does always comes from claim and
 * heartbeat), runs each claimed job's payload->'command' (a JSON array of
 * strings, an argv) as a child process in a process group of its own, and
 * reports how it ended.  A stop (heartbeat's stop_reason) sends SIGTERM to
 * the job's process group, SIGKILL after the grace period, and reports
 * STOPPED.  The heartbeat also reconciles: a job the agent runs that the
 * database no longer gives it is killed, a job the database gives it that
 * it does not run is released.
 *
 * One thread: poll() on the connection's socket and on a self-pipe written
 * by the handlers of SIGCHLD, SIGTERM and SIGINT.  A lost connection is
 * retried with exponential backoff (1 s doubling to 30 s) while the jobs go
 * on running; what could not be told to the database meanwhile (a job's end)
 * is told after the reconnection, and the first heartbeat reconciles.  A job
 * whose lease ran out while the database could not be reached is killed
 * (another agent may run it by now).  SIGTERM or SIGINT: stop the children
 * (SIGTERM, grace, SIGKILL), release their jobs (no attempt is counted) and
 * exit 0; a second one kills the children at once.
 *
 * External launchers (--start-cmd, --status-cmd, --stop-cmd): instead of a
 * local child, a job runs on another system (a cloud training service, a
 * batch system).  The start command (run with /bin/sh -c, the job's facts
 * and payload in its environment, never substituted into the command line)
 * starts it there and prints a handle; the status command, run every
 * --status-interval with that handle, says RUNNING, SUCCEEDED, FAILED or
 * STOPPED; the stop command asks the other system to stop it, after which
 * the status is polled until it has stopped or the grace period has passed.
 * These commands are child processes too, one at a time per job, watched
 * by the same loop and killed after --cmd-timeout: a command that hangs
 * stalls nothing.  The handle lives in the agent's memory only.
 *
 * See --help for the options, and the README's "The launcher agent".
 */
#include "db.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

pid_t		agent_pid;		/* this process: its children check they outlive it */

/* ------------------------------------------------------------------------
 * Jobs the agent holds
 * ---------------------------------------------------------------------- */
static const char *const helper_names[] = {"", "start", "status", "stop"};


/* ------------------------------------------------------------------------
 * State of the loop
 * ---------------------------------------------------------------------- */
static double next_heartbeat = 0;
bool		want_claim = false;
bool		want_heartbeat = false;
static bool shutting_down = false;

static int	self_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_child = 0;
static volatile sig_atomic_t got_term = 0;

/* ------------------------------------------------------------------------
 * Signals: the handlers only set a flag and write to the self-pipe.
 * ---------------------------------------------------------------------- */
static void
wake_self(void)
{
	int			saved = errno;
	char		c = 0;

	if (write(self_pipe[1], &c, 1) < 0)
	{
		/* full: the loop wakes anyway */
	}
	errno = saved;
}

static void
on_sigchld(int sig)
{
	(void) sig;
	got_child = 1;
	wake_self();
}

static void
on_sigterm(int sig)
{
	(void) sig;
	got_term++;
	wake_self();
}

static void
setup_signals(void)
{
	struct sigaction sa;
	int			i;

	if (pipe(self_pipe) != 0)
		fatal("pipe: %s", strerror(errno));
	for (i = 0; i < 2; i++)
	{
		fcntl(self_pipe[i], F_SETFD, FD_CLOEXEC);
		fcntl(self_pipe[i], F_SETFL, fcntl(self_pipe[i], F_GETFL) | O_NONBLOCK);
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sa.sa_handler = on_sigchld;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_sigterm;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void
drain_self_pipe(void)
{
	char		buf[64];

	while (read(self_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/* ------------------------------------------------------------------------
 * Children
 * ---------------------------------------------------------------------- */
static void kill_helper(Job *job);

/* stop a child: SIGTERM now, SIGKILL after the grace period */
static void
begin_stop(Job *job, StopKind kind, const char *why)
{
	if (!job->alive)
		return;
	if (job->stop == STOP_NONE || kind == STOP_LOST)
		job->stop = kind;
	if (job->term_at == 0 && job->remote)
	{
		job->term_at = now_mono();
		/* a status command that runs is moot: the stop command goes first */
		if (job->helper == HELPER_STATUS && job->helper_pid > 0)
		{
			job->helper_cancelled = true;
			kill_helper(job);
		}
		log_event("info", "job_stopping", job, "%s: the stop command for %s%s, then up to %g s for it to stop",
				  why, job->started ? job->handle : "the remote job",
				  job->started ? "" : " once the start command has ended", opts.grace);
	}
	else if (job->term_at == 0)
	{
		job->term_at = now_mono();
		signal_group(job, job->pid, SIGTERM);
		log_event("info", "job_stopping", job, "%s: SIGTERM to process group %d, SIGKILL in %g s",
				  why, (int) job->pid, opts.grace);
	}
}

/*
 * start_job forks and execs the job's command.  An exec that fails is told
 * through a close-on-exec pipe: the job fails with the reason.
 */
static void
start_job(Job *job, const char *argv_text)
{
	char	  **argv = split_argv(argv_text);
	char		err[PATH_MAX + 200];
	char		line[1024];
	int			errpipe[2];
	int			child_errno = 0;
	ssize_t		n;
	pid_t		pid;

	if (argv == NULL || argv[0] == NULL)
	{
		set_report(job, "FAILED", 0, false, "the job's command could not be read");
		free_argv(argv);
		return;
	}
	snprintf(job->checkpoint_dir, sizeof(job->checkpoint_dir), "%s/job-%s",
			 opts.checkpoint_root, job->id_text);
	if (ensure_private_dir(job->checkpoint_dir, err, sizeof(err)) != 0)
	{
		job->checkpoint_dir[0] = '\0';
		log_event("error", "job_not_started", job, "%s", err);
		set_report(job, "FAILED", 0, false, "agent %s: %s", opts.agent, err);
		free_argv(argv);
		return;
	}
	if (pipe(errpipe) != 0)
	{
		log_event("error", "job_not_started", job, "pipe: %s", strerror(errno));
		job->action = ACT_RELEASE;
		snprintf(job->reason, sizeof(job->reason), "agent %s could not start it: %s",
				 opts.agent, strerror(errno));
		free_argv(argv);
		return;
	}
	fcntl(errpipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(errpipe[1], F_SETFD, FD_CLOEXEC);

	pid = fork();
	if (pid == 0)
	{
		/* the child: its own process group, default signals, the job's env */
		close(errpipe[0]);
		child_setup(job);
		/* a user's job gets none of the agent's own database credentials */
		unsetenv("PGPASSWORD");
		unsetenv("PGPASSFILE");
		unsetenv("PGSERVICE");
		unsetenv("PGSERVICEFILE");
		unsetenv("PGSSLKEY");
		execvp(argv[0], argv);
		child_errno = errno;
		if (write(errpipe[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(errpipe[1]);
	describe_argv(argv, line, sizeof(line));
	if (pid < 0)
	{
		close(errpipe[0]);
		log_event("error", "job_not_started", job, "fork: %s", strerror(errno));
		job->action = ACT_RELEASE;
		snprintf(job->reason, sizeof(job->reason), "agent %s could not start it: fork: %s",
				 opts.agent, strerror(errno));
		free_argv(argv);
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
		free_argv(argv);
		return;
	}
	job->pid = pid;
	job->alive = true;
	log_event("info", "job_started", job, "pid %d, %d instance(s), checkpoints in %s: %s",
			  (int) pid, job->instances, job->checkpoint_dir, line);
	free_argv(argv);
}

/* ------------------------------------------------------------------------
 * External launchers: the start, status and stop commands
 * ---------------------------------------------------------------------- */

/* reads what a command wrote (non-blocking); keeps the first bytes of each */
static void
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

/* kills the job's running command (its process group) */
static void
kill_helper(Job *job)
{
	if (job->helper_pid > 0 && kill(-job->helper_pid, SIGKILL) != 0 && errno != ESRCH)
		log_event("warning", "kill_failed", job, "kill(-%d, SIGKILL): %s",
				  (int) job->helper_pid, strerror(errno));
}

/* the remote job has ended (or is given up): what to tell the database */
static void
remote_ended(Job *job, const char *state, int exit_code, bool has_exit_code, const char *fmt,...) PRINTF_LIKE(5, 6);

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

/* how a command ended, for the log and a reason */
static void
describe_helper_end(Job *job, int status, char *buf, size_t cap)
{
	char		errline[300];

	if (job->helper_killed)
		snprintf(buf, cap, "did not finish within %g s (--cmd-timeout): killed", opts.cmd_timeout);
	else if (WIFEXITED(status))
		snprintf(buf, cap, "exit code %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status) && signal_name(WTERMSIG(status)))
		snprintf(buf, cap, "killed by signal %s", signal_name(WTERMSIG(status)));
	else
		snprintf(buf, cap, "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	last_line(job->err, errline, sizeof(errline));
	if (errline[0])
	{
		size_t		len = strlen(buf);

		append(buf, cap, &len, ": %s", errline);
	}
}

/* what the status command printed: RUNNING, SUCCEEDED, FAILED [CODE] [REASON], STOPPED */
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

/* one of the job's commands has ended */
static void
helper_ended(Job *job, int status)
{
	Helper		which = job->helper;
	bool		ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !job->helper_killed;
	char		how[700];
	char		line[1024];
	double		now = now_mono();
	const char *p;

	read_helper_output(job);
	if (job->out_fd >= 0)
		close(job->out_fd);
	if (job->err_fd >= 0)
		close(job->err_fd);
	job->out_fd = job->err_fd = -1;
	job->helper = HELPER_NONE;
	job->helper_pid = 0;
	/* what it said on stderr goes to the log */
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
	describe_helper_end(job, status, how, sizeof(how));
	first_line(job->out, line, sizeof(line));
	if (job->helper_cancelled)
		return;

	switch (which)
	{
		case HELPER_START:
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
			break;
		case HELPER_STATUS:
			job->next_status = now + (job->term_at > 0 && opts.status_interval > 1 ? 1 : opts.status_interval);
			if (!ok)
				log_event("warning", job->helper_killed ? "status_timeout" : "status_failed", job,
						  "the status command of %s %s; asking again in %g s", job->handle, how,
						  job->next_status - now);
			else
				status_answer(job, line);
			break;
		case HELPER_STOP:
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

/* when remote_tick has something to do for the job (1e300: nothing) */
static double
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
static void
start_remote(Job *job, const char *payload)
{
	char		err[PATH_MAX + 200];

	job->remote = true;
	snprintf(job->checkpoint_dir, sizeof(job->checkpoint_dir), "%s/job-%s",
			 opts.checkpoint_root, job->id_text);
	if (ensure_private_dir(job->checkpoint_dir, err, sizeof(err)) != 0)
	{
		job->checkpoint_dir[0] = '\0';
		log_event("error", "job_not_started", job, "%s", err);
		set_report(job, "FAILED", 0, false, "agent %s: %s", opts.agent, err);
		return;
	}
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

/* what a child's exit status means for its job */
static void
child_ended(Job *job, int status)
{
	char		how[128];
	bool		exited = WIFEXITED(status);
	int			code = exited ? WEXITSTATUS(status) : 0;

	job->alive = false;
	/* what the job left behind in its process group goes with it */
	if (kill(-job->pid, SIGKILL) != 0 && errno != ESRCH)
		log_event("warning", "kill_failed", job, "kill(-%d, SIGKILL): %s", (int) job->pid,
				  strerror(errno));
	if (exited)
		snprintf(how, sizeof(how), "exit code %d", code);
	else if (WIFSIGNALED(status) && signal_name(WTERMSIG(status)))
		snprintf(how, sizeof(how), "killed by signal %s", signal_name(WTERMSIG(status)));
	else
		snprintf(how, sizeof(how), "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	log_event("info", "job_exited", job, "pid %d: %s", (int) job->pid, how);

	settle(job, exited && code == 0 ? "SUCCEEDED" : "FAILED", exited ? code : 0, exited,
		   exited && code == 0 ? "" : how);
}

static void
reap_children(void)
{
	int			status;
	pid_t		pid;

	got_child = 0;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		int			i;

		for (i = 0; i < njobs; i++)
		{
			if (jobs[i]->alive && jobs[i]->pid == pid)
			{
				child_ended(jobs[i], status);
				break;
			}
			if (jobs[i]->helper_pid == pid)
			{
				helper_ended(jobs[i], status);
				break;
			}
		}
	}
}

/* SIGKILL after the grace period; kill jobs whose lease surely ran out */
static void
enforce_deadlines(double now)
{
	int			i;

	for (i = 0; i < njobs; i++)
	{
		Job		   *job = jobs[i];

		if (!job->alive)
			continue;
		if (job->stop != STOP_LOST && now >= job->lease_deadline)
			begin_stop(job, STOP_LOST, "its lease ran out without a heartbeat");
		if (job->remote)
		{
			remote_tick(job, now);
			continue;
		}
		if (job->term_at > 0 && !job->killed && (now >= job->term_at + opts.grace || got_term > 1))
		{
			job->killed = true;
			signal_group(job, job->pid, SIGKILL);
			log_event("info", "job_killed", job, "SIGKILL to process group %d", (int) job->pid);
		}
	}
}

/* ------------------------------------------------------------------------
 * The agent's functions
 * ---------------------------------------------------------------------- */

/*
 * refused tells whether the database's error about a report or release
 * says the job is not this agent's to act on (any more): no such job,
 * another login's, not held by this agent, a bad argument.  Any other
 * error (a row locked by a user's transaction, a deadlock, a cancelled
 * statement, ...) may pass: the agent tries again.
 */
static bool
refused(const char *sqlstate)
{
	return strcmp(sqlstate, "02000") == 0 || strcmp(sqlstate, "42501") == 0 ||
		strcmp(sqlstate, "55000") == 0 || strcmp(sqlstate, "22023") == 0;
}

/* tells the database what became of the jobs whose children ended */
static void
flush_actions(void)
{
	int			i;

	for (i = 0; i < njobs && conn != NULL; i++)
	{
		Job		   *job = jobs[i];
		PGresult   *res = NULL;
		int			rc;
		char		code[16];

		if (job->action == ACT_NONE || job->retry_at > now_mono())
			continue;
		if (job->action == ACT_DROP)
		{
			log_event("info", "job_dropped", job, "no longer held by this agent; nothing reported");
			remove_job(job);
			i--;
			continue;
		}
		make_valid_utf8(job->reason);
		if (job->action == ACT_REPORT)
		{
			const char *params[6] = {job->id_text, opts.agent, job->state,
				job->reason[0] ? job->reason : NULL, job->attempt_text, NULL};

			if (job->has_exit_code)
			{
				snprintf(code, sizeof(code), "%d", job->exit_code);
				params[5] = code;
			}
			rc = db_exec(STMT_REPORT, params, &res, job);
		}
		else
		{
			const char *params[3] = {job->id_text, opts.agent, job->reason};

			rc = db_exec(STMT_RELEASE, params, &res, job);
		}
		if (rc == DB_LOST)
			return;				/* told after the reconnection */
		if (rc == DB_OK)
		{
			const char *state = PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";

			if (job->action == ACT_REPORT)
			{
				/*
				 * Its instances are free: claim now.  A job dispatched while
				 * they were busy had its notification then, and may send none
				 * again.
				 */
				want_claim = true;
				log_event("info", "job_reported", job, "reported %s%s%s; the job is now %s",
						  job->state, job->reason[0] ? ": " : "", job->reason, state);
				jobs_done++;
			}
			else
				log_event("info", "job_released", job, "released (%s); the job is now %s",
						  job->reason, state);
			if (strcmp(state, "SUCCEEDED") == 0 || strcmp(state, "FAILED") == 0)
				remove_checkpoint_dir(job);
			PQclear(res);
		}
		else if (!refused(last_sqlstate))
		{
			/*
			 * Not a refusal: keep the job (the heartbeat then neither
			 * releases it nor lets its lease run out) and try again, after
			 * 1, 2, ... up to 10 s; from the third try without its reason,
			 * in case the reason is what the server will not take.
			 */
			job->tries++;
			if (job->tries >= 3)
				job->reason[0] = '\0';
			job->retry_at = now_mono() + (job->tries < 10 ? job->tries : 10);
			log_event("warning", "job_retry", job, "the %s failed (SQLSTATE %s): trying again in %d s",
					  job->action == ACT_REPORT ? "report" : "release", last_sqlstate,
					  job->tries < 10 ? job->tries : 10);
			continue;
		}
		else
			log_event("warning", "job_forgotten", job,
					  "the database refused the %s: the job is no longer this agent's",
					  job->action == ACT_REPORT ? "report" : "release");
		remove_job(job);
		i--;
	}
}

static void
release_unknown(const char *id_text)
{
	const char *params[3] = {id_text, opts.agent, NULL};
	char		reason[200];
	PGresult   *res;

	snprintf(reason, sizeof(reason), "agent %s does not run it (restarted?)", opts.agent);
	params[2] = reason;
	if (db_exec(STMT_RELEASE, params, &res, NULL) == DB_OK)
	{
		log_event("info", "job_released", NULL,
				  "job %s: held by this agent in the database but not run here: released",
				  id_text);
		PQclear(res);
	}
}

static void
do_heartbeat(void)
{
	char		lease[32];
	const char *params[2] = {opts.agent, lease};
	PGresult   *res;
	double		t0 = now_mono();
	int			i,
				n;
	char	  **unknown;
	int			nunknown = 0;

	want_heartbeat = false;
	snprintf(lease, sizeof(lease), "%.3f seconds", opts.lease);
	if (db_exec(STMT_HEARTBEAT, params, &res, NULL) != DB_OK)
	{
		next_heartbeat = now_mono() + opts.heartbeat;
		return;
	}
	next_heartbeat = t0 + opts.heartbeat;
	for (i = 0; i < njobs; i++)
		jobs[i]->seen = false;
	n = PQntuples(res);
	unknown = calloc(n + 1, sizeof(char *));
	for (i = 0; i < n; i++)
	{
		int64_t		id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
		bool		stop = !PQgetisnull(res, i, 1);
		Job		   *job = find_job(id);

		if (job == NULL)
		{
			/*
			 * Released only once no attempt of it runs here: one being
			 * killed (its lease ran out while the database could not be
			 * reached, and this heartbeat renewed it) must be gone before
			 * the job may run elsewhere.  A later heartbeat releases it.
			 */
			if (unknown && !still_running(id))
				unknown[nunknown++] = strdup(PQgetvalue(res, i, 0));
			continue;
		}
		job->seen = true;
		/*
		 * the lease the job has now, as the server counts it: a job whose
		 * row another transaction held was not renewed
		 */
		job->lease_deadline = PQgetisnull(res, i, 2) ? t0 + opts.lease
			: t0 + strtod(PQgetvalue(res, i, 2), NULL);
		if (stop && job->alive && job->stop == STOP_NONE)
		{
			char		why[300];

			snprintf(why, sizeof(why), "stop requested (%s)", PQgetvalue(res, i, 1));
			begin_stop(job, STOP_REQUESTED, why);
		}
	}
	PQclear(res);
	/* jobs it runs that the database no longer gives it */
	for (i = 0; i < njobs; i++)
		if (jobs[i]->alive && !jobs[i]->seen && jobs[i]->stop != STOP_LOST)
			begin_stop(jobs[i], STOP_LOST, "the database no longer gives this job to the agent");
	/* jobs the database gives it that it does not run */
	for (i = 0; i < nunknown; i++)
	{
		if (unknown[i] && conn)
			release_unknown(unknown[i]);
		free(unknown[i]);
	}
	free(unknown);
	want_claim = true;
}

static void
do_claim(void)
{
	char		lease[32];
	char		free_text[16];

	want_claim = false;
	snprintf(lease, sizeof(lease), "%.3f seconds", opts.lease);
	for (;;)
	{
		const char *params[5] = {opts.agent, opts.queue, opts.unit, free_text, lease};
		int			free_instances = (int) (opts.instances - busy_instances());
		PGresult   *res;
		int			i,
					n;
		double		t0 = now_mono();

		if (free_instances <= 0 || shutting_down ||
			(opts.exit_after > 0 && jobs_done + njobs >= opts.exit_after))
			return;
		snprintf(free_text, sizeof(free_text), "%d", free_instances);
		if (db_exec(STMT_CLAIM, params, &res, NULL) != DB_OK)
			return;
		n = PQntuples(res);
		for (i = 0; i < n; i++)
		{
			Job		   *old = find_job(strtoll(PQgetvalue(res, i, 0), NULL, 10));
			Job		   *job;

			/*
			 * Claimed again while an attempt of it is still here: that one
			 * was taken away (released by an admin, a lease that ran out)
			 * before a heartbeat said so.  It is killed and forgotten.
			 */
			if (old && old->alive)
				begin_stop(old, STOP_LOST, "claimed again: this attempt is no longer the agent's");
			else if (old)
				old->action = ACT_DROP;
			job = add_job(strtoll(PQgetvalue(res, i, 0), NULL, 10),
									  atoi(PQgetvalue(res, i, 2)),
									  atoi(PQgetvalue(res, i, 1)));

			job->lease_deadline = t0 + opts.lease;
			if (opts.pickup_log)
				fprintf(opts.pickup_log, "%" PRId64 " %lld\n", job->id, now_real_us());
			log_event("info", "job_claimed", job, "claimed %d instance(s)", job->instances);
			if (opts.noop)
				set_report(job, "SUCCEEDED", 0, true, NULL);
			else if (opts.start_cmd)
				start_remote(job, PQgetvalue(res, i, 5));
			else if (!PQgetisnull(res, i, 3))
			{
				log_event("info", "job_not_runnable", job, "%s", PQgetvalue(res, i, 3));
				set_report(job, "FAILED", 0, false, "%s", PQgetvalue(res, i, 3));
			}
			else
				start_job(job, PQgetvalue(res, i, 4));
		}
		PQclear(res);
		flush_actions();
		if (n == 0)
			return;
	}
}

static void
begin_shutdown(void)
{
	int			i;

	shutting_down = true;
	log_event("info", "agent_stopping", NULL,
			  "stopping %d job(s) and releasing them", alive_children());
	for (i = 0; i < njobs; i++)
		begin_stop(jobs[i], STOP_SHUTDOWN, "the agent shuts down");
}

/* ------------------------------------------------------------------------
 * The loop
 * ---------------------------------------------------------------------- */
int
main(int argc, char **argv)
{
	agent_pid = getpid();
	parse_options(argc, argv);
	setup_signals();
	log_event("info", "agent_started", NULL,
			  "queue %s, unit %s, %ld instance(s), lease %g s, heartbeat %g s, grace %g s, "
			  "checkpoints in %s%s%s",
			  opts.queue, opts.unit ? opts.unit : "(any)", opts.instances, opts.lease,
			  opts.heartbeat, opts.grace, opts.checkpoint_root, opts.noop ? ", noop" : "",
			  opts.start_cmd ? ", jobs run by the external launcher (--start-cmd)" : "");

	for (;;)
	{
		double		now;
		double		wake;
		struct pollfd *fds;
		int			nfds = 1;
		int			timeout_ms;
		int			i;

		drain_self_pipe();
		if (got_child)
			reap_children();
		if (got_term && !shutting_down)
			begin_shutdown();
		now = now_mono();
		if (conn == NULL && shutting_down && alive_children() == 0 && njobs > 0)
		{
			/* its children are gone: one last try to tell the database */
			try_connect();
			if (conn == NULL)
				break;
		}
		else if (conn == NULL && now >= reconnect_at)
			try_connect();
		if (conn)
			flush_actions();
		if (conn && (want_heartbeat || now_mono() >= next_heartbeat))
			do_heartbeat();
		if (conn && want_claim)
			do_claim();
		enforce_deadlines(now_mono());
		if (conn)
			flush_actions();

		if (njobs == 0 && (shutting_down || (opts.exit_after > 0 && jobs_done >= opts.exit_after)))
			break;
		/* a notification that came with a result: act on it now */
		if (conn && (want_claim || want_heartbeat))
			continue;

		/* sleep until a notification, a signal, or the next deadline */
		now = now_mono();
		wake = conn ? next_heartbeat : reconnect_at;
		for (i = 0; i < njobs; i++)
		{
			if (jobs[i]->alive && !jobs[i]->remote && jobs[i]->term_at > 0 && !jobs[i]->killed &&
				jobs[i]->term_at + opts.grace < wake)
				wake = jobs[i]->term_at + opts.grace;
			if (jobs[i]->alive && jobs[i]->stop != STOP_LOST && jobs[i]->lease_deadline < wake)
				wake = jobs[i]->lease_deadline;
			if (jobs[i]->remote && remote_wake(jobs[i]) < wake)
				wake = remote_wake(jobs[i]);
			if (jobs[i]->action != ACT_NONE && jobs[i]->retry_at > 0 && jobs[i]->retry_at < wake)
				wake = jobs[i]->retry_at;
		}
		/* at most a minute (a lease of months must not overflow the int) */
		timeout_ms = wake <= now ? 0 : wake - now >= 60 ? 60000 : (int) ((wake - now) * 1000) + 1;
		fds = calloc(2 + 2 * njobs, sizeof(struct pollfd));
		if (fds == NULL)
			fatal("out of memory");
		fds[0].fd = self_pipe[0];
		fds[0].events = POLLIN;
		if (conn)
		{
			fds[1].fd = PQsocket(conn);
			fds[1].events = POLLIN;
		}
		else
			fds[1].fd = -1;		/* poll() skips it */
		nfds = 2;
		/* what the launcher's commands write is read as it comes */
		for (i = 0; i < njobs; i++)
		{
			if (jobs[i]->out_fd >= 0)
			{
				fds[nfds].fd = jobs[i]->out_fd;
				fds[nfds++].events = POLLIN;
			}
			if (jobs[i]->err_fd >= 0)
			{
				fds[nfds].fd = jobs[i]->err_fd;
				fds[nfds++].events = POLLIN;
			}
		}
		if (poll(fds, nfds, timeout_ms) < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		if (conn && (fds[1].revents & (POLLIN | POLLERR | POLLHUP)))
		{
			if (!PQconsumeInput(conn))
				lose_connection(PQerrorMessage(conn));
			else
				collect_notifies();
		}
		if (nfds > 2)
			for (i = 0; i < njobs; i++)
				if (jobs[i]->helper_pid > 0)
					read_helper_output(jobs[i]);
		free(fds);
	}
	if (njobs > 0)
	{
		log_event("warning", "agent_exit", NULL,
				  "the database cannot be reached: %d job(s) not released; their leases will run out",
				  njobs);
		PQfinish(conn);
		return 1;
	}
	if (opts.pickup_log)
		fclose(opts.pickup_log);
	log_event("info", "agent_exit", NULL, "exiting: %ld job(s) reported, cpu_s %.3f", jobs_done,
			  cpu_seconds());
	PQfinish(conn);
	return 0;
}
