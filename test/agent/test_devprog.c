/*-------------------------------------------------------------------------
 *
 * test_devprog.c
 *		The agent's device program for cgroup v2 (agent/devprog.c) in a
 *		real cgroup v2: a cgroup made under the v2 hierarchy given
 *		(/sys/fs/cgroup on a v2 host; /sys/fs/cgroup/unified on a v1 host
 *		that mounts one beside its controllers, which takes a device
 *		program all the same), the program attached with the rules of one
 *		device node (c 195:0) and the usual nodes, then a child in it
 *		opens nodes of DIR (made by the caller: nvidia0 c 195:0, nvidia1
 *		c 195:1): its own gets ENXIO (let through, no driver), the other
 *		EPERM, /dev/null opens; a child in a cgroup without the program
 *		gets ENXIO from both.  Needs root.  Prints TAP.
 *
 * Usage: test_devprog V2_ROOT DIR (test/agent/devices.sh runs it)
 *
 *-------------------------------------------------------------------------
 */
#include "devprog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int	tests_run;
static int	tests_failed;

static void
check(bool ok, const char *what)
{
	tests_run++;
	tests_failed += !ok;
	printf("%sok %d - %s\n", ok ? "" : "not ", tests_run, what);
}

/*
 * open_in: in a child that joins the cgroup dir, the errno of opening
 * path read-write (0: it opened)
 */
static int
open_in(const char *dir, const char *path)
{
	char		procs[512];
	int			status;
	pid_t		pid = fork();

	if (pid == 0)
	{
		int			fd;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		fd = open(procs, O_WRONLY);
		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(255);
		close(fd);
		fd = open(path, O_RDWR);
		_exit(fd >= 0 ? 0 : errno);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int
main(int argc, char **argv)
{
	DeviceRule	rules[] = {{1, 3}, {1, 5}, {5, 0}, {136, -1}, {195, 0}};
	char		fenced[512],
				open_cg[512],
				own[512],
				other[512],
				log[8192] = "";
	const char *what = "";
	int			fd;
	bool		attached;

	if (argc != 3)
	{
		fprintf(stderr, "usage: test_devprog V2_ROOT DIR\n");
		return 2;
	}
	snprintf(fenced, sizeof(fenced), "%s/qs-devprog-%d", argv[1], (int) getpid());
	snprintf(open_cg, sizeof(open_cg), "%s/qs-devprog-%d-open", argv[1], (int) getpid());
	snprintf(own, sizeof(own), "%s/nvidia0", argv[2]);
	snprintf(other, sizeof(other), "%s/nvidia1", argv[2]);
	if (mkdir(fenced, 0755) != 0 || mkdir(open_cg, 0755) != 0)
	{
		perror("mkdir");
		return 1;
	}
	fd = open(fenced, O_RDONLY | O_DIRECTORY);
	attached = fd >= 0 && attach_device_program(fd, rules, 5, &what, log, sizeof(log));
	if (!attached)
		printf("# %s: %s\n# %s\n", what, strerror(errno), log);
	check(attached, "the device program loads and attaches to a cgroup v2");
	check(open_in(fenced, own) == ENXIO, "in it, its own device's node: ENXIO (let through, no driver)");
	check(open_in(fenced, other) == EPERM, "another device's node: EPERM (the program's rule)");
	check(open_in(fenced, "/dev/null") == 0, "/dev/null opens");
	check(open_in(open_cg, other) == ENXIO, "in a cgroup without the program, the other node: ENXIO");
	rmdir(fenced);
	rmdir(open_cg);
	check(access(fenced, F_OK) != 0, "the cgroup is removed once empty, its program with it");
	printf("1..%d\n", tests_run);
	return tests_failed ? 1 : 0;
}
