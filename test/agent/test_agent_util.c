/*-------------------------------------------------------------------------
 *
 * test_agent_util.c
 *		Unit tests of quota-sched-agent's pure helpers (agent/util.c), built
 *		without libpq: make_valid_utf8 (what the server takes as UTF-8),
 *		json_escape, json_string_field, split_argv, parse_seconds and parse_count, the rule of
 *		the jobs' OS user (jobs_user_problem), the order of versions
 *		(QsCompareVersions, src/core/version.h), --labels and --address
 *		(labels_json, address_problem: src/core/host_labels.h's rules), and
 *		the helpers on lines and a child's end.
 *		Prints TAP.
 *
 * Run by `make -C agent unitcheck` (and so by the top Makefile's
 * unitcheck).
 *
 *-------------------------------------------------------------------------
 */
#include "util.h"
#include "version.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tap_ok.h"

/* hex writes s's bytes as hex into buf, for the diagnostics */
static const char *
hex(const char *s, char *buf, size_t cap)
{
	size_t		len = 0;

	buf[0] = '\0';
	for (; *s; s++)
		append(buf, cap, &len, "%s%02X", len ? " " : "", (unsigned char) *s);
	return buf;
}

/* utf8_case: make_valid_utf8 turns in into want */
static void
utf8_case(const char *what, const char *in, const char *want)
{
	char		buf[256];
	char		got_hex[800];
	char		want_hex[800];

	snprintf(buf, sizeof(buf), "%s", in);
	make_valid_utf8(buf);
	CHECK(strcmp(buf, want) == 0, "make_valid_utf8: %s", what);
	if (strcmp(buf, want) != 0)
		printf("#   got %s, want %s\n", hex(buf, got_hex, sizeof(got_hex)),
			   hex(want, want_hex, sizeof(want_hex)));
}

/* test_utf8: what PostgreSQL's pg_utf8_islegal takes is kept, else each byte is '?' */
static void
test_utf8(void)
{
	utf8_case("ASCII kept", "plain text, 42!", "plain text, 42!");
	utf8_case("2-byte characters kept", "h\xC3\xA9llo \xC2\x80 \xDF\xBF", "h\xC3\xA9llo \xC2\x80 \xDF\xBF");
	utf8_case("3-byte characters kept", "\xE2\x82\xAC \xE0\xA0\x80 \xED\x9F\xBF \xEE\x80\x80 \xEF\xBF\xBF",
			  "\xE2\x82\xAC \xE0\xA0\x80 \xED\x9F\xBF \xEE\x80\x80 \xEF\xBF\xBF");
	utf8_case("4-byte characters kept", "\xF0\x9F\x98\x80 \xF0\x90\x80\x80 \xF4\x8F\xBF\xBF",
			  "\xF0\x9F\x98\x80 \xF0\x90\x80\x80 \xF4\x8F\xBF\xBF");
	utf8_case("surrogate U+D800", "a\xED\xA0\x80z", "a???z");
	utf8_case("surrogate U+DFFF", "\xED\xBF\xBF", "???");
	utf8_case("2-byte overlongs (C0, C1)", "\xC0\x80 \xC1\xBF", "?? ??");
	utf8_case("3-byte overlong E0 80 80", "\xE0\x80\x80", "???");
	utf8_case("3-byte overlong E0 9F BF", "x\xE0\x9F\xBFy", "x???y");
	utf8_case("4-byte overlong F0 80 80 80", "\xF0\x80\x80\x80", "????");
	utf8_case("4-byte overlong F0 8F BF BF", "\xF0\x8F\xBF\xBF", "????");
	utf8_case("above U+10FFFF (F4 90 80 80)", "\xF4\x90\x80\x80", "????");
	utf8_case("lead bytes F5 to F7", "\xF5\x80\x80\x80 \xF7\xBF\xBF\xBF", "???? ????");
	utf8_case("lead bytes F8 to FF", "\xF8\x88\x80\x80\x80 \xFC\x84\x80\x80\x80\x80 \xFE \xFF",
			  "????? ?????? ? ?");
	utf8_case("lone continuation bytes", "a\x80\xBF" "b", "a??b");
	utf8_case("Latin-1 text", "caf\xE9 \xFC" "ber", "caf? ?ber");
	utf8_case("truncated 2-byte sequence at the end", "ab\xC3", "ab?");
	utf8_case("truncated 3-byte sequence at the end", "ab\xE2\x82", "ab??");
	utf8_case("truncated 4-byte sequence at the end", "\xF0\x9F\x98", "???");
	utf8_case("truncated 3-byte sequence mid-string", "\xE2\x82" "A\xE2\x82\xAC", "??A\xE2\x82\xAC");
	utf8_case("truncated 4-byte sequence mid-string", "\xF0\x9F" "A \xF0\x9F\x98 b", "??A ??? b");
	utf8_case("a lead byte before a lead byte", "\xC3\xC3\xA9", "?\xC3\xA9");
	utf8_case("empty string", "", "");
}

