/*-------------------------------------------------------------------------
 *
 * tap_ok.h
 *		The TAP lines of the C tests of the agent's and the command line's
 *		pure helpers (test/agent/test_agent_*.c, test/cli/test_cli_parse.c):
 *		CHECK(cond, what...) and tap_done().  Each test program includes it
 *		once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_TAP_OK_H
#define QS_TAP_OK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int	tests_run;
static int	tests_failed;

static bool tap_ok(bool ok, const char *file, int line, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/*
 * tap_ok prints one TAP line, "ok N - WHAT" or "not ok N - WHAT" (WHAT
 * printf-style) and, for a failure, the test's file and line; returns ok.
 */
static bool
tap_ok(bool ok, const char *file, int line, const char *fmt,...)
{
	va_list		ap;

	tests_run++;
	if (!ok)
		tests_failed++;
	printf("%sok %d - ", ok ? "" : "not ", tests_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		printf("#   failed at %s line %d\n", file, line);
	return ok;
}

#define CHECK(cond, ...) tap_ok((cond), __FILE__, __LINE__, __VA_ARGS__)

/* tap_done prints the plan (and how many failed) and returns the exit status */
static int
tap_done(void)
{
	printf("1..%d\n", tests_run);
	if (tests_failed)
		printf("# %d of %d tests failed\n", tests_failed, tests_run);
	return tests_failed ? 1 : 0;
}

#endif							/* QS_TAP_OK_H */
