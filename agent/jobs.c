/*-------------------------------------------------------------------------
 *
 * jobs.c
 *		The jobs quota-sched-agent holds: its table of them, what becomes
 *		of one whose attempt ended (settle), the checkpoint directories, and
 *		what a child forked for a job starts with (child_setup).
 *
 * A job is in the table from its claim until the database has been told
 * how it ended (or it is forgotten); an attempt being killed as lost may be
 * there beside the job's newer attempt.
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

const LaunchOps *launcher = &local_launch_ops;
Job		  **jobs = NULL;
int			njobs = 0;
static int	maxjobs = 0;
long		jobs_done = 0;		/* reports of a job's end that went through */

/* find_job: the job's current attempt here (not one being killed as lost) */
Job *
find_job(int64_t id)
{
	int			i;

	for (i = 0; i < njobs; i++)
		if (jobs[i]->id == id && jobs[i]->stop != STOP_LOST && jobs[i]->action != ACT_DROP)
			return jobs[i];
	return NULL;
}

/* still_running: whether an attempt of the job still runs here (even one being killed) */
bool
still_running(int64_t id)
{
	int			i;

	for (i = 0; i < njobs; i++)
		if (jobs[i]->id == id && jobs[i]->alive)
			return true;
	return false;
}

/*
 * add_job puts a job just claimed into the table, a job of the launcher's
 * kind; its lease runs from now
 */
Job *
add_job(int64_t id, int attempt, int instances)
{
	Job		   *job = launcher->new_job();

	if (job == NULL)
		fatal("out of memory");
	if (njobs == maxjobs)
	{
		Job		  **more;

		maxjobs = maxjobs ? 2 * maxjobs : 16;
		more = realloc(jobs, maxjobs * sizeof(Job *));
		if (more == NULL)
			fatal("out of memory");
		jobs = more;
	}
	job->ops = launcher;
	job->id = id;
	job->array_index = -1;
	snprintf(job->id_text, sizeof(job->id_text), "%" PRId64, id);
	job->attempt = attempt;
	snprintf(job->attempt_text, sizeof(job->attempt_text), "%d", attempt);
	job->instances = instances;
	job->lease_deadline = now_mono() + opts.lease;
	job->log.fd = -1;
	jobs[njobs++] = job;
	return job;
}

/* remove_job forgets a job: its end was told, or is not to be */
void
remove_job(Job *job)
{
	int			i;

	for (i = 0; i < njobs; i++)
		if (jobs[i] == job)
		{
			jobs[i] = jobs[--njobs];
			free_rendezvous(job);
			job->ops->free_job(job);
			return;
		}
}

/*
 * count_alive: the jobs that run here, or (weigh) the instances they hold,
 * those of the parts that wait for their peers too
 */
static int
count_alive(bool weigh)
{
	int			i,
				n = 0;

	for (i = 0; i < njobs; i++)
		if (jobs[i]->alive)
			n += weigh ? jobs[i]->instances : 1;
		else if (weigh && jobs[i]->rdv.waiting && jobs[i]->action == ACT_NONE)
			n += jobs[i]->instances;
	return n;
}

/* busy_instances: the instances the jobs that run here hold (the claim's limit) */
int
busy_instances(void)
{
	return count_alive(true);
}

/* alive_children: how many jobs run here */
int
alive_children(void)
{
	return count_alive(false);
}

/*
 * begin_stop stops a job that runs (kind: why, which decides what is told
 * at its end): SIGTERM now, SIGKILL after the grace period, or the
 * launcher's stop command.  A job already being stopped keeps its first
 * kind, unless it is now lost.
 */
void
begin_stop(Job *job, StopKind kind, const char *why)
{
	if (!job->alive)
		return;
	if (job->stop == STOP_NONE || kind == STOP_LOST)
		job->stop = kind;
	if (job->term_at == 0)
	{
		job->term_at = now_mono();
		job->ops->stop(job, why);
	}
}

/*
 * enforce_deadlines: kill the jobs whose lease surely ran out (another
 * agent may run them by now), and what each launcher has to do now (a
 * SIGKILL after the grace period, a command).
 */
void
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
		job->ops->tick(job, now);
	}
}

