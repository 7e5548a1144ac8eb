/*-------------------------------------------------------------------------
 *
 * util.c
 *		quota-sched-agent's pure helpers (util.h): JSON escaping, UTF-8
 *		repair, the first and last lines of a text, the names of signals
 *		and of a child's end, and the argv of a job's command.
 *
 * Nothing here uses libpq, a global or an option, so that the unit tests
 * (test/agent/test_agent_util.c) build this file alone.
 *
 *-------------------------------------------------------------------------
 */
#include "util.h"

#include "host_labels.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

/*
 * append adds printf-style text to buf (of size cap, its text ending at
 * *len), cutting what does not fit: the log's lines and messages are built
 * piece by piece this way.
 */
void
append(char *buf, size_t cap, size_t *len, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (*len + 1 >= cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len = (*len + n < cap) ? *len + n : cap - 1;
}

/*
 * json_escape appends s to buf (of size cap, at *len) as the inside of a
 * JSON string: quotes, backslashes and control characters escaped, the
 * rest as it is (the log's JSON lines).
 */
void
json_escape(char *buf, size_t cap, size_t *len, const char *s)
{
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;
		char		esc[8];
		const char *piece = esc;

		if (c == '"')
			piece = "\\\"";
		else if (c == '\\')
			piece = "\\\\";
		else if (c == '\n')
			piece = "\\n";
		else if (c == '\r')
			piece = "\\r";
		else if (c == '\t')
			piece = "\\t";
		else if (c < 0x20 || c == 0x7f)
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		else
		{
			esc[0] = (char) c;
			esc[1] = '\0';
		}
		while (*piece && *len + 1 < cap)
			buf[(*len)++] = *piece++;
	}
	buf[*len] = '\0';
}

/*
 * json_string_field finds the field key of a JSON object's text whose
 * value is a string, and decodes that string into out (of size cap): 1;
 * 0 when the text has no such field; -1 when its value is cut short,
 * holds an escape other than those PostgreSQL's escape_json writes (\",
 * \\, \/, \b, \f, \n, \r, \t, \u00XX) or does not fit.  It looks for
 * the first "key":" of the text: within a JSON string every quote is
 * escaped, so none can be taken for a key (the dispatch notifications'
 * payloads, scheduling.md 5.1).
 */
int
json_string_field(const char *text, const char *key, char *out, size_t cap)
{
	char		pattern[80];
	const char *p;
	size_t		len = 0;

	if (snprintf(pattern, sizeof(pattern), "\"%s\":\"", key) >= (int) sizeof(pattern) ||
		(p = strstr(text, pattern)) == NULL)
		return 0;
	for (p += strlen(pattern); *p != '"'; p++)
	{
		char		c = *p;

		if (c == '\0' || len + 1 >= cap)
			return -1;
		if (c == '\\')
		{
			const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *at;
			unsigned int code;

			p++;
			if (*p == 'u' && sscanf(p + 1, "00%2x", &code) == 1 && code > 0 &&
				strspn(p + 1, "0123456789abcdefABCDEF") >= 4)
			{
				c = (char) code;
				p += 4;
			}
			else if (*p != '\0' && (at = strchr(from, *p)) != NULL)
				c = to[at - from];
			else
				return -1;
		}
		out[len++] = c;
	}
	out[len] = '\0';
	return 1;
}

/*
 * utf8_sequence_length: the length (1 to 4) of the well-formed UTF-8
 * sequence that starts at p, or 0 if none does.  Well-formed as the server
 * has it (PostgreSQL's pg_utf8_islegal): no continuation byte as a lead, no
 * overlong form (leads C0 and C1, E0 then below A0, F0 then below 90), no
 * surrogate (ED then above 9F), nothing above U+10FFFF (F4 then above 8F,
 * leads F5 to FF), and every byte there: the string's NUL ends a sequence
 * cut short.
 */
