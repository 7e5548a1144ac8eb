/*-------------------------------------------------------------------------
 *
 * state.c
 *		The agent's state directory (--state-dir): what a local part's shim
 *		and the agent share on the host, so that the shim fences a lost
 *		lease on its own (the agent stopped, hung or gone) and an agent
 *		started again adopts the parts an earlier one left running
 *		(doc/agents.md, "Upgrading agents without stopping jobs").
 *
 * The files of a part are named by its shim's process id:
 *
 *	PID.part	the agent's, written once the shim runs: "key value" lines
 *				(the agent's name in hex, the job, attempt, instances, the
 *				shim's start time in clock ticks since boot, the checkpoint
 *				directory and output file)
 *	PID.lease	the agent's: the lease's deadline on CLOCK_MONOTONIC, in
 *				seconds, written anew (a temporary file renamed) at each
 *				renewal; the shim reads it when its deadline comes near
 *	PID.kept	the shim's: it took SIGUSR2 and outlives its agent
 *	PID.fenced	the shim's: the lease was not renewed, it is killing the part
 *	PID.end		the shim's, written as it exits: its wait status, whether it
 *				killed the part for a lost lease, the output's byte counts,
 *				then its last bytes
 *
 * The directory is the agent's (mode 0700): with --run-as no job can
 * write it; with --same-user a job can, as it can signal its shim.  A part's
 * files are removed once the agent has taken its end.
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* state_path: STATE_DIR/PID.EXT into buf */
static void
state_path(char *buf, size_t cap, pid_t pid, const char *ext)
{
	snprintf(buf, cap, "%s/%d.%s", opts.state_dir, (int) pid, ext);
}

/*
 * write_file_atomically writes n bytes to path through a temporary file
 * renamed over it: a reader sees the old file or the new one, whole.
 */
static bool
write_file_atomically(const char *path, const char *buf, size_t n)
{
	char		tmp[PATH_MAX + 16];
	int			fd;
	bool		ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	ok = write(fd, buf, n) == (ssize_t) n;
	ok = close(fd) == 0 && ok;
	if (ok && rename(tmp, path) == 0)
		return true;
	unlink(tmp);
	return false;
}