/* set_report: the job's end, to be told to the database (reason: printf-style, or NULL) */
void
set_report(Job *job, const char *state, int exit_code, bool has_exit_code, const char *fmt,...)
{
	job->action = ACT_REPORT;
	job->state = state;
	job->exit_code = exit_code;
	job->has_exit_code = has_exit_code;
	job->reason[0] = '\0';
	if (fmt)
	{
		va_list		ap;

		va_start(ap, fmt);
		vsnprintf(job->reason, sizeof(job->reason), fmt, ap);
		va_end(ap);
	}
}

/*
 * settle decides what the agent tells the database of a job whose attempt
 * has ended here (state SUCCEEDED or FAILED, with the exit code if any, and
 * a reason for a failure), given why it was stopped, if it was: nothing
 * (the job is no longer its own), a release (the agent shuts down), or
 * STOPPED (a stop requested: the database's stop reason stays the job's
 * status reason).  The attempt's output file is complete: it is closed.
 */
void
settle(Job *job, const char *state, int code, bool has_code, const char *reason)
{
	close_attempt_log(job);
	switch (job->stop)
	{
		case STOP_LOST:
			job->action = ACT_DROP;
			break;
		case STOP_SHUTDOWN:
			job->action = ACT_RELEASE;
			snprintf(job->reason, sizeof(job->reason), "agent %s shut down", opts.agent);
			break;
		case STOP_REQUESTED:
			set_report(job, "STOPPED", code, has_code, NULL);
			break;
		case STOP_NONE:
			if (reason[0])
				set_report(job, state, code, has_code, "%s", reason);
			else
				set_report(job, state, code, has_code, NULL);
			break;
	}
}

/*
 * ensure_dir makes path a directory with the mode given, owned by the
 * agent's user (or, with owner_any, by anyone: with --run-as only root
 * writes the root, so what is in it is the agent's), repairing what it
 * can (with repair): a file, a symlink (not followed), a FIFO, anything
 * but a directory where the directory should be is removed first.  Returns an open
 * descriptor of the directory (the caller closes it), or -1 with the reason
 * in err.
 */