static int
utf8_sequence_length(const unsigned char *p)
{
	unsigned char lo = 0x80,
				hi = 0xBF;		/* the range of the second byte */
	int			n,
				k;

	if (p[0] < 0x80)
		return 1;
	if (p[0] < 0xC2 || p[0] > 0xF4)
		return 0;
	n = p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
	if (p[0] == 0xE0)
		lo = 0xA0;
	else if (p[0] == 0xED)
		hi = 0x9F;
	else if (p[0] == 0xF0)
		lo = 0x90;
	else if (p[0] == 0xF4)
		hi = 0x8F;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (k = 2; k < n; k++)
		if (p[k] < 0x80 || p[k] > 0xBF)
			return 0;
	return n;
}

/*
 * make_valid_utf8 replaces, in place, each byte of s that does not start
 * or belong to a well-formed UTF-8 sequence (utf8_sequence_length) with '?':
 * a reason cut in the middle of a character, or a command's output in
 * another encoding, would otherwise make the server refuse the whole report
 * (and the agent then drop the reason).
 */
void
make_valid_utf8(char *s)
{
	unsigned char *p = (unsigned char *) s;

	while (*p)
	{
		int			n = utf8_sequence_length(p);

		if (n == 0)
			*p++ = '?';
		else
			p += n;
	}
}

/* valid_utf8: whether s is well-formed UTF-8 throughout (utf8_sequence_length) */
static bool
valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *) s;
	int			n;

	while (*p)
	{
		if ((n = utf8_sequence_length(p)) == 0)
			return false;
		p += n;
	}
	return true;
}

/*
 * output_tail copies the last bytes of buf (len of them) into out, as
 * text the server takes: at most cap - 1 bytes, from the first byte that
 * starts a UTF-8 character on (what a cut left of one before it is
 * dropped), each NUL byte, which would end the text, made '?', and what is
 * not well-formed UTF-8 made '?' (make_valid_utf8).  Returns the length
 * copied.  What the database keeps of a job's output (OUTPUT_TAIL_BYTES).
 */
size_t
output_tail(const char *buf, size_t len, char *out, size_t cap)
{
	size_t		start,
				n,
				i;
	int			skipped = 0;

	if (cap == 0)
		return 0;
	start = len > cap - 1 ? len - (cap - 1) : 0;
	/* a UTF-8 character has at most 3 bytes after its first (the ring may
	 * have cut one too) */
	while (start < len && skipped < 3 &&
		   ((unsigned char) buf[start] & 0xC0) == 0x80)
	{
		start++;
		skipped++;
	}
	n = len - start;
	for (i = 0; i < n; i++)
		out[i] = buf[start + i] == '\0' ? '?' : buf[start + i];
	out[n] = '\0';
	make_valid_utf8(out);
	return n;
}

/*
 * printable_copy copies s into buf (cap bytes), each control character
 * made '?' and what is not well-formed UTF-8 too: a host name, a file's
 * path or a launcher's handle as the server takes it (attempt_started
 * refuses control characters).
 */