/* escape_case: json_escape of in (into a buffer of cap) is want */
static void
escape_case(const char *what, const char *in, size_t cap, const char *want)
{
	char		buf[256];
	size_t		len = 0;

	json_escape(buf, cap, &len, in);
	CHECK(strcmp(buf, want) == 0 && len == strlen(want), "json_escape: %s", what);
	if (strcmp(buf, want) != 0)
		printf("#   got \"%s\", want \"%s\"\n", buf, want);
}

/* test_json_escape: quotes, backslashes and control characters escaped, nothing past cap */
static void
test_json_escape(void)
{
	char		buf[64] = "{\"m\":\"";
	size_t		len = strlen(buf);

	escape_case("plain text as it is", "job 7 started", 256, "job 7 started");
	escape_case("quotes and backslashes", "say \"hi\" \\ bye", 256, "say \\\"hi\\\" \\\\ bye");
	escape_case("newline, return, tab", "a\nb\rc\td", 256, "a\\nb\\rc\\td");
	escape_case("other control characters as \\u00XX", "\x01-\x1f-\x7f-\x1b", 256,
				"\\u0001-\\u001f-\\u007f-\\u001b");
	escape_case("UTF-8 passed through", "\xE2\x82\xAC\xC3\xA9", 256, "\xE2\x82\xAC\xC3\xA9");
	escape_case("cut at the buffer's size", "abcdefghij", 5, "abcd");
	escape_case("an escape cut at the buffer's size", "ab\"", 4, "ab\\");
	json_escape(buf, sizeof(buf), &len, "x\"y");
	CHECK(strcmp(buf, "{\"m\":\"x\\\"y") == 0 && len == strlen(buf),
		  "json_escape: appends at *len");
}

/* field_case: json_string_field(text, key) returns want, and out (if 1) */
static void
field_case(const char *what, const char *text, const char *key, size_t cap, int want,
		   const char *want_out)
{
	char		out[256] = "untouched";
	int			got = json_string_field(text, key, out, cap);

	CHECK(got == want && (want != 1 || strcmp(out, want_out) == 0),
		  "json_string_field: %s (got %d, \"%s\")", what, got, got == 1 ? out : "");
}

/* test_json_string_field: the fields of a dispatch notification's payload */
static void
test_json_string_field(void)
{
	const char *dispatch = "{\"job_id\":7,\"job_queue\":\"q1\",\"quota_share\":\"s\","
		"\"capacity_unit\":\"gpu\",\"instance_count\":2,\"agent\":\"gpu-07\",\"rank\":0}";

	field_case("a field", dispatch, "agent", 256, 1, "gpu-07");
	field_case("another", dispatch, "job_queue", 256, 1, "q1");
	field_case("no such field", dispatch, "host", 256, 0, "");
	field_case("a field that is a number is none", dispatch, "rank", 256, 0, "");
	field_case("the escapes PostgreSQL writes",
			   "{\"agent\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u001fe\"}", "agent", 256, 1,
			   "a\"b\\c/d\b\f\n\r\t\x1f" "e");
	field_case("UTF-8 as it is", "{\"agent\":\"h\xC3\xA9\"}", "agent", 256, 1, "h\xC3\xA9");
	field_case("a key inside a value is no key",
			   "{\"quota_share\":\"x\\\",\\\"agent\\\":\\\"me\",\"agent\":\"other\"}", "agent", 256, 1,
			   "other");
	field_case("cut short", "{\"agent\":\"gpu-0", "agent", 256, -1, "");
	field_case("an escape cut short", "{\"agent\":\"gpu\\", "agent", 256, -1, "");
	field_case("an unknown escape", "{\"agent\":\"a\\xb\"}", "agent", 256, -1, "");
	field_case("a \\u beyond 00XX", "{\"agent\":\"a\\u20acb\"}", "agent", 256, -1, "");
	field_case("a \\u0000", "{\"agent\":\"a\\u0000b\"}", "agent", 256, -1, "");
	field_case("a \\u cut short", "{\"agent\":\"a\\u00", "agent", 256, -1, "");
	field_case("too long for out", dispatch, "agent", 6, -1, "");
	field_case("just fits", dispatch, "agent", 7, 1, "gpu-07");
	field_case("an empty value", "{\"agent\":\"\"}", "agent", 256, 1, "");
}

