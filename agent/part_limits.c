/*-------------------------------------------------------------------------
 *
 * part_limits.c
 *		quota-sched-agent's pure helpers for a host's devices (--devices,
 *		--device-node-pattern: which devices a part gets, their names and
 *		nodes) and a part's limits (--memory-per-instance,
 *		--cpus-per-instance).
 *
 * --devices is a comma-separated list of the host's GPUs of the agent's
 * unit, either all indexes (0,1,2,3: the node of index i is the pattern's,
 * /dev/nvidia%d by default) or all UUIDs (GPU-..., MIG-...), each of which
 * may say its index (GPU-8d3f...=2) for its node; a UUID without an index
 * has no node the agent knows, so --cgroup cannot fence it (options.c
 * refuses that).
 *
 *-------------------------------------------------------------------------
 */
#include "part_limits.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* parse_index: a device index, digits only, 0 to MAX_DEVICE_INDEX; -1: not one */
static int
parse_index(const char *s, size_t len)
{
	int			v = 0;
	size_t		i;

	if (len == 0 || len > 3)
		return -1;
	for (i = 0; i < len; i++)
	{
		if (!isdigit((unsigned char) s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= MAX_DEVICE_INDEX ? v : -1;
}

/* uuid_ok: GPU-... or MIG-..., of letters, digits and '-' (and '/' for MIG) */
static bool
uuid_ok(const char *s, size_t len)
{
	size_t		i;

	if (len < 5 || len >= MAX_DEVICE_NAME ||
		(strncmp(s, "GPU-", 4) != 0 && strncmp(s, "MIG-", 4) != 0))
		return false;
	for (i = 4; i < len; i++)
		if (!isalnum((unsigned char) s[i]) && s[i] != '-' && s[i] != '/')
			return false;
	return true;
}

/*
 * parse_entry: one entry of --devices (len bytes at s) into out's next
 * slot: an index, a UUID, or UUID=INDEX.  False, with err, if it is none.
 */
static bool
parse_entry(const char *s, size_t len, DeviceList *out, char *err, size_t errcap)
{
	const char *eq = memchr(s, '=', len);
	size_t		name_len = eq ? (size_t) (eq - s) : len;
	int			index = parse_index(s, len);
	bool		uuid = index < 0;

	if (uuid && (!uuid_ok(s, name_len) ||
				 (eq && (index = parse_index(eq + 1, len - name_len - 1)) < 0)))
	{
		snprintf(err, errcap, "\"%.*s\" is no device: give an index from 0 to %d, or a UUID "
				 "(GPU-... or MIG-...), optionally with its index (UUID=INDEX)",
				 (int) (len > 100 ? 100 : len), s, MAX_DEVICE_INDEX);
		return false;
	}
	if (out->n > 0 && uuid != out->uuids)
	{
		snprintf(err, errcap, "give all devices by index or all by UUID, not both");
		return false;
	}
	out->uuids = uuid;
	snprintf(out->name[out->n], MAX_DEVICE_NAME, "%.*s", (int) name_len, s);
	out->index[out->n++] = index;
	return true;
}

/* duplicate_in: an entry of list named or numbered twice, or NULL */
static const char *
duplicate_in(const DeviceList *list)
{
	int			i,
				j;

	for (i = 0; i < list->n; i++)
		for (j = 0; j < i; j++)
			if (strcmp(list->name[i], list->name[j]) == 0 ||
				(list->index[i] >= 0 && list->index[i] == list->index[j]))
				return list->name[i];
	return NULL;
}

/*
 * parse_device_list reads --devices (see the file's comment) into out: 1
 * to MAX_DEVICES entries, none twice (by name or index).  False, with
 * err, if arg is not such a list.
 */
bool
parse_device_list(const char *arg, DeviceList *out, char *err, size_t errcap)
{
	const char *p = arg;
	const char *dup;

	memset(out, 0, sizeof(*out));
	for (;;)
	{
		size_t		len = strcspn(p, ",");

		if (out->n == MAX_DEVICES)
		{
			snprintf(err, errcap, "at most %d devices", MAX_DEVICES);
			return false;
		}
		if (!parse_entry(p, len, out, err, errcap))
			return false;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	if ((dup = duplicate_in(out)) != NULL)
	{
		snprintf(err, errcap, "device \"%s\" is given twice (by name or index)", dup);
		return false;
	}
	return true;
}

/*
 * node_pattern_problem: what is wrong with --device-node-pattern, or NULL:
 * an absolute path with one %d (the device's index) and no other %.
 */
const char *
node_pattern_problem(const char *pattern)
{
	const char *d = strstr(pattern, "%d");

	if (pattern[0] != '/')
		return "it must be an absolute path";
	if (d == NULL || strchr(pattern, '%') != d || strchr(d + 2, '%') != NULL)
		return "it must hold one %d (the device's index) and no other %";
	if (strchr(d, '/') != NULL)
		return "the %d must be in its last part (the node's name)";
	if (strlen(pattern) > 200)
		return "it must be at most 200 bytes";
	return NULL;
}

/* device_node_path: the node of device index (the pattern's %d) */
void
device_node_path(const char *pattern, int index, char *buf, size_t cap)
{
	const char *d = strstr(pattern, "%d");

	snprintf(buf, cap, "%.*s%d%s", (int) (d - pattern), pattern, index, d + 2);
}

/*
 * control_node_path: a node that every part with devices needs (name:
 * nvidiactl, nvidia-uvm), in the pattern's directory
 */
void
control_node_path(const char *pattern, const char *name, char *buf, size_t cap)
{
	const char *slash = strrchr(pattern, '/');

	snprintf(buf, cap, "%.*s/%s", (int) (slash - pattern), pattern, name);
}

/*
 * lowest_free_devices puts into out the k lowest of ndevices devices (by
 * their place in --devices) not in held; how many it found (k if enough).
 */
int
lowest_free_devices(uint64_t held, int ndevices, int k, int *out)
{
	int			i,
				n = 0;

	for (i = 0; i < ndevices && n < k; i++)
		if (!(held & ((uint64_t) 1 << i)))
			out[n++] = i;
	return n;
}

/* device_names: the names of the devices of mask, joined by sep, into buf */
void
device_names(const DeviceList *list, uint64_t mask, const char *sep, char *buf, size_t cap)
{
	size_t		len = 0;
	int			i;

	buf[0] = '\0';
	for (i = 0; i < list->n; i++)
		if (mask & ((uint64_t) 1 << i))
			append(buf, cap, &len, "%s%s", len ? sep : "", list->name[i]);
}

/*
 * parse_bytes reads a size: a whole number of bytes, or of KiB, MiB, GiB
 * or TiB with the suffix K, M, G or T (KiB etc. and k taken too), at least
 * min and at most 2^50.  False if s is not one (*bytes then as it was).
 */
bool
parse_bytes(const char *s, long long min, long long *bytes)
{
	static const char *const suffixes[] = {"", "K", "M", "G", "T"};
	char	   *end;
	long long	v;
	int			shift;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || v < 0 || !isdigit((unsigned char) s[0]))
		return false;
	for (shift = 0; shift < 5; shift++)
	{
		const char *sx = suffixes[shift];
		size_t		n = strlen(sx);

		if (strcmp(end, sx) == 0 || (n == 1 && (toupper((unsigned char) end[0]) == sx[0]) &&
									 (end[1] == '\0' || strcmp(end + 1, "iB") == 0)))
			break;
	}
	if (shift == 5 || v > (1LL << 50) >> (10 * shift) || (v << (10 * shift)) < min)
		return false;
	*bytes = v << (10 * shift);
	return true;
}

/* parse_cpus reads a number of CPUs from 0.01 to 4096; false if s is none */
bool
parse_cpus(const char *s, double *cpus)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0.01 || v > 4096 ||
		!(isdigit((unsigned char) s[0]) || s[0] == '.'))
		return false;
	*cpus = v;
	return true;
}