void
printable_copy(const char *s, char *buf, size_t cap)
{
	unsigned char *p;

	snprintf(buf, cap, "%s", s ? s : "");
	for (p = (unsigned char *) buf; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	make_valid_utf8(buf);
}

/* trimmed copies a libpq message into buf without its trailing newline */
const char *
trimmed(const char *msg, char *buf, size_t cap)
{
	size_t		n;

	snprintf(buf, cap, "%s", msg ? msg : "");
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return buf;
}

/*
 * first_line copies the first line of s, without surrounding blanks, into
 * buf: a launcher command's answer (a handle, a status).
 */
void
first_line(const char *s, char *buf, size_t cap)
{
	size_t		n;

	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	n = strcspn(s, "\r\n");
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
}

/*
 * last_line copies the last non-empty line of s into buf ("" if none): what
 * a failed command said last on stderr, for the job's reason.
 */
void
last_line(const char *s, char *buf, size_t cap)
{
	const char *start = NULL,
			   *p;

	buf[0] = '\0';
	for (p = s; *p; p++)
		if ((p == s || p[-1] == '\n') && *p != '\n' && *p != '\r')
			start = p;
	if (start)
		first_line(start, buf, cap);
}

/* signal_name: "SIGTERM" and the like, NULL for a signal without a name here */
const char *
signal_name(int sig)
{
	switch (sig)
	{
		case SIGHUP:
			return "SIGHUP";
		case SIGINT:
			return "SIGINT";
		case SIGQUIT:
			return "SIGQUIT";
		case SIGILL:
			return "SIGILL";
		case SIGABRT:
			return "SIGABRT";
		case SIGFPE:
			return "SIGFPE";
		case SIGKILL:
			return "SIGKILL";
		case SIGSEGV:
			return "SIGSEGV";
		case SIGPIPE:
			return "SIGPIPE";
		case SIGALRM:
			return "SIGALRM";
		case SIGTERM:
			return "SIGTERM";
		case SIGUSR1:
			return "SIGUSR1";
		case SIGUSR2:
			return "SIGUSR2";
		case SIGBUS:
			return "SIGBUS";
		case SIGXCPU:
			return "SIGXCPU";
		default:
			return NULL;
	}
}

/*
 * describe_wait_status says how a child ended, from its wait() status:
 * "exit code N" or "killed by signal NAME" (a job's or a command's end, in
 * the log and in a reason).
 */
void
describe_wait_status(int status, char *buf, size_t cap)
{
	if (WIFEXITED(status))
		snprintf(buf, cap, "exit code %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status) && signal_name(WTERMSIG(status)))
		snprintf(buf, cap, "killed by signal %s", signal_name(WTERMSIG(status)));
	else
		snprintf(buf, cap, "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/*
 * split_argv splits the claim's "LEN:BYTES..." pieces (the server's
 * encoding of the command's JSON array) into a NULL-terminated argv; NULL
 * if out of memory.  free_argv frees it.
 */
char **
split_argv(const char *s)
{
	size_t		n = 0,
				cap = 8;
	char	  **argv = malloc(cap * sizeof(char *));

	if (argv == NULL)
		return NULL;
	while (*s)
	{
		char	   *end;
		unsigned long len = strtoul(s, &end, 10);

		if (*end != ':' || strlen(end + 1) < len)
			break;				/* cannot happen: the server made it */
		if (n + 2 > cap)
		{
			char	  **more = realloc(argv, (cap *= 2) * sizeof(char *));

			if (more == NULL)
				break;
			argv = more;
		}
		argv[n] = malloc(len + 1);
		if (argv[n] == NULL)
			break;
		memcpy(argv[n], end + 1, len);
		argv[n][len] = '\0';
		n++;
		s = end + 1 + len;
	}
	argv[n] = NULL;
	return argv;
}

/* free_argv frees what split_argv returned (NULL: nothing) */
void
free_argv(char **argv)
{
	char	  **p;

	if (argv == NULL)
		return;
	for (p = argv; *p; p++)
		free(*p);
	free(argv);
}

/* describe_argv writes the command as one line for the log */
void
describe_argv(char **argv, char *buf, size_t cap)
{
	size_t		len = 0;
	char	  **p;

	buf[0] = '\0';
	for (p = argv; *p; p++)
		append(buf, cap, &len, "%s%s", p == argv ? "" : " ", *p);
}

/*
 * parse_seconds reads a number of seconds for an option: a number from 0
 * (if zero_ok, else above 0) to a year, nothing else.  False if s is not
 * one (*seconds is then left as it was).
 */
bool
parse_seconds(const char *s, bool zero_ok, double *seconds)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 86400 * 365 ||
		(!zero_ok && v == 0))
		return false;
	*seconds = v;
	return true;
}

/*
 * parse_count reads an integer from min to max for an option, nothing else.
 * False if s is not one (*count is then left as it was).
 */
bool
parse_count(const char *s, long min, long max, long *count)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*count = v;
	return true;
}

/*
 * conninfo_has_password: whether a libpq connection string or URI carries
 * a password: a "password" key (or anything that says password: better
 * hidden once too often than not), or a URI's user:password@.
 */
bool
conninfo_has_password(const char *s)
{
	const char *p;
	size_t		authority;
	const char *at = NULL;

	for (p = s; *p; p++)
		if (strncasecmp(p, "password", 8) == 0)
			return true;
	if (strncmp(s, "postgresql://", 13) == 0)
		s += 13;
	else if (strncmp(s, "postgres://", 11) == 0)
		s += 11;
	else
		return false;
	authority = strcspn(s, "/?");
	for (p = s; p < s + authority; p++)
		if (*p == '@')
			at = p;
	return at != NULL && memchr(s, ':', at - s) != NULL;
}

/*
 * parse_proc_stat reads the parent's pid from the text of /proc/PID/stat,
 * "PID (COMM) STATE PPID ...": after the last ')', for COMM (a process's
 * name, of its own choosing) may hold blanks and parentheses.  False if it
 * is not there.
 */
bool
parse_proc_stat(const char *text, long *ppid)
{
	const char *p = strrchr(text, ')');
	char		state;

	return p != NULL && sscanf(p + 1, " %c %ld", &state, ppid) == 2;
}

/*
 * descendants_of puts into out (of room for n) the processes that descend
 * from root, its children first, given the host's processes as n pairs
 * (pids[i], ppids[i]); returns how many.  root itself is not among them.
 */
int
descendants_of(long root, const long *pids, const long *ppids, int n, long *out)
{
	int			found = 0;
	int			k,
				i;

	for (k = -1; k < found; k++)
	{
		long		parent = k < 0 ? root : out[k];

		for (i = 0; i < n && found < n; i++)
			if (ppids[i] == parent && pids[i] != root)
				out[found++] = pids[i];
	}
	return found;
}

/*
 * long_argument: the index of the first argument of argv that exec would
 * refuse, longer than limit bytes with its NUL (Linux's MAX_ARG_STRLEN),
 * or -1 if none is.
 */
int
long_argument(char **argv, size_t limit)
{
	int			i;

	for (i = 0; argv[i]; i++)
		if (strlen(argv[i]) + 1 > limit)
			return i;
	return -1;
}

/*
 * jobs_user_problem: what is wrong with the choice of the jobs' OS user, or
 * NULL if nothing is.  local: no --start-cmd (the agent runs the jobs'
 * commands itself); noop: --noop (it runs nothing); run_as, same_user: the
 * options given.  Local jobs run as --run-as's user, or as the agent's own
 * with --same-user, which must be asked for by name: a job of the agent's
 * user can stop or signal the agent, and so every other job of its host.
 * Both options are about local jobs: an external launcher's commands are
 * the operator's, not the jobs'.
 */
const char *
jobs_user_problem(bool local, bool noop, bool run_as, bool same_user)
{
	if (run_as && same_user)
		return "--run-as and --same-user together: give one (--run-as runs the jobs as another user, --same-user as the agent's own)";
	if (run_as && !local)
		return "--run-as is for local jobs: it goes with no --start-cmd";
	if (same_user && !local)
		return "--same-user is for local jobs: it goes with no --start-cmd";
	if (local && !noop && !run_as && !same_user)
		return "say which OS user runs the jobs: --run-as=USER (the agent runs as root, the jobs "
			"as USER) or --same-user (the jobs run as the agent's own user, so any of them can stop "
			"or signal the agent, and with it every other job of this host; see doc/agents.md)";
	return NULL;
}

/* the longest KEY=VALUE of --labels: a key, "=", a value of 4-byte characters */
#define MAX_LABEL_BYTES (QS_MAX_LABEL_KEY_CHARS + 1 + 4 * QS_MAX_LABEL_VALUE_CHARS)

/* refuse writes what is wrong into err (of size errcap), and returns false */
static bool refuse(char *err, size_t errcap, const char *fmt,...) PRINTF_LIKE(3, 4);

static bool
refuse(char *err, size_t errcap, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, errcap, fmt, ap);
	va_end(ap);
	return false;
}