/* argv_case: split_argv(in) is the NULL-terminated list want (n strings) */
static void
argv_case(const char *what, const char *in, int n, const char *const *want)
{
	char	  **argv = split_argv(in);
	int			i;
	bool		same = argv != NULL;

	for (i = 0; same && i < n; i++)
		same = argv[i] != NULL && strcmp(argv[i], want[i]) == 0;
	same = same && argv[n] == NULL;
	CHECK(same, "split_argv: %s", what);
	free_argv(argv);
}

/* test_split_argv: the claim's "LEN:BYTES" pieces; what is in them is never interpreted */
static void
test_split_argv(void)
{
	const char *const two[] = {"abc", "de"};
	const char *const spaces[] = {"a b  c", " "};
	const char *const quotes[] = {"it's", "\"quoted\"", "back\\slash", "$HOME", "a;b|c"};
	const char *const colons[] = {"3:x", "12", ":"};
	const char *const empty[] = {"", "x", ""};
	const char *const utf8[] = {"\xC3\xA9t\xC3\xA9"};
	const char *const newline[] = {"two\nlines"};
	const char *const none[] = {NULL};
	char		many[400] = "";
	size_t		len = 0;
	char	  **argv;
	int			i;
	bool		ok = true;
	char		line[64];

	argv_case("two arguments", "3:abc2:de", 2, two);
	argv_case("spaces kept inside an argument", "6:a b  c1: ", 2, spaces);
	argv_case("quotes, backslashes, $ and ; are bytes like others",
			  "4:it's8:\"quoted\"10:back\\slash5:$HOME5:a;b|c", 5, quotes);
	argv_case("colons and digits inside an argument", "3:3:x2:121::", 3, colons);
	argv_case("empty arguments", "0:1:x0:", 3, empty);
	argv_case("lengths in bytes (UTF-8)", "5:\xC3\xA9t\xC3\xA9", 1, utf8);
	argv_case("a newline inside an argument", "9:two\nlines", 1, newline);
	argv_case("the empty string: no argument", "", 0, none);
	argv_case("a piece longer than the rest stops there", "5:ab", 0, none);
	argv_case("no length stops there", "x3:abc", 0, none);

	for (i = 0; i < 30; i++)
		append(many, sizeof(many), &len, "%d:%d", i < 10 ? 1 : 2, i);
	argv = split_argv(many);
	for (i = 0; i < 30 && ok; i++)
	{
		char		want[8];

		snprintf(want, sizeof(want), "%d", i);
		ok = argv && argv[i] && strcmp(argv[i], want) == 0;
	}
	CHECK(ok && argv[30] == NULL, "split_argv: 30 arguments (the array grows)");
	free_argv(argv);

	argv = split_argv("4:echo5:hello");
	describe_argv(argv, line, sizeof(line));
	CHECK(strcmp(line, "echo hello") == 0, "describe_argv: the command on one line");
	free_argv(argv);
}

