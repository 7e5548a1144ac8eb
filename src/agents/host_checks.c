/*-------------------------------------------------------------------------
 *
 * host_checks.c
 *		The checks of an agent's labels and address (doc/agents.md):
 *		agent_ready refuses a bad value with 22023 (invalid_parameter_value)
 *		before it writes anything, and the CHECKs of quota_sched.agent
 *		(check_agent_labels, check_agent_address: validation.sql) refuse it
 *		with 23514 (check_violation), each message naming the agent and the
 *		key or value at fault.  The rules themselves are the core's
 *		(src/core/host_labels.h), which the agent applies to --labels and
 *		--address as well.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "host_checks.h"
#include "host_labels.h"
#include "checks.h"
#include "identity.h"

PG_FUNCTION_INFO_V1(qs_check_agent_labels);
PG_FUNCTION_INFO_V1(qs_check_agent_address);

/* The type of a JSON value that is not a string, as JSON names it. */
static const char *
JsonTypeName(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvBool:
			return "boolean";
		case jbvNumeric:
			return "number";
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? "array" : "object";
		default:
			return "value";
	}
}

/*
 * CheckLabel refuses a label (key and value, as the iterator gives them)
 * that the core's rules refuse.
 */
static void
CheckLabel(const JsonbValue *key, const JsonbValue *value, int sqlerrcode, const char *agent)
{
	char	   *name = pnstrdup(key->val.string.val, key->val.string.len);
	const char *problem = QsLabelKeyProblem(key->val.string.val, key->val.string.len);

	if (problem != NULL)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("invalid label key \"%s\" of agent \"%s\": %s",
						QsShortValue(name), QsShortValue(agent), problem),
				 errdetail("%s", QS_LABELS_RULE)));
	if (value->type != jbvString)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("invalid value of label \"%s\" of agent \"%s\": a JSON %s, not a string",
						name, QsShortValue(agent), JsonTypeName(value)),
				 errdetail("%s", QS_LABELS_RULE)));
	problem = QsLabelValueProblem(pg_mbstrlen_with_len(value->val.string.val,
													   value->val.string.len));
	if (problem != NULL)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("invalid value \"%s\" of label \"%s\" of agent \"%s\": %s",
						QsShortValue(pnstrdup(value->val.string.val, value->val.string.len)),
						name, QsShortValue(agent), problem),
				 errdetail("%s", QS_LABELS_RULE)));
}

/*
 * QsCheckAgentLabels raises sqlerrcode unless labels is a flat JSON object
 * of at most QS_MAX_HOST_LABELS labels that the core's rules take.
 */
void
QsCheckAgentLabels(Jsonb *labels, int sqlerrcode, const char *agent)
{
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	v,
				key = {0};
	const char *problem;

	if (!JB_ROOT_IS_OBJECT(labels) || JB_ROOT_IS_SCALAR(labels))
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("invalid labels of agent \"%s\": %s is not a JSON object", QsShortValue(agent),
						QsShortValue(JsonbToCString(NULL, &labels->root, VARSIZE(labels)))),
				 errdetail("%s", QS_LABELS_RULE)));
	problem = QsLabelCountProblem(JB_ROOT_COUNT(labels));
	if (problem != NULL)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("invalid labels of agent \"%s\": %u labels, %s", QsShortValue(agent),
						JB_ROOT_COUNT(labels), problem),
				 errdetail("%s", QS_LABELS_RULE)));
	it = JsonbIteratorInit(&labels->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			key = v;
		else if (tok == WJB_VALUE)
			CheckLabel(&key, &v, sqlerrcode, agent);
	}
}

/*
 * QsCheckAgentAddress raises sqlerrcode unless address is one the core's
 * rule takes.
 */
void
QsCheckAgentAddress(const char *address, int sqlerrcode, const char *agent)
{
	size_t		len = strlen(address);
	const char *problem = QsAddressProblem(address, len, pg_mbstrlen_with_len(address, len));

	if (problem != NULL)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("invalid address \"%s\" of agent \"%s\": %s",
						QsShortValue(address), QsShortValue(agent), problem),
				 errdetail("%s", QS_ADDRESS_RULE)));
}

/*
 * qs_check_agent_labels(labels jsonb, agent text) is the CHECK of an
 * agent's labels (QsCheckAgentLabels).
 */
Datum
qs_check_agent_labels(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	QsCheckAgentLabels(PG_GETARG_JSONB_P(0), ERRCODE_CHECK_VIOLATION,
					   text_to_cstring(PG_GETARG_TEXT_PP(1)));
	PG_RETURN_BOOL(true);
}

/*
 * qs_check_agent_address(address text, agent text) is the CHECK of an
 * agent's address (QsCheckAgentAddress).
 */
Datum
qs_check_agent_address(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	QsCheckAgentAddress(text_to_cstring(PG_GETARG_TEXT_PP(0)), ERRCODE_CHECK_VIOLATION,
						text_to_cstring(PG_GETARG_TEXT_PP(1)));
	PG_RETURN_BOOL(true);
}
