/*-------------------------------------------------------------------------
 *
 * test_agent_limits.c
 *		Unit tests of quota-sched-agent's helpers for devices and limits
 *		(agent/part_limits.c), built without libpq: --devices
 *		(parse_device_list), --device-node-pattern (node_pattern_problem,
 *		device_node_path, control_node_path), which devices a part gets
 *		(lowest_free_devices, device_names), --memory-per-instance
 *		(parse_bytes) and --cpus-per-instance (parse_cpus).  Prints TAP.
 *
 * Run by `make -C agent unitcheck` (and so by the top Makefile's
 * unitcheck).
 *
 *-------------------------------------------------------------------------
 */
#include "part_limits.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap_ok.h"

/* refused: parse_device_list refuses arg, saying want (a part of its message) */
static void
refused(const char *arg, const char *want)
{
	DeviceList	list;
	char		err[256] = "";
	bool		ok = parse_device_list(arg, &list, err, sizeof(err));

	if (!CHECK(!ok && strstr(err, want) != NULL, "--devices %.40s refused: %s", arg, want))
		printf("#   said: %s\n", err);
}

/* test_device_lists: what --devices takes, and what it refuses */
static void
test_device_lists(void)
{
	DeviceList	list;
	char		err[256];
	char		many[400] = "";
	size_t		len = 0;
	int			i;

	CHECK(parse_device_list("0,1,2,3", &list, err, sizeof(err)) && list.n == 4 && !list.uuids &&
		  strcmp(list.name[2], "2") == 0 && list.index[3] == 3, "--devices 0,1,2,3: four indexes");
	CHECK(parse_device_list("3,1", &list, err, sizeof(err)) && list.index[0] == 3 &&
		  list.index[1] == 1, "--devices 3,1: in the order given");
	CHECK(parse_device_list("GPU-8d3f5a2e-1c4b,MIG-GPU-8d3f/1/0", &list, err, sizeof(err)) &&
		  list.n == 2 && list.uuids && list.index[0] == -1 &&
		  strcmp(list.name[1], "MIG-GPU-8d3f/1/0") == 0, "UUIDs: no index known");
	CHECK(parse_device_list("GPU-aa=1,GPU-bb=0", &list, err, sizeof(err)) &&
		  strcmp(list.name[0], "GPU-aa") == 0 && list.index[0] == 1 && list.index[1] == 0,
		  "UUID=INDEX: the name without the index, the index for its node");
	for (i = 0; i < MAX_DEVICES; i++)
		append(many, sizeof(many), &len, "%s%d", i ? "," : "", i);
	CHECK(parse_device_list(many, &list, err, sizeof(err)) && list.n == MAX_DEVICES,
		  "%d devices", MAX_DEVICES);
	append(many, sizeof(many), &len, ",%d", MAX_DEVICES);
	refused(many, "at most 64 devices");
	refused("", "\"\" is no device");
	refused("0,,1", "\"\" is no device");
	refused("0,", "\"\" is no device");
	refused("-1", "\"-1\" is no device");
	refused("255", "\"255\" is no device");
	refused("1a", "\"1a\" is no device");
	refused("0,1,0", "device \"0\" is given twice");
	refused("GPU-aa=1,GPU-bb=1", "device \"GPU-bb\" is given twice");
	refused("GPU-aa,GPU-aa", "device \"GPU-aa\" is given twice");
	refused("0,GPU-aa", "by index or all by UUID, not both");
	refused("GPU-aa,0", "by index or all by UUID, not both");
	refused("GPU-", "\"GPU-\" is no device");
	refused("GPU-a b", "\"GPU-a b\" is no device");
	refused("GPU-aa=", "\"GPU-aa=\" is no device");
	refused("GPU-aa=x", "\"GPU-aa=x\" is no device");
	refused("gpu-aa", "\"gpu-aa\" is no device");
}