/* test_parse_seconds: a number of seconds, 0 only if allowed, at most a year */
static void
test_parse_seconds(void)
{
	double		v = -1;

	CHECK(parse_seconds("60", false, &v) && v == 60, "parse_seconds: 60");
	CHECK(parse_seconds("0.25", false, &v) && v == 0.25, "parse_seconds: 0.25");
	CHECK(parse_seconds("1e3", false, &v) && v == 1000, "parse_seconds: 1e3");
	CHECK(parse_seconds("31536000", false, &v) && v == 31536000, "parse_seconds: a year");
	CHECK(parse_seconds("0", true, &v) && v == 0, "parse_seconds: 0 where allowed");
	v = 7;
	CHECK(!parse_seconds("0", false, &v) && v == 7, "parse_seconds: 0 refused where not allowed, value kept");
	CHECK(!parse_seconds("-1", true, &v), "parse_seconds: negative refused");
	CHECK(!parse_seconds("31536001", true, &v), "parse_seconds: over a year refused");
	CHECK(!parse_seconds("abc", true, &v), "parse_seconds: not a number refused");
	CHECK(!parse_seconds("", true, &v), "parse_seconds: empty refused");
	CHECK(!parse_seconds("5s", true, &v), "parse_seconds: trailing characters refused");
	CHECK(!parse_seconds("nan", true, &v), "parse_seconds: nan refused");
	CHECK(!parse_seconds("inf", true, &v), "parse_seconds: inf refused");
	CHECK(!parse_seconds("1e400", true, &v), "parse_seconds: out of range refused");
	CHECK(v == 7, "parse_seconds: a refused value leaves the target as it was");
}

/* test_parse_count: an integer in [min, max], nothing else */
static void
test_parse_count(void)
{
	long		v = -1;

	CHECK(parse_count("1", 1, 100000, &v) && v == 1, "parse_count: the minimum");
	CHECK(parse_count("100000", 1, 100000, &v) && v == 100000, "parse_count: the maximum");
	CHECK(parse_count("9223372036854775807", 1, LONG_MAX, &v) && v == LONG_MAX,
		  "parse_count: LONG_MAX");
	v = 5;
	CHECK(!parse_count("0", 1, 100000, &v) && v == 5, "parse_count: below the minimum refused, value kept");
	CHECK(!parse_count("100001", 1, 100000, &v), "parse_count: above the maximum refused");
	CHECK(!parse_count("-1", 1, 100000, &v), "parse_count: negative refused");
	CHECK(!parse_count("9223372036854775808", 1, LONG_MAX, &v), "parse_count: overflow refused");
	CHECK(!parse_count("3x", 1, 100000, &v), "parse_count: trailing characters refused");
	CHECK(!parse_count("2.5", 1, 100000, &v), "parse_count: a fraction refused");
	CHECK(!parse_count("", 1, 100000, &v), "parse_count: empty refused");
	CHECK(!parse_count("x", 1, 100000, &v), "parse_count: not a number refused");
	CHECK(v == 5, "parse_count: a refused value leaves the target as it was");
}

/* test_lines: first_line, last_line, trimmed, and how a child ended */
static void
test_lines(void)
{
	char		buf[64];
	char		want[64];

	first_line("  \n handle-17  \t\nmore\n", buf, sizeof(buf));
	CHECK(strcmp(buf, "handle-17") == 0, "first_line: blanks around it dropped");
	first_line("abcdefgh", buf, 4);
	CHECK(strcmp(buf, "abc") == 0, "first_line: cut at the buffer's size");
	last_line("first\nsecond error\n\n", buf, sizeof(buf));
	CHECK(strcmp(buf, "second error") == 0, "last_line: the last non-empty line");
	last_line("", buf, sizeof(buf));
	CHECK(strcmp(buf, "") == 0, "last_line: none");
	CHECK(strcmp(trimmed("server closed\n", buf, sizeof(buf)), "server closed") == 0,
		  "trimmed: without the trailing newline");
	describe_wait_status(3 << 8, buf, sizeof(buf));
	CHECK(strcmp(buf, "exit code 3") == 0, "describe_wait_status: an exit code");
	describe_wait_status(SIGKILL, buf, sizeof(buf));
	CHECK(strcmp(buf, "killed by signal SIGKILL") == 0, "describe_wait_status: a named signal");
	describe_wait_status(SIGWINCH, buf, sizeof(buf));
	snprintf(want, sizeof(want), "killed by signal %d", SIGWINCH);
	CHECK(strcmp(buf, want) == 0, "describe_wait_status: a signal without a name here");
}

