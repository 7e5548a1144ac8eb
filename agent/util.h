/*-------------------------------------------------------------------------
 *
 * util.h
 *		quota-sched-agent's pure helpers: strings, UTF-8, argv, numbers.
 *
 * They use no libpq, no global state and no option: test/agent's unit
 * tests build util.c alone.  Every file of the agent includes this header
 * first (directly or through agent.h), for the feature macro below.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_UTIL_H
#define QS_AGENT_UTIL_H

#if !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif

#include <stdbool.h>
#include <stddef.h>

/*
 * Linux's limit on one argument or environment string of exec, with its
 * NUL (MAX_ARG_STRLEN: 32 pages of 4 kB)
 */
#define MAX_ARG_BYTES 131072

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

extern void append(char *buf, size_t cap, size_t *len, const char *fmt,...) PRINTF_LIKE(4, 5);
extern void json_escape(char *buf, size_t cap, size_t *len, const char *s);
extern int	json_string_field(const char *text, const char *key, char *out, size_t cap);
extern void make_valid_utf8(char *s);
extern size_t output_tail(const char *buf, size_t len, char *out, size_t cap);
extern void printable_copy(const char *s, char *buf, size_t cap);
extern const char *trimmed(const char *msg, char *buf, size_t cap);
extern void first_line(const char *s, char *buf, size_t cap);
extern void last_line(const char *s, char *buf, size_t cap);
extern const char *signal_name(int sig);
extern void describe_wait_status(int status, char *buf, size_t cap);
extern char **split_argv(const char *s);
extern void free_argv(char **argv);
extern void describe_argv(char **argv, char *buf, size_t cap);
extern bool parse_seconds(const char *s, bool zero_ok, double *seconds);
extern bool conninfo_has_password(const char *s);
extern int	long_argument(char **argv, size_t limit);
extern bool parse_proc_stat(const char *text, long *ppid);
extern int	descendants_of(long root, const long *pids, const long *ppids, int n, long *out);
extern bool parse_count(const char *s, long min, long max, long *count);
extern bool labels_json(const char *arg, char *out, size_t cap, char *err, size_t errcap);
extern size_t labels_json_size(const char *arg);
extern const char *address_problem(const char *address);
extern const char *jobs_user_problem(bool local, bool noop, bool run_as, bool same_user);

#endif							/* QS_AGENT_UTIL_H */
