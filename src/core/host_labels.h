/*-------------------------------------------------------------------------
 *
 * host_labels.h
 *		What an agent's labels and address may be (doc/agents.md): one
 *		home for the library (agent_ready and the CHECKs of quota_sched.agent,
 *		src/agents/host_checks.c) and the agent (--labels, --address,
 *		agent/util.c), as version.h is for versions.
 *
 * labels is a flat JSON object of at most QS_MAX_HOST_LABELS string values:
 * each key 1 to QS_MAX_LABEL_KEY_CHARS characters of [a-z0-9_.-], each
 * value 1 to QS_MAX_LABEL_VALUE_CHARS characters.  address is how other
 * hosts reach the agent's host, a host name or an IP address: 1 to
 * QS_MAX_ADDRESS_CHARS characters, none of them whitespace or a control
 * character (ASCII's).  Each function here judges one string and returns
 * what is wrong with it (a phrase that a message quotes after the value
 * at fault), or NULL when nothing is; the callers count characters their
 * own way (the server in the database's encoding, the agent in UTF-8:
 * QsUtf8Chars) and say which key, value or agent it is.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_HOST_LABELS_H
#define QS_HOST_LABELS_H

#include <stddef.h>

#define QS_MAX_HOST_LABELS 16
#define QS_MAX_LABEL_KEY_CHARS 63
#define QS_MAX_LABEL_VALUE_CHARS 128
#define QS_MAX_ADDRESS_CHARS 253

/* a limit in a message, as text */
#define QS_LABELS_STR_(x) #x
#define QS_LABELS_STR(x) QS_LABELS_STR_(x)

/* the rules as the messages' details state them */
#define QS_LABELS_RULE "labels is a flat JSON object of at most " \
	QS_LABELS_STR(QS_MAX_HOST_LABELS) " labels, such as {\"rack\": \"r12\"}: each key 1 to " \
	QS_LABELS_STR(QS_MAX_LABEL_KEY_CHARS) " characters of a-z, 0-9, \"_\", \".\" and \"-\", " \
	"each value a JSON string of 1 to " QS_LABELS_STR(QS_MAX_LABEL_VALUE_CHARS) " characters."
#define QS_ADDRESS_RULE "An address is how other hosts reach the agent's host, a host name " \
	"or an IP address: 1 to " QS_LABELS_STR(QS_MAX_ADDRESS_CHARS) " characters, no whitespace " \
	"or control characters."

/*
 * QsUtf8Chars: the characters of a UTF-8 string of len bytes (the bytes
 * that are not continuation bytes, 10xxxxxx).
 */
static inline size_t
QsUtf8Chars(const char *s, size_t len)
{
	size_t		n = 0;

	for (size_t i = 0; i < len; i++)
		if ((((unsigned char) s[i]) & 0xC0) != 0x80)
			n++;
	return n;
}

/* QsLabelKeyProblem: what is wrong with a label key of len bytes, or NULL. */
static inline const char *
QsLabelKeyProblem(const char *key, size_t len)
{
	if (len < 1 || len > QS_MAX_LABEL_KEY_CHARS)
		return "a label key has 1 to " QS_LABELS_STR(QS_MAX_LABEL_KEY_CHARS) " characters";
	for (size_t i = 0; i < len; i++)
	{
		char		c = key[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			  c == '-'))
			return "a label key has only the characters a-z, 0-9, \"_\", \".\" and \"-\"";
	}
	return NULL;
}

/* QsLabelValueProblem: what is wrong with a label value of chars characters, or NULL. */
static inline const char *
QsLabelValueProblem(size_t chars)
{
	if (chars < 1 || chars > QS_MAX_LABEL_VALUE_CHARS)
		return "a label value has 1 to " QS_LABELS_STR(QS_MAX_LABEL_VALUE_CHARS) " characters";
	return NULL;
}

/* QsLabelCountProblem: what is wrong with a number of labels, or NULL. */
static inline const char *
QsLabelCountProblem(size_t count)
{
	if (count > QS_MAX_HOST_LABELS)
		return "an agent has at most " QS_LABELS_STR(QS_MAX_HOST_LABELS) " labels";
	return NULL;
}

/*
 * QsAddressProblem: what is wrong with an address of len bytes and chars
 * characters, or NULL.
 */
static inline const char *
QsAddressProblem(const char *address, size_t len, size_t chars)
{
	if (chars < 1 || chars > QS_MAX_ADDRESS_CHARS)
		return "an address has 1 to " QS_LABELS_STR(QS_MAX_ADDRESS_CHARS) " characters";
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) address[i];

		if (c <= ' ' || c == 0x7f)
			return "an address has no whitespace or control characters";
	}
	return NULL;
}

#endif							/* QS_HOST_LABELS_H */
