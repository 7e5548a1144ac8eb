/*-------------------------------------------------------------------------
 *
 * local.c
 *		Local children, local_launch_ops: a job's command (payload->'command',
 *		an argv) run by quota-sched-agent as a child process in a process
 *		group of its own, and what its exit status means for the job.
 *
 * A stop sends SIGTERM to the process group, SIGKILL after the grace
 * period (at once on a second SIGTERM to the agent).  The command's stdout
 * and stderr are a pipe its shim reads into the attempt's file and tail
 * (shim.c); at its end the shim writes the tail to the state directory
 * (state.c), where the agent takes it with the end.  The agent writes each
 * renewal of the job's lease there for the shim, and an agent started again
 * adopts the parts an earlier one left running (adopt_parts).
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A job run as a local child. */
typedef struct LocalJob
{
	Job			job;			/* first: a LocalJob is a Job */
	pid_t		pid;			/* the shim, and its process group; 0: none */
	bool		killed;			/* SIGKILL sent */
	bool		adopted;		/* left running by an earlier agent: no child of this one */
	int			pidfd;			/* an adopted shim's pidfd, readable at its end; -1: none */
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
	cgroup_finish(job, pid);
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
		run_shim(job, argv, errpipe[1], outpipe);
	}
	close(errpipe[1]);
	close(outpipe[0]);
	close(outpipe[1]);
	describe_argv(argv, line, sizeof(line));
	if (pid < 0)
	{
		close(errpipe[0]);
		close_checkpoint_dir(job);
		close_attempt_log(job);
		cannot_start(job, "fork");
		return;
	}
	setpgid(pid, pid);			/* both sides, whichever runs first */
	if (!exec_went_through(job, argv, pid, errpipe[0]))
	{
		state_forget(pid);
		return;
	}
	/* the shim writes the output file: the agent keeps no descriptor of it */
	if (job->log.fd >= 0)
		close(job->log.fd);
	job->log.fd = -1;
	lj->pid = pid;
	job->alive = true;
	state_write_part(job, pid);
	state_write_lease(job, pid);
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
	lj->pidfd = -1;
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
	else if (devices_take(job))
		start_job(job, claimed->argv_text);
	if (!job->alive)
		devices_free(job);
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
	if (job->alive && lj->adopted && lj->pidfd < 0)
		return now_mono() + 0.5;	/* no pidfd: its end is looked for */
	return 1e300;
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
 * out_of_memory: the reason of a part that did not succeed and in whose
 * cgroup the kernel's OOM killer killed (kills processes), into buf
 */
static void
out_of_memory(const Job *job, long kills, const char *how, char *buf, size_t cap)
{
	snprintf(buf, cap,
			 "OUT_OF_MEMORY: over its memory limit of %lld MiB (--memory-per-instance %lld MiB x %d "
			 "instance(s)), the kernel killed %ld of its processes; %s",
			 opts.memory_per_instance * job->instances / (1024 * 1024),
			 opts.memory_per_instance / (1024 * 1024), job->instances, kills, how);
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
	char		oom[400];
	bool		exited,
				fenced = false;
	int			code;
	long		kills;

	/* what the shim wrote of its end: the output's tail, a lease it fenced */
	if (!state_read_end(job, lj->pid, &status, &fenced) && lj->adopted)
		status = SIGKILL;		/* an adopted shim killed before it could say */
	state_forget(lj->pid);
	if (fenced && job->stop != STOP_LOST)
		job->stop = STOP_LOST;
	exited = WIFEXITED(status);
	code = exited ? WEXITSTATUS(status) : 0;
	job->alive = false;
	if (!lj->adopted)
		sweep_strays();
	kills = cgroup_finish(job, lj->pid);
	devices_free(job);
	close_checkpoint_dir(job);
	describe_wait_status(status, how, sizeof(how));
	log_event("info", "job_exited", job, "pid %d: %s%s", (int) lj->pid, how,
			  fenced ? " (the shim killed it: its lease ran out)" :
			  kills > 0 ? " (the OOM killer killed in its cgroup)" : "");
	if (kills > 0 && !(exited && code == 0))
	{
		out_of_memory(job, kills, how, oom, sizeof(oom));
		settle(job, "FAILED", code, exited, oom);
		return;
	}

	settle(job, exited && code == 0 ? "SUCCEEDED" : "FAILED", exited ? code : 0, exited,
		   exited && code == 0 ? "" : how);
}

/* local_reaped: whether pid was the job's child; if so, its end */
static bool
local_reaped(Job *job, pid_t pid, int status)
{
	LocalJob   *lj = (LocalJob *) job;

	if (!job->alive || lj->pid != pid || lj->adopted)
		return false;
	child_ended(lj, status);
	return true;
}

/*
 * local_poll_fds: an adopted shim's pidfd, readable once it has ended (the
 * shim writes the job's output itself: the agent reads none)
 */
static int
local_poll_fds(const Job *job, struct pollfd *fds)
{
	const LocalJob *lj = (const LocalJob *) job;

	if (lj->pidfd < 0 || !job->alive)
		return 0;
	fds[0].fd = lj->pidfd;
	fds[0].events = POLLIN;
	return 1;
}

/*
 * local_input: an adopted shim that has ended (its pidfd readable, or,
 * without a pidfd, its process gone) is taken as a child's end is
 */
