/*-------------------------------------------------------------------------
 *
 * output.c
 *		A job's own output (issue 21): each attempt's stdout and stderr (a
 *		local job's, through a pipe its shim reads; what an external
 *		launcher's commands print) go to a file of the attempt's, under
 *		the log directory the agent owns, and the last OUTPUT_TAIL_BYTES of
 *		them to the database with the attempt's end (protocol.c).
 *
 * The log directory (--log-dir; $STATE_DIRECTORY/logs under systemd, else
 * quota-sched-logs beside the checkpoint root) is the agent's, mode 0750, as is each job's
 * directory in it, LOG_DIR/JOB_ID; what stands there that is not such a
 * directory (a file, a symlink) is replaced.  An attempt's file,
 * LOG_DIR/JOB_ID/attempt-N.log (mode 0640), is made anew (O_EXCL,
 * O_NOFOLLOW) for each run of it: a run released and run again under the
 * same number replaces its file.  A file keeps the first --log-max-bytes
 * of the output, then a line that says how much was left out; the tail
 * sent to the database is the output's last bytes whatever the bound.
 * The agent removes no file: that is the host's retention (doc/agents.md).
 * A file that cannot be made is no reason to fail the job: it runs, its
 * tail is still sent.
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * setup_log_dir: the log directory (arg: --log-dir, or NULL for the
 * default, which follows the checkpoint root's), made if missing (0750, the agent's), made absolute for the
 * database and the log.  A directory that cannot be had is a bad option.
 */
void
setup_log_dir(const char *arg)
{
	const char *dir = arg;
	char		err[PATH_MAX + 200];
	char		resolved[PATH_MAX];
	int			fd;

	if (dir == NULL)
	{
		const char *state = getenv("STATE_DIRECTORY");

		const char *slash = strrchr(opts.checkpoint_root, '/');

		if (state && state[0] && strchr(state, ':') == NULL)
			snprintf(err, sizeof(err), "%s/logs", state);
		else
			snprintf(err, sizeof(err), "%.*s/quota-sched-logs",
					 (int) (slash ? slash - opts.checkpoint_root : 0), opts.checkpoint_root);
		dir = strdup(err);
	}
	fd = ensure_dir(dir, 0750, false, false, err, sizeof(err));
	if (fd < 0 || realpath(dir, resolved) == NULL)
	{
		fprintf(stderr, "quota-sched-agent: log directory: %s\n",
				fd < 0 ? err : strerror(errno));
		exit(2);
	}
	close(fd);
	opts.log_dir = strdup(resolved);
}

/*
 * open_attempt_log begins to take the job's output: its ring is emptied,
 * and its file LOG_DIR/JOB_ID/attempt-N.log made anew (one left by an
 * earlier run of the same attempt is removed first).  The database is to
 * be told where (tell_attempt).  A file that cannot be made is logged;
 * the output's tail is still kept.
 */
void
open_attempt_log(Job *job)
{
	AttemptLog *log = &job->log;
	char		dir[PATH_MAX];
	char		err[PATH_MAX + 200];
	int			fd;

	memset(log, 0, sizeof(*log));
	log->opened = true;
	log->fd = -1;
	job->tell_attempt = true;
	snprintf(dir, sizeof(dir), "%s/%s", opts.log_dir, job->id_text);
	fd = ensure_dir(opts.log_dir, 0750, false, true, err, sizeof(err));
	if (fd >= 0)
	{
		close(fd);
		fd = ensure_dir(dir, 0750, false, true, err, sizeof(err));
	}
	if (fd < 0)
	{
		log_event("warning", "output_not_kept", job, "%s", err);
		return;
	}
	close(fd);
	snprintf(log->path, sizeof(log->path), "%s/attempt-%d.log", dir, job->attempt);
	if (unlink(log->path) != 0 && errno != ENOENT)
		log_event("warning", "output_not_kept", job, "could not remove \"%s\": %s",
				  log->path, strerror(errno));
	log->fd = open(log->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (log->fd < 0)
	{
		log_event("warning", "output_not_kept", job, "could not create \"%s\": %s",
				  log->path, strerror(errno));
		log->path[0] = '\0';
	}
}

/*
 * write_all writes the bytes to the attempt's file; a failure (a full
 * disk) closes it, logged: the output's tail is still kept.
 */
static void
write_all(Job *job, const char *buf, size_t n)
{
	AttemptLog *log = &job->log;

	while (n > 0 && log->fd >= 0)
	{
		ssize_t		w = write(log->fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
		{
			log_event("warning", "output_not_kept", job, "could not write \"%s\": %s",
					  log->path, w < 0 ? strerror(errno) : "no space");
			close(log->fd);
			log->fd = -1;
			return;
		}
		buf += w;
		n -= (size_t) w;
	}
}

/*
 * attempt_output takes n bytes of the job's output: into its file, up to
 * --log-max-bytes (the rest is counted, not written), and into the ring
 * of its last bytes.
 */
void
attempt_output(Job *job, const char *buf, size_t n)
{
	AttemptLog *log = &job->log;
	size_t		room = log->written >= opts.log_max_bytes ? 0
		: (size_t) (opts.log_max_bytes - log->written);
	size_t		take = n < room ? n : room;
	size_t		i;

	if (!log->opened)
		return;
	write_all(job, buf, take);
	log->written += take;
	log->dropped += n - take;
	for (i = n > OUTPUT_TAIL_BYTES ? n - OUTPUT_TAIL_BYTES : 0; i < n; i++)
	{
		log->tail[log->tail_pos] = buf[i];
		log->tail_pos = (log->tail_pos + 1) % OUTPUT_TAIL_BYTES;
		if (log->tail_len < OUTPUT_TAIL_BYTES)
			log->tail_len++;
	}
}

/*
 * attempt_note writes a line of the agent's own into the attempt's file
 * ("[quota-sched-agent] ...": which launcher command runs, what was left
 * out), beyond the bound, not into the tail.
 */
void
attempt_note(Job *job, const char *fmt,...)
{
	char		line[512];
	size_t		len = 0;
	va_list		ap;

	if (job->log.fd < 0)
		return;
	append(line, sizeof(line), &len, "[quota-sched-agent] ");
	va_start(ap, fmt);
	len += vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	va_end(ap);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	write_all(job, line, len);
}

/*
 * close_attempt_log: the attempt has ended: its file is closed, after a
 * line that says what the bound left out.  Its tail stays, for the report.
 */
void
close_attempt_log(Job *job)
{
	if (job->log.dropped > 0)
		attempt_note(job, "%lld more bytes of output not kept here (--log-max-bytes=%ld)",
					 job->log.dropped, opts.log_max_bytes);
	if (job->log.fd >= 0)
		close(job->log.fd);
	job->log.fd = -1;
}

/*
 * attempt_tail puts the last of the attempt's output into out (cap bytes:
 * OUTPUT_TAIL_BYTES + 1), as text the server takes (output_tail); its
 * length.
 */
size_t
attempt_tail(const Job *job, char *out, size_t cap)
{
	const AttemptLog *log = &job->log;
	char		linear[OUTPUT_TAIL_BYTES];
	size_t		first = (log->tail_pos + OUTPUT_TAIL_BYTES - log->tail_len) % OUTPUT_TAIL_BYTES;
	size_t		i;

	for (i = 0; i < log->tail_len; i++)
		linear[i] = log->tail[(first + i) % OUTPUT_TAIL_BYTES];
	return output_tail(linear, log->tail_len, out, cap);
}