/*
 * one_label checks one KEY=VALUE of --labels (item, len bytes, at most
 * MAX_LABEL_BYTES; keys: the n keys before it) by the rules of
 * src/core/host_labels.h, and appends it to the JSON object in out (at
 * *out_len); false, with what is wrong in err.
 */
static bool
one_label(const char *item, size_t len, char **keys, int n, char *out, size_t cap,
		  size_t *out_len, char *err, size_t errcap)
{
	const char *eq = memchr(item, '=', len);
	size_t		klen = eq ? (size_t) (eq - item) : 0;
	size_t		vlen = eq ? len - klen - 1 : 0;
	const char *problem;
	char		value[MAX_LABEL_BYTES + 1];

	if (eq == NULL)
		return refuse(err, errcap, "--labels: \"%.*s\" is not KEY=VALUE", (int) len, item);
	if ((problem = QsLabelKeyProblem(item, klen)) != NULL)
		return refuse(err, errcap, "--labels: key \"%.*s\": %s", (int) klen, item, problem);
	for (int i = 0; i < n; i++)
		if (strlen(keys[i]) == klen && strncmp(keys[i], item, klen) == 0)
			return refuse(err, errcap, "--labels: key \"%.*s\" given twice", (int) klen, item);
	memcpy(value, eq + 1, vlen);
	value[vlen] = '\0';
	problem = QsLabelValueProblem(QsUtf8Chars(value, vlen));
	if (problem == NULL && !valid_utf8(value))
		problem = "a label value is UTF-8 text";
	if (problem != NULL)
		return refuse(err, errcap, "--labels: the value of \"%.*s\": %s", (int) klen, item, problem);
	keys[n] = strndup(item, klen);
	append(out, cap, out_len, "%s\"%s\": \"", n > 0 ? ", " : "", keys[n] ? keys[n] : "");
	json_escape(out, cap, out_len, value);
	append(out, cap, out_len, "\"");
	return keys[n] != NULL || refuse(err, errcap, "out of memory");
}