static void
local_input(Job *job)
{
	LocalJob   *lj = (LocalJob *) job;
	struct pollfd pfd = {.fd = lj->pidfd, .events = POLLIN};

	if (!lj->adopted || !job->alive)
		return;
	if (lj->pidfd >= 0 ? poll(&pfd, 1, 0) == 1 : kill(lj->pid, 0) != 0 && errno == ESRCH)
		child_ended(lj, 0);
}

/* local_free_job: the job's memory (its child, if any, is reaped or killed) */
static void
local_free_job(Job *job)
{
	LocalJob   *lj = (LocalJob *) job;

	if (lj->pidfd >= 0)
		close(lj->pidfd);
	free(job);
}

/*
 * lease_renewed: a heartbeat renewed the job's lease: its shim is told
 * (the state directory), so that it does not fence the part
 */
void
lease_renewed(Job *job)
{
	LocalJob   *lj = (LocalJob *) job;

	if (job->ops == &local_launch_ops && job->alive && lj->pid > 0)
		state_write_lease(job, lj->pid);
}

/*
 * keep_parts, as the agent exits keeping its jobs (SIGUSR2, or SIGTERM
 * with --keep-jobs): each part's shim is told to outlive it (SIGUSR2: no
 * death signal), and the agent waits up to 3 s for each to say it heard
 * (PID.kept).  Returns how many did; one that did not is killed as the
 * agent exits (its death signal), its lease then runs out.
 */
int
keep_parts(void)
{
	double		until = now_mono() + 3;
	int			i,
				n;

	for (i = 0; i < njobs; i++)
		if (jobs[i]->ops == &local_launch_ops && jobs[i]->alive)
			kill(((LocalJob *) jobs[i])->pid, SIGUSR2);
	do
	{
		for (i = n = 0; i < njobs; i++)
			if (jobs[i]->ops == &local_launch_ops && jobs[i]->alive)
				n += !state_has(((LocalJob *) jobs[i])->pid, "kept");
		if (n > 0)
			usleep(20000);
	} while (n > 0 && now_mono() < until);
	for (i = n = 0; i < njobs; i++)
		if (jobs[i]->ops == &local_launch_ops && jobs[i]->alive)
		{
			bool		kept = state_has(((LocalJob *) jobs[i])->pid, "kept");

			n += kept;
			log_event(kept ? "info" : "warning", "job_kept", jobs[i], "shim %d %s",
					  (int) ((LocalJob *) jobs[i])->pid,
					  kept ? "runs on after the agent" : "did not answer: it dies with the agent");
		}
	return n;
}

/*
 * adopt_one: a part an earlier agent of this name left running (rec): a
 * shim still there (the same process: its start time) whose lease has not
 * run out is the agent's again, as if it had started it: no new attempt,
 * no release; its end comes through its pidfd and what it writes to the
 * state directory.  One kept that ended meanwhile is told as it ended
 * (unless it fenced a lost lease); one whose lease ran out is being killed
 * by its shim, and is only waited for (STOP_LOST); one that died with its
 * agent (not kept) is forgotten, and the heartbeat releases its job.  (Devices an agent assigns a part would be restored here.)
 */
static void
adopt_one(const PartRecord *rec)
{
	bool		alive = rec->start != 0 && proc_start_time(rec->pid) == rec->start;
	double		deadline = state_read_lease(rec->pid);
	Job		   *job;
	LocalJob   *lj;

	if (!alive && !(state_has(rec->pid, "end") && state_has(rec->pid, "kept")))
	{
		/* it died with its agent (SIGKILL, a crash): the job is released */
		log_event("info", "job_not_adopted", NULL, "job %" PRId64 ": shim %d ended with its agent",
				  rec->job, (int) rec->pid);
		state_forget(rec->pid);
		return;
	}
	job = add_job(rec->job, rec->attempt, rec->instances);
	lj = (LocalJob *) job;
	job->job_instances = rec->job_instances;
	snprintf(job->checkpoint_dir, sizeof(job->checkpoint_dir), "%s", rec->checkpoint_dir);
	snprintf(job->log.path, sizeof(job->log.path), "%s", rec->log_path);
	job->log.opened = true;
	lj->pid = rec->pid;
	lj->adopted = true;
	job->alive = true;
	if (!devices_adopt(job, rec->devices))
		log_event("warning", "devices_not_adopted", job,
				  "its devices \"%s\" are not all free devices of --devices: none is counted "
				  "as its", rec->devices);
	job->lease_deadline = deadline > 0 ? deadline : now_mono();
	if (!alive)
	{
		child_ended(lj, 0);
		return;
	}
	lj->pidfd = (int) syscall(SYS_pidfd_open, rec->pid, 0);
	if (job->lease_deadline <= now_mono() || state_has(rec->pid, "fenced"))
	{
		log_event("warning", "job_not_adopted", job,
				  "shim %d: the part's lease ran out, its shim kills it", (int) rec->pid);
		begin_stop(job, STOP_LOST, "not adopted: its lease ran out");
		return;
	}
	log_event("info", "job_adopted", job, "shim %d, lease ends in %.1f s, output in %s",
			  (int) rec->pid, job->lease_deadline - now_mono(), job->log.path);
}

/* adopt_parts: the parts this agent's name left running (state.c), adopted */
void
adopt_parts(void)
{
	state_parts(adopt_one);
}

const LaunchOps local_launch_ops = {
	.new_job = local_new_job, .start = local_start, .stop = local_stop,
	.tick = local_tick, .wake = local_wake, .reaped = local_reaped,
	.poll_fds = local_poll_fds, .input = local_input, .free_job = local_free_job
};
