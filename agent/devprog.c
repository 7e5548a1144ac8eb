/*-------------------------------------------------------------------------
 *
 * devprog.c
 *		The device rules of a part on cgroup v2: a BPF program of type
 *		BPF_PROG_TYPE_CGROUP_DEVICE, written as raw instructions (no
 *		libbpf, as runc and systemd do), loaded with the bpf() system call
 *		and attached to the part's cgroup (BPF_CGROUP_DEVICE).  The kernel
 *		runs it at each open or mknod of a device node by a process of the
 *		cgroup: it allows the character devices of its rules, and nothing
 *		else (EPERM).
 *
 * No option and no global state: test/agent's root test attaches a
 * program to a cgroup of its own through attach_device_program.
 *
 *-------------------------------------------------------------------------
 */
/* syscall() */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "devprog.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/bpf.h>
#endif

#ifdef __linux__

/* one instruction */
static struct bpf_insn
insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	struct bpf_insn i;

	memset(&i, 0, sizeof(i));
	i.code = code;
	i.dst_reg = dst;
	i.src_reg = src;
	i.off = off;
	i.imm = imm;
	return i;
}

/*
 * build_program: the instructions for rules, into prog (room for
 * 6 + 5 * n); how many.  r2 = the access's type (block, char), r3 its
 * major, r4 its minor; for each rule, a char device of its major and
 * minor (minor -1: any) returns 1 (allowed); after the last, 0 (EPERM).
 */
static int
build_program(const DeviceRule *rules, int n, struct bpf_insn *prog)
{
	int			len = 0,
				i;

	prog[len++] = insn(BPF_LDX | BPF_W | BPF_MEM, 2, 1, 0, 0);
	prog[len++] = insn(BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, 0xffff);
	prog[len++] = insn(BPF_LDX | BPF_W | BPF_MEM, 3, 1, 4, 0);
	prog[len++] = insn(BPF_LDX | BPF_W | BPF_MEM, 4, 1, 8, 0);
	for (i = 0; i < n; i++)
	{
		bool		any_minor = rules[i].minor < 0;
		int16_t		skip = any_minor ? 3 : 4;

		prog[len++] = insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, skip--, BPF_DEVCG_DEV_CHAR);
		prog[len++] = insn(BPF_JMP | BPF_JNE | BPF_K, 3, 0, skip--, rules[i].major);
		if (!any_minor)
			prog[len++] = insn(BPF_JMP | BPF_JNE | BPF_K, 4, 0, skip--, rules[i].minor);
		prog[len++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
		prog[len++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	}
	prog[len++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
	prog[len++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return len;
}

/*
 * attach_device_program: a program allowing the char devices of rules (n
 * of them, at most MAX_DEVICE_RULES) and nothing else, attached to the
 * cgroup (v2) open as cgroup_fd.  False, with errno and *what, if it
 * could not be: its load (the kernel's verifier: log in log) or attach.
 */
bool
attach_device_program(int cgroup_fd, const DeviceRule *rules, int n, const char **what,
					  char *log, size_t logcap)
{
	struct bpf_insn prog[6 + 5 * MAX_DEVICE_RULES];
	union bpf_attr attr;
	int			fd,
				rc,
				e;

	if (n > MAX_DEVICE_RULES)
	{
		*what = "device rules: too many";
		errno = E2BIG;
		return false;
	}
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t) (uintptr_t) prog;
	attr.insn_cnt = build_program(rules, n, prog);
	attr.license = (uint64_t) (uintptr_t) "Apache-2.0";
	attr.log_buf = (uint64_t) (uintptr_t) log;
	attr.log_size = log ? logcap : 0;
	attr.log_level = log ? 1 : 0;
	*what = "bpf(BPF_PROG_LOAD) of the device program";
	fd = syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return false;
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = cgroup_fd;
	attr.attach_bpf_fd = fd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	*what = "bpf(BPF_PROG_ATTACH) of the device program";
	rc = syscall(__NR_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr));
	e = errno;
	close(fd);					/* attached, it lives as long as the cgroup */
	errno = e;
	return rc == 0;
}

#else

bool
attach_device_program(int cgroup_fd, const DeviceRule *rules, int n, const char **what,
					  char *log, size_t logcap)
{
	*what = "a device program (Linux only)";
	errno = ENOSYS;
	return false;
}

#endif
