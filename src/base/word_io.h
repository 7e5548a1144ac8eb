/*-------------------------------------------------------------------------
 *
 * word_io.h
 *		The shell's side of the words of the policy core (words.h): the
 *		parse of a word that is an error when it is none of its kind's,
 *		and the list of a kind's words for messages (word_io.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_WORD_IO_H
#define QS_WORD_IO_H

#include "words.h"

extern int	QsParseWord(int sqlerrcode, QsWordKind kind, const char *name, const char *of);
extern void QsUnknownWord(int sqlerrcode, QsWordKind kind, const char *name,
						  const char *of) pg_attribute_noreturn();
extern char *QsWordList(QsWordKind kind, const char *last);

#endif							/* QS_WORD_IO_H */
