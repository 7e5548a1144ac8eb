/*-------------------------------------------------------------------------
 *
 * test_cli_parse.c
 *		Unit tests of quota-sched's pure parts (cli/script.c), built
 *		without libpq: a script's "#QS" header lines (only in the leading
 *		comment block, quoting, bounds, errors), the checks of a script's
 *		text (size, NUL bytes), and the payload's command (a script by
 *		/bin/sh -c, one with "#!" through its interpreter, a command as it
 *		is, JSON escapes).  Prints TAP.
 *
 * Run by `make -C cli unitcheck` (and so by the top Makefile's unitcheck).
 *
 *-------------------------------------------------------------------------
 */
#include "script.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/tap_ok.h"

/*
 * joined: the header words of text joined by "|" (or "ERR:" and the
 * error), in a static buffer
 */
static const char *
joined(const char *text)
{
	static char out[8192];
	char		err[256];
	char	  **words;
	int			n = script_header_words(text, &words, err, sizeof err);
	size_t		len = 0;

	out[0] = '\0';
	if (n < 0)
	{
		snprintf(out, sizeof out, "ERR:%s", err);
		return out;
	}
	for (int i = 0; i < n; i++)
		append(out, sizeof out, &len, "%s%s", i ? "|" : "", words[i]);
	free_words(words, n);
	return out;
}

#define WORDS(text, want) \
	CHECK(strcmp(joined(text), (want)) == 0, "header of %s: [%s] (got [%s])", #text, (want), joined(text))

static void
test_header_lines(void)
{
	WORDS("#!/bin/sh\n#QS --queue=q -s nlp\n#QS -n 2\necho hi\n", "--queue=q|-s|nlp|-n|2");
	WORDS("#QS -q q\n\n# a comment\n  # indented comment\n#QS -u gpu\nrun\n#QS -n 9\n", "-q|q|-u|gpu");
	WORDS("echo first\n#QS -q q\n", "");
	WORDS("#QSX -q q\n#QS\n#QS\t-J\tt\n", "-J|t");
	WORDS("#QS --tags '{\"a\": \"b c\"}' -J \"my \\\"job\\\"\"\n", "--tags|{\"a\": \"b c\"}|-J|my \"job\"");
	WORDS("#QS -J ''\n", "-J|");
	WORDS("#QS -q q\r\n#QS -s s\r\nx\r\n", "-q|q|-s|s");
	WORDS("#QS -q q", "-q|q");
	WORDS("", "");
	WORDS("   #QS -q q\n", "");
	CHECK(strncmp(joined("#QS -J 'open\n"), "ERR:line 1: a single quote is not closed", 40) == 0,
		  "an unclosed single quote is an error naming its line: %s", joined("#QS -J 'open\n"));
	CHECK(strstr(joined("#!/bin/sh\n#QS -J \"open\n"), "line 2: a double quote") != NULL,
		  "an unclosed double quote: %s", joined("#!/bin/sh\n#QS -J \"open\n"));
}

static void
test_header_bounds(void)
{
	char	   *many = malloc(20 * (QS_HEADER_MAX_WORDS + 2));
	char	   *longword = malloc(QS_HEADER_MAX_WORD + 32);
	size_t		len = 0;

	many[0] = '\0';
	append(many, 20 * (QS_HEADER_MAX_WORDS + 2), &len, "#QS");
	for (int i = 0; i < QS_HEADER_MAX_WORDS; i++)
		append(many, 20 * (QS_HEADER_MAX_WORDS + 2), &len, " w");
	CHECK(strncmp(joined(many), "ERR:", 4) != 0, "%d words are taken", QS_HEADER_MAX_WORDS);
	append(many, 20 * (QS_HEADER_MAX_WORDS + 2), &len, " w");
	CHECK(strstr(joined(many), "more than 256 words") != NULL, "one more is refused: %.80s", joined(many));
	strcpy(longword, "#QS ");
	memset(longword + 4, 'x', QS_HEADER_MAX_WORD);
	longword[4 + QS_HEADER_MAX_WORD] = '\0';
	CHECK(strncmp(joined(longword), "ERR:", 4) != 0, "a word of %d bytes is taken", QS_HEADER_MAX_WORD);
	strcat(longword, "x");
	CHECK(strstr(joined(longword), "a word of more than 4096 bytes") != NULL, "one byte more is refused");
	free(many);
	free(longword);
}

static void
test_script_problem(void)
{
	char	   *big = malloc(QS_SCRIPT_MAX_BYTES + 2);

	memset(big, 'x', QS_SCRIPT_MAX_BYTES + 1);
	big[QS_SCRIPT_MAX_BYTES + 1] = '\0';
	CHECK(script_problem(big, QS_SCRIPT_MAX_BYTES) == NULL, "a script of 64 KiB is taken");
	CHECK(script_problem(big, QS_SCRIPT_MAX_BYTES + 1) != NULL &&
		  strstr(script_problem(big, QS_SCRIPT_MAX_BYTES + 1), "larger than 64 KiB"), "one byte more is refused");
	CHECK(script_problem("a\0b", 3) != NULL && strstr(script_problem("a\0b", 3), "NUL"), "a NUL byte is refused");
	CHECK(script_problem("", 0) != NULL, "an empty script is refused");
	free(big);
}

static void
test_payloads(void)
{
	const char *args[] = {"a b", "q\"\\"};
	const char *argv[] = {"python3", "train.py", "--lr", "0.1"};
	char	   *p = script_payload("echo hi\n", "t.sh", args, 2);

	CHECK(strcmp(p, "{\"command\": [\"/bin/sh\", \"-c\", \"echo hi\\n\", \"t.sh\", \"a b\", \"q\\\"\\\\\"]}") == 0,
		  "a script without #!: /bin/sh -c TEXT NAME ARGS, escaped: %s", p);
	free(p);
	p = script_payload("#!/usr/bin/python3\nprint(1)\n", "t.py", NULL, 0);
	CHECK(strncmp(p, "{\"command\": [\"/bin/sh\", \"-c\", \"t=$(mktemp)", 40) == 0 &&
		  strstr(p, "\"t.py\", \"#!/usr/bin/python3\\nprint(1)\\n\"]}") != NULL,
		  "a script with #!: through the wrapper, NAME then TEXT: %s", p);
	free(p);
	p = command_payload(argv, 4);
	CHECK(strcmp(p, "{\"command\": [\"python3\", \"train.py\", \"--lr\", \"0.1\"]}") == 0,
		  "a command as it is: %s", p);
	free(p);
	CHECK(strstr(script_wrapper(), "rm -f") != NULL && strstr(script_wrapper(), "chmod 700") != NULL,
		  "the wrapper removes its private file");
}

int
main(void)
{
	test_header_lines();
	test_header_bounds();
	test_script_problem();
	test_payloads();
	return tap_done();
}
