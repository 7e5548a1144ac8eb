/*-------------------------------------------------------------------------
 *
 * word_io.c
 *		The shell's side of the words of the policy core (words.h): a word
 *		read or taken that is none of its kind's is an error, never a
 *		default; the messages list a kind's words from the core's table;
 *		and quota_sched.core_words() shows those tables to SQL, so that a
 *		test compares them with the domains of sql/words.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "identity.h"
#include "word_io.h"

PG_FUNCTION_INFO_V1(qs_core_words);

/*
 * QsWordList returns a kind's words for a message: "A, B last C" (last:
 * "or", "and").
 */
char *
QsWordList(QsWordKind kind, const char *last)
{
	StringInfoData buf;
	int			n = QsKindWords(kind);
	int			first = QsKindFirst(kind);

	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%s", i == 0 ? "" : i == n - 1 ? psprintf(" %s ", last) : ", ",
						 QsWordName(kind, first + i));
	return buf.data;
}

/*
 * Shown is a name as a message quotes it: its first 64 bytes (whole
 * characters) and "..." when it is longer, as QsShortValue (checks.c).
 */
static const char *
Shown(const char *name)
{
	int			len = strlen(name);

	if (len <= 64)
		return name;
	return psprintf("%s...", pnstrdup(name, pg_mbcliplen(name, len, 64)));
}

/*
 * QsUnknownWord raises sqlerrcode for a name that is none of a kind's
 * words ("unknown KIND "NAME" of OF"; of may be NULL), with the kind's
 * words in the detail.  A value read from a table that the table's CHECK
 * should have refused is ERRCODE_INVALID_TEXT_REPRESENTATION (as an
 * enum's unknown label); an argument, ERRCODE_INVALID_PARAMETER_VALUE.
 */
void
QsUnknownWord(int sqlerrcode, QsWordKind kind, const char *name, const char *of)
{
	ereport(ERROR,
			(errcode(sqlerrcode),
			 errmsg("unknown %s \"%s\"%s%s", QsKindName(kind), Shown(name),
					of ? " of " : "", of ? of : ""),
			 errdetail("The words of %s are %s.", QsKindName(kind), QsWordList(kind, "and"))));
	pg_unreachable();
}

/*
 * QsParseWord returns the value of a kind's word; a name that is none of
 * its words raises sqlerrcode (QsUnknownWord).
 */
int
QsParseWord(int sqlerrcode, QsWordKind kind, const char *name, const char *of)
{
	int			value;

	if (!QsWordFromName(kind, name, &value))
		QsUnknownWord(sqlerrcode, kind, name, of);
	return value;
}

/*
 * qs_core_words() RETURNS TABLE (kind text, word text): every word of the
 * policy core, kind by kind in the core's order, each kind's words in
 * their enum's order.  It reveals nothing but the code's own tables.
 */
Datum
qs_core_words(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	QsCheckSchemaVersion();
	InitMaterializedSRF(fcinfo, 0);
	for (int k = 0; k < QS_KIND__COUNT; k++)
	{
		int			first = QsKindFirst((QsWordKind) k);

		for (int i = 0; i < QsKindWords((QsWordKind) k); i++)
		{
			Datum		values[2];
			bool		nulls[2] = {false, false};

			values[0] = CStringGetTextDatum(QsKindName((QsWordKind) k));
			values[1] = CStringGetTextDatum(QsWordName((QsWordKind) k, first + i));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}