int
ensure_dir(const char *path, mode_t mode, bool owner_any, bool repair, char *err, size_t errcap)
{
	struct stat st;
	int			fd;

	if (repair && lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
	{
		if (unlink(path) != 0)
		{
			snprintf(err, errcap, "could not remove \"%s\", which is not a directory: %s",
					 path, strerror(errno));
			return -1;
		}
		log_event("warning", "checkpoint_repaired", NULL,
				  "\"%s\" was not a directory (mode %o): removed", path, (unsigned) st.st_mode);
	}
	if (mkdir(path, mode) != 0 && errno != EEXIST)
	{
		snprintf(err, errcap, "could not create directory \"%s\": %s", path, strerror(errno));
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0 || (!owner_any && st.st_uid != geteuid()))
	{
		snprintf(err, errcap, "\"%s\" is not a directory owned by the agent's user%s%s", path,
				 fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : "");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if ((st.st_mode & 07777) != mode && fchmod(fd, mode) != 0)
	{
		snprintf(err, errcap, "could not chmod \"%s\": %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * ensure_checkpoint_root: the checkpoint root is a directory of the
 * agent's user, which only it may write: mode 0700, or with --run-as 0711
 * (the run-as user may pass through to its job's directory, not list or
 * write the root).  Made if need be, at the start, and made or repaired
 * (repair: ensure_dir) before each job.  0 if ok, else -1 with the reason
 * in err.
 */
int
ensure_checkpoint_root(const char *path, bool repair, char *err, size_t errcap)
{
	int			fd = ensure_dir(path, opts.run_as ? 0711 : 0700, false, repair, err, errcap);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/*
 * prepare_checkpoint_dir gives the job its checkpoint directory,
 * ROOT/job-ID (kept across its attempts), mode 0700: with --run-as, owned
 * by the run-as user while the job runs (close_checkpoint_dir takes it
 * back).  What a job planted there (a file, a symlink) is repaired.  False
 * if it cannot be had: the agent's fault, not the job's, so the job is
 * released (no attempt counted).
 */
bool
prepare_checkpoint_dir(Job *job)
{
	char		err[PATH_MAX + 200];
	int			fd = -1;

	snprintf(job->checkpoint_dir, sizeof(job->checkpoint_dir), "%s/job-%s",
			 opts.checkpoint_root, job->id_text);
	if (ensure_checkpoint_root(opts.checkpoint_root, true, err, sizeof(err)) == 0 &&
		(fd = ensure_dir(job->checkpoint_dir, 0700, opts.run_as != NULL, true, err,
						 sizeof(err))) >= 0)
	{
		bool		ok = !opts.run_as || fchown(fd, opts.run_as_uid, opts.run_as_gid) == 0;

		if (!ok)
			snprintf(err, sizeof(err), "could not give \"%s\" to %s: %s", job->checkpoint_dir,
					 opts.run_as, strerror(errno));
		close(fd);
		if (ok)
			return true;
	}
	job->checkpoint_dir[0] = '\0';
	log_event("error", "job_not_started", job, "%s", err);
	job->action = ACT_RELEASE;
	snprintf(job->reason, sizeof(job->reason), "agent %s could not prepare its checkpoint directory: %s",
			 opts.agent, err);
	agent_fault();
	return false;
}

/*
 * close_checkpoint_dir: with --run-as, the directory of a job that no
 * longer runs is the agent's again (0700), so that no job of that user
 * reads or rewrites it until its next attempt.
 */
void
close_checkpoint_dir(Job *job)
{
	int			fd;

	if (!opts.run_as || job->checkpoint_dir[0] == '\0')
		return;
	fd = open(job->checkpoint_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, geteuid(), getegid()) != 0 || fchmod(fd, 0700) != 0)
		log_event("warning", "checkpoint_not_closed", job, "could not take \"%s\" back: %s",
				  job->checkpoint_dir, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* remove_entry: nftw's callback for remove_checkpoint_dir */
static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	remove(path);
	return 0;
}

/*
 * remove_checkpoint_dir removes the job's checkpoint directory once the
 * job has ended for good (not with --keep-checkpoints).
 */
void
remove_checkpoint_dir(Job *job)
{
	if (opts.keep_checkpoints || job->checkpoint_dir[0] == '\0')
		return;
	nftw(job->checkpoint_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * signal_group sends sig to the process group pgid (a job's child, or a
 * launcher's command); one that is already gone is no failure.
 */
void
signal_group(const Job *job, pid_t pgid, int sig)
{
	if (pgid > 0 && kill(-pgid, sig) != 0 && errno != ESRCH)
		log_event("warning", "kill_failed", job, "kill(-%d, %s): %s", (int) pgid,
				  signal_name(sig), strerror(errno));
}

/*
 * child_setup makes a forked child ready to run a launcher's command: a
 * process group of its own, dying with the agent (Linux), then
 * reset_child.  If the agent died between the fork and the prctl, it
 * exits.
 */
void
child_setup(const Job *job)
{
	setpgid(0, 0);
#ifdef __linux__
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != agent_pid)
		_exit(127);
#endif
	reset_child(job);
}

/*
 * reset_child: what a child that is to exec a job's command or a
 * launcher's starts with: default signals, none blocked, stdin from
 * /dev/null, and the job's QUOTA_SCHED_* variables, with those of its
 * place among the job's parts (set_rendezvous_env).
 */
void
reset_child(const Job *job)
{
	struct sigaction sa;
	sigset_t	none;
	int			fd;
	char		num[24];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO)
	{
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	setenv("QUOTA_SCHED_JOB_ID", job->id_text, 1);
	setenv("QUOTA_SCHED_ATTEMPT", job->attempt_text, 1);
	snprintf(num, sizeof(num), "%d", job->job_instances);
	setenv("QUOTA_SCHED_INSTANCE_COUNT", num, 1);
	setenv("QUOTA_SCHED_CHECKPOINT_DIR", job->checkpoint_dir, 1);
	setenv("QUOTA_SCHED_AGENT", opts.agent, 1);
	if (job->array_index >= 0)
	{
		/* and AWS Batch's name, so that a script written for it runs unchanged */
		snprintf(num, sizeof(num), "%d", job->array_index);
		setenv("QUOTA_SCHED_ARRAY_INDEX", num, 1);
		setenv("AWS_BATCH_JOB_ARRAY_INDEX", num, 1);
	}
	else
	{
		unsetenv("QUOTA_SCHED_ARRAY_INDEX");
		unsetenv("AWS_BATCH_JOB_ARRAY_INDEX");
	}
	set_rendezvous_env(job);
}