/* read_file reads at most cap - 1 bytes of path, NUL-terminated; how many, or -1 */
static ssize_t
read_file(const char *path, char *buf, size_t cap)
{
	int			fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t		n,
				got = 0;

	if (fd < 0)
		return -1;
	while ((size_t) got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/*
 * setup_state_dir: the state directory (arg: --state-dir, or NULL for the
 * default: $STATE_DIRECTORY/parts under systemd, else quota-sched-state
 * beside the checkpoint root), made if missing (0700, the agent's) and
 * absolute.  One that cannot be had is a bad option.
 */
void
setup_state_dir(const char *arg)
{
	const char *state = getenv("STATE_DIRECTORY");
	const char *slash = strrchr(opts.checkpoint_root, '/');
	char		dir[PATH_MAX];
	char		err[PATH_MAX + 200];
	char		resolved[PATH_MAX];
	int			fd;

	if (arg)
		snprintf(dir, sizeof(dir), "%s", arg);
	else if (state && state[0] && strchr(state, ':') == NULL)
		snprintf(dir, sizeof(dir), "%s/parts", state);
	else
		snprintf(dir, sizeof(dir), "%.*s/quota-sched-state",
				 (int) (slash ? slash - opts.checkpoint_root : 0), opts.checkpoint_root);
	fd = ensure_dir(dir, 0700, false, false, err, sizeof(err));
	if (fd < 0 || realpath(dir, resolved) == NULL)
	{
		fprintf(stderr, "quota-sched-agent: state directory: %s\n",
				fd < 0 ? err : strerror(errno));
		exit(2);
	}
	close(fd);
	opts.state_dir = strdup(resolved);
}

/*
 * proc_start_time: when process pid started (field 22 of /proc/PID/stat,
 * clock ticks since boot), so that a process id used again is not taken
 * for the shim; 0 if it is not there, or has ended (a zombie).
 */
unsigned long long
proc_start_time(pid_t pid)
{
	char		path[64];
	char		text[1024];
	char	   *p;
	unsigned long long start = 0;
	int			field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	if (read_file(path, text, sizeof(text)) <= 0 || (p = strrchr(text, ')')) == NULL ||
		p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;				/* gone, or a zombie: ended */
	/* after ") ": field 3 (state) on; the start time is field 22 */
	for (field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p != NULL)
		start = strtoull(p + 1, NULL, 10);
	return start;
}

/* state_write_part: the part's record, once its shim (pid) runs */
void
state_write_part(const Job *job, pid_t pid)
{
	char		buf[3 * PATH_MAX + sizeof(job->devices) + 600];
	char		path[PATH_MAX];
	size_t		len = 0;
	size_t		i;

	append(buf, sizeof(buf), &len, "agent_hex ");
	for (i = 0; opts.agent[i]; i++)
		append(buf, sizeof(buf), &len, "%02x", (unsigned char) opts.agent[i]);
	append(buf, sizeof(buf), &len,
		   "\njob %" PRId64 "\nattempt %d\ninstances %d\njob_instances %d\nstart %llu\n"
		   "checkpoint_dir %s\nlog_path %s\ndevices %s\n",
		   job->id, job->attempt, job->instances, job->job_instances, proc_start_time(pid),
		   job->checkpoint_dir, job->log.path, job->devices);
	state_path(path, sizeof(path), pid, "part");
	if (!write_file_atomically(path, buf, len))
		log_event("warning", "state_not_kept", job, "could not write \"%s\": %s", path,
				  strerror(errno));
}

/* state_write_lease: the part's lease deadline (CLOCK_MONOTONIC s), for its shim */
void
state_write_lease(const Job *job, pid_t pid)
{
	char		buf[64];
	char		path[PATH_MAX];
	int			n = snprintf(buf, sizeof(buf), "%.6f\n", job->lease_deadline);

	state_path(path, sizeof(path), pid, "lease");
	if (!write_file_atomically(path, buf, n))
		log_event("warning", "state_not_kept", job, "could not write \"%s\": %s", path,
				  strerror(errno));
}

/* state_read_lease: the deadline the agent wrote for the shim pid; 0: none */
double
state_read_lease(pid_t pid)
{
	char		buf[64];
	char		path[PATH_MAX];

	state_path(path, sizeof(path), pid, "lease");
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	return strtod(buf, NULL);
}

/* state_mark: an empty file PID.EXT (the shim's PID.kept) */
void
state_mark(pid_t pid, const char *ext)
{
	char		path[PATH_MAX];

	state_path(path, sizeof(path), pid, ext);
	if (!write_file_atomically(path, "", 0))
		log_event("warning", "state_not_kept", NULL, "could not write \"%s\": %s", path,
				  strerror(errno));
}

/* state_has: whether PID.EXT exists */
bool
state_has(pid_t pid, const char *ext)
{
	char		path[PATH_MAX];

	state_path(path, sizeof(path), pid, ext);
	return access(path, F_OK) == 0;
}

/*
 * state_write_end, in the shim as it exits: its wait status, whether it
 * killed the part for a lost lease, and the output's counts and tail.
 */
void
state_write_end(const Job *job, pid_t pid, int status, bool fenced)
{
	char		buf[256 + OUTPUT_TAIL_BYTES];
	char		tail[OUTPUT_TAIL_BYTES];
	char		path[PATH_MAX];
	size_t		len = 0;
	size_t		first = (job->log.tail_pos + OUTPUT_TAIL_BYTES - job->log.tail_len) % OUTPUT_TAIL_BYTES;
	size_t		i;

	for (i = 0; i < job->log.tail_len; i++)
		tail[i] = job->log.tail[(first + i) % OUTPUT_TAIL_BYTES];
	append(buf, sizeof(buf), &len, "status %d\nfenced %d\nwritten %lld\ndropped %lld\ntail %zu\n",
		   status, fenced ? 1 : 0, job->log.written, job->log.dropped, job->log.tail_len);
	memcpy(buf + len, tail, job->log.tail_len);
	len += job->log.tail_len;
	state_path(path, sizeof(path), pid, "end");
	if (!write_file_atomically(path, buf, len))
		log_event("warning", "state_not_kept", job, "could not write \"%s\": %s", path,
				  strerror(errno));
}

/*
 * state_read_end: the end the shim pid wrote, into *status and *fenced,
 * and its output's counts and tail into the job's log.  False if there is
 * none (the shim was killed before it could write it).
 */
bool
state_read_end(Job *job, pid_t pid, int *status, bool *fenced)
{
	char		buf[256 + OUTPUT_TAIL_BYTES + 1];
	char		path[PATH_MAX];
	int			f = 0;
	size_t		tail_len = 0;
	char	   *nl;
	ssize_t		n;

	state_path(path, sizeof(path), pid, "end");
	n = read_file(path, buf, sizeof(buf));
	if (n <= 0 || sscanf(buf, "status %d\nfenced %d\nwritten %lld\ndropped %lld\ntail %zu\n",
						 status, &f, &job->log.written, &job->log.dropped, &tail_len) != 5)
		return false;
	*fenced = f != 0;
	nl = buf;
	for (f = 0; f < 5 && nl != NULL; f++)
	{
		nl = memchr(nl, '\n', n - (nl - buf));
		if (nl)
			nl++;
	}
	if (nl == NULL || tail_len > OUTPUT_TAIL_BYTES || (size_t) (n - (nl - buf)) < tail_len)
		tail_len = 0;
	memcpy(job->log.tail, nl ? nl : buf, tail_len);
	job->log.tail_len = tail_len;
	job->log.tail_pos = tail_len % OUTPUT_TAIL_BYTES;
	return true;
}

/* state_forget removes the files of the part whose shim was pid */
void
state_forget(pid_t pid)
{
	static const char *const exts[] = {"part", "lease", "kept", "fenced", "end"};
	char		path[PATH_MAX];
	size_t		i;

	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
	{
		state_path(path, sizeof(path), pid, exts[i]);
		unlink(path);
	}
}

/*
 * parse_part fills rec from the text of a PID.part file; false if it is
 * not one of this agent's (another agent's name, or unreadable).  Keys it
 * does not know are skipped, so that a record may gain lines (a part's
 * devices, written by state_write_part and restored by adopt_one) and an
 * older agent still read it.
 */
static bool
parse_part(char *text, PartRecord *rec)
{
	char		mine[2 * sizeof(opts.agent) + 1];
	size_t		len = 0,
				i;
	char	   *line,
			   *save = NULL;

	for (i = 0; opts.agent[i]; i++)
		append(mine, sizeof(mine), &len, "%02x", (unsigned char) opts.agent[i]);
	memset(rec, 0, sizeof(*rec));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char	   *value = strchr(line, ' ');

		if (value == NULL)
			continue;
		*value++ = '\0';
		if (strcmp(line, "agent_hex") == 0)
			rec->mine = strcmp(value, mine) == 0;
		else if (strcmp(line, "job") == 0)
			rec->job = strtoll(value, NULL, 10);
		else if (strcmp(line, "attempt") == 0)
			rec->attempt = atoi(value);
		else if (strcmp(line, "instances") == 0)
			rec->instances = atoi(value);
		else if (strcmp(line, "job_instances") == 0)
			rec->job_instances = atoi(value);
		else if (strcmp(line, "start") == 0)
			rec->start = strtoull(value, NULL, 10);
		else if (strcmp(line, "checkpoint_dir") == 0)
			snprintf(rec->checkpoint_dir, sizeof(rec->checkpoint_dir), "%s", value);
		else if (strcmp(line, "log_path") == 0)
			snprintf(rec->log_path, sizeof(rec->log_path), "%s", value);
		else if (strcmp(line, "devices") == 0)
			snprintf(rec->devices, sizeof(rec->devices), "%s", value);
	}
	return rec->mine && rec->job > 0 && rec->attempt > 0;
}

/*
 * state_parts calls found(rec) for each part of this agent (by --agent)
 * that the state directory records, with the shim's pid in rec.
 */
void
state_parts(void (*found) (const PartRecord *rec))
{
	DIR		   *dir = opendir(opts.state_dir);
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = readdir(dir)) != NULL)
	{
		char		path[PATH_MAX];
		char		text[3 * PATH_MAX + 600];
		PartRecord	rec;
		size_t		n = strlen(de->d_name);

		if (n < 6 || strcmp(de->d_name + n - 5, ".part") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", opts.state_dir, de->d_name);
		if (read_file(path, text, sizeof(text)) <= 0 || !parse_part(text, &rec))
			continue;
		rec.pid = (pid_t) atoi(de->d_name);
		found(&rec);
	}
	closedir(dir);
}
