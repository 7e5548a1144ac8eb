/*-------------------------------------------------------------------------
 *
 * log.c
 *		quota-sched-agent's clocks and its log: one line per event on
 *		stderr, in plain text or (--log-format=json) one JSON object.
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* now_mono: the monotonic clock, in seconds (every deadline is on it) */
double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* now_real_us: the time since the epoch, in microseconds (for --pickup-log) */
long long
now_real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* cpu_seconds: the CPU time this process used, in seconds (at its exit) */
double
cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * format_line builds the log's line for an event into line (of size cap),
 * without the newline: in plain text
 *   TIME LEVEL EVENT [job=N attempt=A]: MESSAGE
 * (the message's newlines become spaces) or, with --log-format=json, one
 * JSON object with the keys time, level, agent, event, job_id and attempt
 * (when about a job) and message.  Returns its length.
 */
static size_t
format_line(char *line, size_t cap, const char *stamp, const char *level,
			const char *event, const Job *job, char *msg)
{
	size_t		len = 0;

	if (opts.json)
	{
		append(line, cap, &len, "{\"time\":\"%s\",\"level\":\"%s\",\"agent\":\"", stamp, level);
		json_escape(line, cap, &len, opts.agent);
		append(line, cap, &len, "\",\"event\":\"%s\"", event);
		if (job)
			append(line, cap, &len, ",\"job_id\":%" PRId64 ",\"attempt\":%d",
				   job->id, job->attempt);
		append(line, cap, &len, ",\"message\":\"");
		json_escape(line, cap, &len, msg);
		append(line, cap, &len, "\"}");
	}
	else
	{
		char	   *p;

		/* one line per event: a message's newlines become spaces */
		for (p = msg; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		append(line, cap, &len, "%s %s %s", stamp, level, event);
		if (job)
			append(line, cap, &len, " job=%" PRId64 " attempt=%d", job->id, job->attempt);
		append(line, cap, &len, ": %s", msg);
	}
	return len;
}

/*
 * log_event writes one line to stderr (see format_line), in one write() so
 * that lines do not mix; the time is UTC, to the millisecond.
 */
void
log_event(const char *level, const char *event, const Job *job, const char *fmt,...)
{
	char		msg[2048];
	char		line[16384];	/* a message escaped for JSON may grow 6-fold */
	char		stamp[40];
	size_t		len;
	va_list		ap;
	struct timespec ts;
	struct tm	tm;
	ssize_t		off = 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + strlen(stamp), sizeof(stamp) - strlen(stamp), ".%03ldZ",
			 (long) (ts.tv_nsec / 1000000));

	len = format_line(line, sizeof(line), stamp, level, event, job, msg);
	if (len >= sizeof(line) - 1)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	while (off < (ssize_t) len)
	{
		ssize_t		n = write(STDERR_FILENO, line + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
	}
}

/* fatal logs a fatal agent_exit event and exits 1 (out of memory, poll) */
void
fatal(const char *fmt,...)
{
	char		msg[2048];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_event("fatal", "agent_exit", NULL, "%s", msg);
	exit(1);
}