/*
 * labels_json turns --labels, "KEY=VALUE,KEY=VALUE" (the empty string: no
 * labels), into the JSON object agent_ready takes, in out (of size cap, at
 * least labels_json_size(arg)), checked by the rules the database checks
 * it with (src/core/host_labels.h), a key given twice refused too; a
 * value has no comma, and the first "=" of a label ends its key.  Returns
 * false, with what is wrong in err (of size errcap), when arg breaks them.
 */
bool
labels_json(const char *arg, char *out, size_t cap, char *err, size_t errcap)
{
	char	   *keys[QS_MAX_HOST_LABELS] = {0};
	size_t		out_len = 0;
	int			n = 0;
	bool		ok = true;
	const char *item = arg;

	append(out, cap, &out_len, "{");
	while (ok && *arg != '\0')
	{
		size_t		len = strcspn(item, ",");
		const char *problem = QsLabelCountProblem(n + 1);

		if (problem == NULL && len == 0)
			problem = "an empty label (a comma too many)";
		else if (problem == NULL && len > MAX_LABEL_BYTES)
			problem = "a label longer than a key and a value may be";
		if (problem != NULL)
			ok = refuse(err, errcap, "--labels: %s", problem);
		else
			ok = one_label(item, len, keys, n++, out, cap, &out_len, err, errcap);
		if (item[len] == '\0')
			break;
		item += len + 1;
	}
	append(out, cap, &out_len, "}");
	for (int i = 0; i < n; i++)
		free(keys[i]);
	return ok;
}

/* labels_json_size: the size labels_json's out needs for arg (every byte escaped) */
size_t
labels_json_size(const char *arg)
{
	return 6 * strlen(arg) + 8 * QS_MAX_HOST_LABELS + 3;
}

/*
 * address_problem: what is wrong with --address, by the rule the database
 * checks it with (src/core/host_labels.h), or NULL.
 */
const char *
address_problem(const char *address)
{
	size_t		len = strlen(address);
	const char *problem = QsAddressProblem(address, len, QsUtf8Chars(address, len));

	if (problem == NULL && !valid_utf8(address))
		problem = "an address is UTF-8 text";
	return problem;
}
