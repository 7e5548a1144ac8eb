/*-------------------------------------------------------------------------
 *
 * script.c
 *		quota-sched submit's pure parts: the "#QS" header lines of a
 *		script, the checks of its text, and the payload's command.
 *
 * A script's header is its leading comment block, as sbatch reads
 * "#SBATCH" lines: from the top, every line that is blank or begins with
 * "#"; the first other line ends it.  Of those, a line "#QS" followed by
 * white space (or nothing) gives the words after it, split at white space,
 * with '...' and "..." quoting (no escapes inside single quotes, \" and \\
 * inside double quotes), as further flags of submit; the command line's
 * own flags come after them, so they win.
 *
 *-------------------------------------------------------------------------
 */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one word being read: its bytes so far */
typedef struct Word
{
	char		buf[QS_HEADER_MAX_WORD + 1];
	size_t		len;
	bool		any;			/* a word has begun (quotes make an empty one) */
} Word;

/* add_char adds c to w; false if the word is too long */
static bool
add_char(Word *w, char c)
{
	if (w->len >= QS_HEADER_MAX_WORD)
		return false;
	w->buf[w->len++] = c;
	w->any = true;
	return true;
}

/* push_word moves w to words (n of them so far); false if too many */
static bool
push_word(Word *w, char **words, int *n)
{
	if (!w->any)
		return true;
	if (*n >= QS_HEADER_MAX_WORDS)
		return false;
	w->buf[w->len] = '\0';
	words[*n] = strdup(w->buf);
	if (words[*n] == NULL)
		return false;
	(*n)++;
	w->len = 0;
	w->any = false;
	return true;
}

/*
 * split_line splits one header line's rest (s, up to its end of line) into
 * words; an error (unclosed quote, too long, too many) fills err and
 * returns false
 */
static bool
split_line(const char *s, const char *end, int lineno, char **words, int *n,
		   char *err, size_t errcap)
{
	Word		w = {.len = 0,.any = false};
	char		quote = 0;

	for (; s < end; s++)
	{
		bool		ok = true;

		if (quote == '\'' && *s != '\'')
			ok = add_char(&w, *s);
		else if (quote == '"' && *s == '\\' && s + 1 < end && (s[1] == '"' || s[1] == '\\'))
			ok = add_char(&w, *++s);
		else if (quote && *s == quote)
			quote = 0;
		else if (quote)
			ok = add_char(&w, *s);
		else if (*s == '\'' || *s == '"')
		{
			quote = *s;
			w.any = true;
		}
		else if (*s == ' ' || *s == '\t' || *s == '\r')
			ok = push_word(&w, words, n);
		else
			ok = add_char(&w, *s);
		if (!ok)
		{
			snprintf(err, errcap, "line %d: more than %d words, or a word of more than %d bytes, in the #QS lines",
					 lineno, QS_HEADER_MAX_WORDS, QS_HEADER_MAX_WORD);
			return false;
		}
	}
	if (quote)
	{
		snprintf(err, errcap, "line %d: a %s quote is not closed", lineno,
				 quote == '"' ? "double" : "single");
		return false;
	}
	if (!push_word(&w, words, n))
	{
		snprintf(err, errcap, "line %d: more than %d words in the #QS lines", lineno, QS_HEADER_MAX_WORDS);
		return false;
	}
	return true;
}

/* header_line: whether the line at s (to end) is a "#QS" line; *rest: its words */
static bool
header_line(const char *s, const char *end, const char **rest)
{
	if (end - s < 3 || strncmp(s, "#QS", 3) != 0)
		return false;
	if (end - s > 3 && s[3] != ' ' && s[3] != '\t' && s[3] != '\r')
		return false;
	*rest = s + 3;
	return true;
}

/*
 * script_header_words reads the "#QS" lines of a script's leading comment
 * block into *words (malloc'd, each malloc'd): their number, or -1 with
 * err filled
 */
