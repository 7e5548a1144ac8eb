/*-------------------------------------------------------------------------
 *
 * version.h
 *		The order of two versions of quota_sched, "MAJOR.MINOR" with any
 *		further ".PART": for the library (which schema it meets) and the
 *		agent (which schema it connects to), one home for both programs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_VERSION_H
#define QS_VERSION_H

#include <stdlib.h>

/*
 * QsCompareVersions compares two versions part by part, each a number
 * (0.10 after 0.9; what is not a number counts as 0): negative, zero or
 * positive as a is older than, the same as or newer than b.
 */
static inline int
QsCompareVersions(const char *a, const char *b)
{
	char	   *end_a,
			   *end_b;

	for (;;)
	{
		long		part_a = strtol(a, &end_a, 10);
		long		part_b = strtol(b, &end_b, 10);

		if (part_a != part_b)
			return part_a < part_b ? -1 : 1;
		if (*end_a != '.' || *end_b != '.')
			return (*end_a == '.') - (*end_b == '.');
		a = end_a + 1;
		b = end_b + 1;
	}
}

#endif							/* QS_VERSION_H */
