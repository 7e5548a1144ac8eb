/*-------------------------------------------------------------------------
 *
 * script.h
 *		quota-sched submit's pure parts: a script's "#QS" header lines and
 *		the payload's command.  No libpq, no global state: test/cli's unit
 *		tests build script.c alone (with the agent's util.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_CLI_SCRIPT_H
#define QS_CLI_SCRIPT_H

#include "util.h"

/* the largest script submit takes, in bytes (one argument of the job's argv) */
#define QS_SCRIPT_MAX_BYTES 65536
/* the most words the header lines of one script give, and one word's bytes */
#define QS_HEADER_MAX_WORDS 256
#define QS_HEADER_MAX_WORD 4096
/* the most arguments of a command given after "--", and their bytes in all */
#define QS_COMMAND_MAX_ARGS 1024

extern int	script_header_words(const char *text, char ***words, char *err, size_t errcap);
extern void free_words(char **words, int n);
extern const char *script_problem(const char *text, size_t len);
extern char *command_payload(const char *const *argv, int argc);
extern char *script_payload(const char *text, const char *name, const char *const *args, int nargs);
extern const char *script_wrapper(void);

#endif							/* QS_CLI_SCRIPT_H */