/* test_conninfo_password: which connection strings carry a password (hidden from ps) */
static void
test_conninfo_password(void)
{
	CHECK(conninfo_has_password("host=db password=s3cret"), "a password key");
	CHECK(conninfo_has_password("host=db PassWord = 'x'"), "a password key, any case");
	CHECK(conninfo_has_password("postgresql://agent:s3cret@db/jobs"), "a URI's user:password@");
	CHECK(conninfo_has_password("postgres://a:b@db1,db2:5433/jobs"), "postgres:// too");
	CHECK(!conninfo_has_password("host=db user=agent dbname=jobs"), "none in a key=value string");
	CHECK(!conninfo_has_password("postgresql://agent@db:5432/jobs"), "none in a URI with a port");
	CHECK(!conninfo_has_password("postgresql://db/jobs?user=a:b@c"), "a ':' and '@' after the host are no password");
	CHECK(!conninfo_has_password(""), "none in an empty string");
}

/* names: whether the problem p names each of the options a and b */
static bool
names(const char *p, const char *a, const char *b)
{
	return p != NULL && strstr(p, a) != NULL && strstr(p, b) != NULL;
}

/*
 * test_jobs_user: local jobs need --run-as or --same-user, not both; an
 * external launcher takes neither; --noop runs nothing and needs none
 */
static void
test_jobs_user(void)
{
	/* jobs_user_problem(local, noop, run_as, same_user) */
	CHECK(names(jobs_user_problem(true, false, false, false), "--run-as", "--same-user"),
		  "jobs_user_problem: local jobs with neither option: refused, naming both");
	CHECK(jobs_user_problem(true, false, true, false) == NULL, "jobs_user_problem: --run-as alone: taken");
	CHECK(jobs_user_problem(true, false, false, true) == NULL, "jobs_user_problem: --same-user alone: taken");
	CHECK(names(jobs_user_problem(true, false, true, true), "--run-as", "--same-user"),
		  "jobs_user_problem: --run-as and --same-user together: refused");
	CHECK(names(jobs_user_problem(false, false, true, true), "--run-as", "--same-user"),
		  "jobs_user_problem: both with an external launcher: refused as both");
	CHECK(jobs_user_problem(false, false, false, false) == NULL,
		  "jobs_user_problem: an external launcher needs neither");
	CHECK(names(jobs_user_problem(false, false, false, true), "--same-user", "--start-cmd"),
		  "jobs_user_problem: --same-user with an external launcher: refused");
	CHECK(names(jobs_user_problem(false, false, true, false), "--run-as", "--start-cmd"),
		  "jobs_user_problem: --run-as with an external launcher: refused");
	CHECK(jobs_user_problem(true, true, false, false) == NULL,
		  "jobs_user_problem: --noop runs nothing: needs neither");
	CHECK(jobs_user_problem(true, true, false, true) == NULL &&
		  jobs_user_problem(true, true, true, false) == NULL,
		  "jobs_user_problem: --noop takes either");
}

/* test_processes: /proc/PID/stat's parent, a process tree's descendants, argv's limit */
static void
test_processes(void)
{
	long		ppid = 0;
	long		pids[] = {1, 10, 11, 12, 13, 20, 21};
	long		ppids[] = {0, 1, 10, 11, 10, 1, 20};
	long		out[7];
	char		big[MAX_ARG_BYTES + 1];
	char	   *argv[] = {"sh", "-c", big, NULL};

	CHECK(parse_proc_stat("42 (sleep) S 17 42 42 0 -1", &ppid) && ppid == 17, "parse_proc_stat: the ppid");
	CHECK(parse_proc_stat("42 (a) b) S (c) R 99 1 1", &ppid) && ppid == 99,
		  "parse_proc_stat: a name with blanks and parentheses");
	CHECK(!parse_proc_stat("42 (cut", &ppid), "parse_proc_stat: no ppid");
	CHECK(descendants_of(10, pids, ppids, 7, out) == 3 && out[0] == 11 && out[1] == 13 && out[2] == 12,
		  "descendants_of: children first, then theirs");
	CHECK(descendants_of(21, pids, ppids, 7, out) == 0, "descendants_of: a leaf has none");
	memset(big, 'x', MAX_ARG_BYTES - 1);
	big[MAX_ARG_BYTES - 1] = '\0';
	CHECK(long_argument(argv, MAX_ARG_BYTES) == -1, "long_argument: 131071 bytes and the NUL fit");
	big[MAX_ARG_BYTES - 1] = 'x';
	big[MAX_ARG_BYTES] = '\0';
	CHECK(long_argument(argv, MAX_ARG_BYTES) == 2, "long_argument: 131072 bytes do not");
}