/* test_nodes: --device-node-pattern, and the nodes it names */
static void
test_nodes(void)
{
	char		buf[256];

	CHECK(node_pattern_problem("/dev/nvidia%d") == NULL, "the default pattern");
	CHECK(node_pattern_problem("/tmp/x/gpu%d-node") == NULL, "a pattern with text after %%d");
	CHECK(node_pattern_problem("dev/nvidia%d") != NULL, "a relative pattern refused");
	CHECK(node_pattern_problem("/dev/nvidia") != NULL, "a pattern without %%d refused");
	CHECK(node_pattern_problem("/dev/nvidia%d%d") != NULL, "two %%d refused");
	CHECK(node_pattern_problem("/dev/nvidia%s") != NULL, "%%s refused");
	CHECK(node_pattern_problem("/dev/%%nvidia%d") != NULL, "another %% refused");
	CHECK(node_pattern_problem("/dev/%d/nvidia") != NULL, "%%d in a directory refused");
	device_node_path("/dev/nvidia%d", 3, buf, sizeof(buf));
	CHECK(strcmp(buf, "/dev/nvidia3") == 0, "device 3's node: /dev/nvidia3");
	device_node_path("/tmp/x/gpu%d-node", 12, buf, sizeof(buf));
	CHECK(strcmp(buf, "/tmp/x/gpu12-node") == 0, "in a pattern: /tmp/x/gpu12-node");
	control_node_path("/tmp/x/nvidia%d", "nvidiactl", buf, sizeof(buf));
	CHECK(strcmp(buf, "/tmp/x/nvidiactl") == 0, "nvidiactl in the pattern's directory");
}

/* test_picking: the lowest free devices, and their names */
static void
test_picking(void)
{
	DeviceList	list;
	char		err[256];
	char		names[256];
	int			out[MAX_DEVICES];

	CHECK(lowest_free_devices(0, 4, 2, out) == 2 && out[0] == 0 && out[1] == 1,
		  "none held: 0 and 1");
	CHECK(lowest_free_devices(0x3, 4, 2, out) == 2 && out[0] == 2 && out[1] == 3,
		  "0 and 1 held: 2 and 3");
	CHECK(lowest_free_devices(0x5, 4, 2, out) == 2 && out[0] == 1 && out[1] == 3,
		  "0 and 2 held: 1 and 3");
	CHECK(lowest_free_devices(0xe, 4, 2, out) == 1 && out[0] == 0, "three held: one found of two");
	CHECK(lowest_free_devices(0, 64, 64, out) == 64 && out[63] == 63, "all 64");
	parse_device_list("GPU-aa,GPU-bb,GPU-cc", &list, err, sizeof(err));
	device_names(&list, 0x5, ",", names, sizeof(names));
	CHECK(strcmp(names, "GPU-aa,GPU-cc") == 0, "device_names: GPU-aa,GPU-cc");
	device_names(&list, 0, ",", names, sizeof(names));
	CHECK(strcmp(names, "") == 0, "device_names: none");
}

/* test_sizes: --memory-per-instance and --cpus-per-instance */
static void
test_sizes(void)
{
	long long	b = 7;
	double		c = 7;
	const long long M = 1024 * 1024;

	CHECK(parse_bytes("64M", 4 * M, &b) && b == 64 * M, "64M");
	CHECK(parse_bytes("64MiB", 4 * M, &b) && b == 64 * M, "64MiB");
	CHECK(parse_bytes("2g", 4 * M, &b) && b == 2048 * M, "2g");
	CHECK(parse_bytes("1T", 4 * M, &b) && b == 1024 * 1024 * M, "1T");
	CHECK(parse_bytes("8388608", 4 * M, &b) && b == 8 * M, "bytes");
	CHECK(parse_bytes("4096K", 4 * M, &b) && b == 4 * M, "4096K: the minimum");
	b = 7;
	CHECK(!parse_bytes("1M", 4 * M, &b) && b == 7, "1M below the minimum refused, value kept");
	CHECK(!parse_bytes("2048T", 4 * M, &b), "2048T over 2^50 refused");
	CHECK(!parse_bytes("64X", 4 * M, &b), "an unknown suffix refused");
	CHECK(!parse_bytes("64 M", 4 * M, &b), "a blank refused");
	CHECK(!parse_bytes("-64M", 4 * M, &b), "negative refused");
	CHECK(!parse_bytes("", 4 * M, &b), "empty refused");
	CHECK(!parse_bytes("99999999999999999999", 4 * M, &b), "overflow refused");
	CHECK(parse_cpus("0.5", &c) && c == 0.5, "0.5 CPUs");
	CHECK(parse_cpus("4", &c) && c == 4, "4 CPUs");
	c = 7;
	CHECK(!parse_cpus("0", &c) && c == 7, "0 refused, value kept");
	CHECK(!parse_cpus("0.001", &c), "below 0.01 refused");
	CHECK(!parse_cpus("5000", &c), "over 4096 refused");
	CHECK(!parse_cpus("nan", &c) && !parse_cpus("inf", &c), "nan and inf refused");
	CHECK(!parse_cpus("1x", &c) && !parse_cpus("", &c), "trailing text and empty refused");
}

int
main(void)
{
	test_device_lists();
	test_nodes();
	test_picking();
	test_sizes();
	return tap_done();
}
