/*-------------------------------------------------------------------------
 *
 * jsonb_util.c
 *		Small jsonb helpers: the lookup of a key in a jsonb object, used
 *		for capacity maps (a unit's count) and for a payload's
 *		ResourceConfig.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "jsonb_util.h"

/*
 * QsJsonbField returns the value under key of a jsonb container, or NULL
 * when the container is not an object or has no such key.
 */
JsonbValue *
QsJsonbField(JsonbContainer *container, const char *key)
{
	JsonbValue	k;

	if (!JsonContainerIsObject(container))
		return NULL;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(container, JB_FOBJECT, &k);
}