int
script_header_words(const char *text, char ***words, char *err, size_t errcap)
{
	char	  **out = calloc(QS_HEADER_MAX_WORDS + 1, sizeof(char *));
	int			n = 0,
				lineno = 0;
	const char *s = text;

	*words = out;
	if (out == NULL)
	{
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	while (*s)
	{
		const char *end = strchr(s, '\n'),
				   *p = s,
				   *rest;

		if (end == NULL)
			end = s + strlen(s);
		lineno++;
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p < end && *p != '#')
			break;				/* the first line of code: the header ends */
		if (p == s && header_line(s, end, &rest) &&
			!split_line(rest, end, lineno, out, &n, err, errcap))
		{
			free_words(out, n);
			*words = NULL;
			return -1;
		}
		s = *end ? end + 1 : end;
	}
	return n;
}

/* free_words frees what script_header_words made */
void
free_words(char **words, int n)
{
	if (words == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(words[i]);
	free(words);
}

/*
 * script_problem: why a script's text of len bytes cannot be submitted,
 * or NULL: too large for one argument of the job's argv, or a NUL byte
 * (which no argument can carry)
 */
const char *
script_problem(const char *text, size_t len)
{
	if (len > QS_SCRIPT_MAX_BYTES)
		return "it is larger than 64 KiB (65536 bytes): keep the code in a file the job runs, and submit a short script that runs it";
	if (len == 0)
		return "it is empty";
	if (memchr(text, '\0', len) != NULL)
		return "it holds a NUL byte (a binary file?): submit a text script";
	return NULL;
}

/*
 * script_wrapper: the shell code that runs a script with a "#!" line by its
 * interpreter, as the kernel would: $1 is the script's text, the rest its
 * arguments.  It writes the text to a private temporary file, runs it, and
 * removes the file.
 */
const char *
script_wrapper(void)
{
	return "t=$(mktemp) || exit 126; trap 'rm -f \"$t\"' EXIT; trap 'exit 143' TERM INT HUP; "
		"printf '%s' \"$1\" > \"$t\" && chmod 700 \"$t\" || exit 126; shift; \"$t\" \"$@\"";
}

/* json_array: {"command": [argv...]} of argc strings, malloc'd */
static char *
json_array(const char *const *argv, int argc)
{
	size_t		cap = 32,
				len = 0;
	char	   *buf;

	for (int i = 0; i < argc; i++)
		cap += 6 * strlen(argv[i]) + 4;
	buf = malloc(cap);
	if (buf == NULL)
		return NULL;
	buf[0] = '\0';
	append(buf, cap, &len, "{\"command\": [");
	for (int i = 0; i < argc; i++)
	{
		append(buf, cap, &len, "%s\"", i ? ", " : "");
		json_escape(buf, cap, &len, argv[i]);
		append(buf, cap, &len, "\"");
	}
	append(buf, cap, &len, "]}");
	return buf;
}

/* command_payload: the payload of a job that runs argv as it is */
char *
command_payload(const char *const *argv, int argc)
{
	return json_array(argv, argc);
}

/*
 * script_payload: the payload of a job that runs a script's text: by
 * /bin/sh -c (NAME as $0, ARGS as $1...), or, when its first line is "#!",
 * through script_wrapper, by the interpreter that line names
 */
char *
script_payload(const char *text, const char *name, const char *const *args, int nargs)
{
	const char **argv = malloc((nargs + 5) * sizeof(char *));
	int			n = 0;
	char	   *out;

	if (argv == NULL)
		return NULL;
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	if (strncmp(text, "#!", 2) == 0)
	{
		argv[n++] = script_wrapper();
		argv[n++] = name;
	}
	argv[n++] = text;
	if (strncmp(text, "#!", 2) != 0)
		argv[n++] = name;
	for (int i = 0; i < nargs; i++)
		argv[n++] = args[i];
	out = json_array(argv, n);
	free(argv);
	return out;
}