/*
 * test_output_tail: what the database gets of a job's output: the last
 * bytes, from a character's first byte on, no NUL, valid UTF-8; and
 * printable_copy of a host, path or handle
 */
static void
test_output_tail(void)
{
	char		out[8];
	char		big[16];
	char		buf[32];
	size_t		n;

	n = output_tail("hello", 5, out, sizeof(out));
	CHECK(n == 5 && strcmp(out, "hello") == 0, "output_tail: short output whole");
	n = output_tail("0123456789", 10, out, sizeof(out));
	CHECK(n == 7 && strcmp(out, "3456789") == 0, "output_tail: the last cap - 1 bytes");
	/* "ab" then three 2-byte characters: 7 bytes cut to 5 lands in one */
	memcpy(big, "ab\xc3\xa9\xc3\xa9\xc3\xa9", 8);
	n = output_tail(big, 8, out, 6);
	CHECK(n == 4 && strcmp(out, "\xc3\xa9\xc3\xa9") == 0,
		  "output_tail: starts at a character's first byte, not inside one");
	memcpy(big, "a\0b\xff", 4);
	n = output_tail(big, 4, out, sizeof(out));
	CHECK(n == 4 && memcmp(out, "a?b?", 5) == 0, "output_tail: NUL and invalid bytes made '?'");
	n = output_tail("", 0, out, sizeof(out));
	CHECK(n == 0 && out[0] == '\0', "output_tail: no output, empty text");
	/* a 4-byte character cut after its first byte: three bytes to skip */
	memcpy(big, "\xf0\x9f\x98\x80z", 5);
	n = output_tail(big + 1, 4, out, sizeof(out));
	CHECK(n == 1 && strcmp(out, "z") == 0, "output_tail: at most three continuation bytes skipped");
	printable_copy("gpu\nhost\x1b[1m", buf, sizeof(buf));
	CHECK(strcmp(buf, "gpu?host?[1m") == 0, "printable_copy: control characters made '?'");
	printable_copy(NULL, buf, sizeof(buf));
	CHECK(buf[0] == '\0', "printable_copy: NULL is empty");
}

static void
test_versions(void)
{
	CHECK(QsCompareVersions("0.3", "0.4") < 0, "QsCompareVersions: 0.3 before 0.4");
	CHECK(QsCompareVersions("0.4", "0.4") == 0, "QsCompareVersions: 0.4 is 0.4");
	CHECK(QsCompareVersions("0.5", "0.4") > 0, "QsCompareVersions: 0.5 after 0.4");
	CHECK(QsCompareVersions("0.10", "0.9") > 0, "QsCompareVersions: 0.10 after 0.9 (numbers, not text)");
	CHECK(QsCompareVersions("1.0", "0.12") > 0, "QsCompareVersions: 1.0 after 0.12");
	CHECK(QsCompareVersions("0.4", "0.4.1") < 0, "QsCompareVersions: 0.4 before 0.4.1");
	CHECK(QsCompareVersions("0.4.1", "0.4") > 0, "QsCompareVersions: 0.4.1 after 0.4");
}

/* labels_case: labels_json(arg) gives want (ok), or fails with an error that contains want */
static void
labels_case(const char *what, const char *arg, bool ok, const char *want)
{
	size_t		cap = labels_json_size(arg);
	char	   *out = malloc(cap);
	char		err[256] = "";
	bool		got = out != NULL && labels_json(arg, out, cap, err, sizeof(err));

	if (ok && !CHECK(got && strcmp(out, want) == 0, "labels_json: %s", what))
		printf("#   got %s (%s)\n", got ? out : "a failure", err);
	if (!ok && !CHECK(!got && strstr(err, want) != NULL, "labels_json refuses %s", what))
		printf("#   got %s\n", got ? out : err);
	free(out);
}

static void
test_labels(void)
{
	char		many[256] = "";
	char		json[600] = "{";
	char		value[200];
	char		arg[300];

	labels_case("none", "", true, "{}");
	labels_case("one", "rack=r1", true, "{\"rack\": \"r1\"}");
	labels_case("two, in order", "rack=r1,nvlink=nvl-3", true,
				"{\"rack\": \"r1\", \"nvlink\": \"nvl-3\"}");
	labels_case("a value with \"=\", quotes and a backslash", "a.b_c-9=x=\"y\\", true,
				"{\"a.b_c-9\": \"x=\\\"y\\\\\"}");
	labels_case("a non-ASCII value", "zone=\xC3\xA9t\xC3\xA9", true, "{\"zone\": \"\xC3\xA9t\xC3\xA9\"}");
	labels_case("an uppercase key", "Rack=r1", false, "key \"Rack\": a label key has only");
	labels_case("an empty key", "=r1", false, "key \"\": a label key has 1 to 63");
	labels_case("no \"=\"", "rack", false, "\"rack\" is not KEY=VALUE");
	labels_case("an empty value", "rack=", false, "the value of \"rack\": a label value has 1 to 128");
	labels_case("a key given twice", "rack=r1,rack=r2", false, "key \"rack\" given twice");
	labels_case("a comma too many", "rack=r1,", false, "an empty label");
	labels_case("a value that is not UTF-8", "rack=\xff", false, "a label value is UTF-8 text");
	for (int i = 0; i < 17; i++)
	{
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk%d=v", i ? "," : "", i);
		if (i < 16)
			snprintf(json + strlen(json), sizeof(json) - strlen(json), "%s\"k%d\": \"v\"",
					 i ? ", " : "", i);
	}
	labels_case("17 labels", many, false, "at most 16 labels");
	*strrchr(many, ',') = '\0';
	strcat(json, "}");
	labels_case("16 labels", many, true, json);
	memset(value, 'v', 129);
	value[129] = '\0';
	snprintf(arg, sizeof(arg), "rack=%s", value);
	labels_case("a value of 129 characters", arg, false, "a label value has 1 to 128");
	strcpy(arg, "rack=");
	strcpy(json, "{\"rack\": \"");
	for (int i = 0; i < 128; i++)
	{
		strcat(arg, "\xC3\xA9");
		strcat(json, "\xC3\xA9");
	}
	strcat(json, "\"}");
	labels_case("a value of 128 characters of 2 bytes", arg, true, json);
}

static void
test_address(void)
{
	char		value[200];
	char		arg[300];

	CHECK(address_problem("10.0.0.7") == NULL, "address_problem: an IPv4 address");
	CHECK(address_problem("fe80::1") == NULL, "address_problem: an IPv6 address");
	CHECK(address_problem("gpu-07.example.com") == NULL, "address_problem: a host name");
	CHECK(address_problem("") != NULL, "address_problem: empty");
	CHECK(address_problem("gpu 07") != NULL, "address_problem: a blank");
	CHECK(address_problem("gpu\t07") != NULL, "address_problem: a tab");
	CHECK(address_problem("gpu\x7f") != NULL, "address_problem: DEL");
	CHECK(address_problem("gpu\xff") != NULL, "address_problem: not UTF-8");
	memset(value, 'a', 199);
	value[199] = '\0';
	snprintf(arg, sizeof(arg), "%s%.54s", value, value);
	CHECK(strlen(arg) == 253 && address_problem(arg) == NULL, "address_problem: 253 characters");
	strcat(arg, "a");
	CHECK(address_problem(arg) != NULL, "address_problem: 254 characters");
}

int
main(void)
{
	test_utf8();
	test_json_escape();
	test_json_string_field();
	test_split_argv();
	test_parse_seconds();
	test_parse_count();
	test_lines();
	test_conninfo_password();
	test_jobs_user();
	test_processes();
	test_output_tail();
	test_versions();
	test_labels();
	test_address();
	return tap_done();
}
