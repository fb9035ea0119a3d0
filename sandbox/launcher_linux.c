//go:build linux && cgo

// The native launcher. tai re-executes itself as `tai __tai-launch` to
// start an agent (or a command it serves one); this constructor sees that
// before the Go runtime starts, does the launcher's whole job and never
// returns into Go. Starting the Go runtime and the binary's ~140 package
// inits cost ~20 ms of every start on a machine where page faults are
// dear, for a process whose job is a few system calls. launcher_linux.go
// does the same job in Go, for builds without cgo; both read the spec of
// spec.go and are tested alike (launcher_test.go).
//
// The job: become a child subreaper, read the spec and its descriptors
// from fd 3, enforce the Landlock ruleset tai built, start the agent
// straight into its cgroup, report its pid on fd 5, and wait. When the
// agent exits, when fd 4 (tai's end) closes, or when tai dies (SIGUSR2,
// the parent-death signal tai set), kill everything left below, reap it,
// and exit as the agent did.

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define TAI_CLONE_INTO_CGROUP 0x200000000ULL
#define TAI_CLOSE_RANGE_CLOEXEC (1U << 2)

// struct clone_args as of Linux 5.7 (CLONE_ARGS_SIZE_VER2), spelt here so
// that older headers build it.
struct tai_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

#define TAI_CLONE_VM 0x100ULL
#define TAI_CLONE_VFORK 0x4000ULL

// clone3_run starts fn(arg) in a child by clone3 with args a, whose stack
// the child runs on, and returns the child's pid (or -errno); the child
// never returns here: fn ends in exec or _exit. With CLONE_VM|CLONE_VFORK
// the child shares the launcher's memory until it execs (the launcher
// waits): no page table is copied, no page faults on copies, and exec
// has no copy to tear down. Where there is no such start here, -ENOSYS.
static long clone3_run(struct tai_clone_args *a, int (*fn)(void *), void *arg) {
#if defined(__x86_64__)
	long ret;
	register void *f __asm__("r12") = (void *)fn;
	register void *x __asm__("r13") = arg;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "mov %%r13, %%rdi\n\t"
			 "call *%%r12\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov $60, %%eax\n\t" // exit
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "0"((long)SYS_clone3), "D"(a), "S"(sizeof *a), "r"(f), "r"(x)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x0 __asm__("x0") = (long)a;
	register long x1 __asm__("x1") = (long)sizeof *a;
	register long x8 __asm__("x8") = SYS_clone3;
	register void *f __asm__("x19") = (void *)fn;
	register void *x __asm__("x20") = arg;
	__asm__ volatile("svc #0\n\t"
			 "cbnz x0, 1f\n\t"
			 "mov x29, xzr\n\t"
			 "mov x0, x20\n\t"
			 "blr x19\n\t"
			 "mov x8, #93\n\t" // exit
			 "svc #0\n"
			 "1:"
			 : "+r"(x0)
			 : "r"(x1), "r"(x8), "r"(f), "r"(x)
			 : "memory");
	return x0;
#else
	(void)a;
	(void)fn;
	(void)arg;
	return -ENOSYS;
#endif
}

enum { FD_SPEC = 3, FD_CTL = 4, FD_REPORT = 5 };
// Landlock's execute, read_file and read_dir: what landlock_linux.go's
// rightsRead grants outside the workspace (procRights in pidns_linux.go).
enum { PROC_RIGHTS = 1 | 4 | 8 };
enum { SPEC_RULESET = 1, SPEC_CGDIR = 2, SPEC_CGKILL = 4, SPEC_V1PIDS = 8, SPEC_V1MEM = 16, SPEC_HIDE = 32, SPEC_RO = 64, SPEC_ALL = 127 };
enum { MAX_FDS = 7 }; // a v1 flag brings two: the agent's tasks file and ours
enum { MAX_SPEC = 64 << 20, EXIT_LAUNCH = 125 };
static const char spec_magic[] = "tai-launch/1";

static int sigfd = -1;
static sigset_t oldmask;
static int copy_start; // the agent started as a copy only (tests)

// report writes one JSON line to tai. Only the error text needs escaping.
static void report(const char *line) {
	size_t n = strlen(line);
	while (n > 0) {
		ssize_t w = write(FD_REPORT, line, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		line += w;
		n -= (size_t)w;
	}
}

__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *format, ...) {
	char msg[1024], line[sizeof msg * 6 + 32];
	va_list ap;
	va_start(ap, format);
	vsnprintf(msg, sizeof msg, format, ap);
	va_end(ap);
	size_t n = 0;
	n += (size_t)snprintf(line, sizeof line, "{\"error\":\"");
	for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
		if (*p == '"' || *p == '\\')
			n += (size_t)snprintf(line + n, sizeof line - n, "\\%c", *p);
		else if (*p < 0x20)
			n += (size_t)snprintf(line + n, sizeof line - n, "\\u%04x", *p);
		else
			line[n++] = (char)*p;
	}
	snprintf(line + n, sizeof line - n, "\"}\n");
	report(line);
	_exit(EXIT_LAUNCH);
}

// read_spec reads the spec to EOF, and the descriptors sent with it.
static char *read_spec(size_t *len, int fds[MAX_FDS], int *nfds) {
	size_t cap = 64 << 10, n = 0;
	char *b = malloc(cap);
	if (!b)
		fail("reading the spec: out of memory");
	*nfds = 0;
	for (;;) {
		if (n == cap) {
			if (cap >= MAX_SPEC)
				fail("reading the spec: over %d bytes", MAX_SPEC);
			cap *= 2;
			char *nb = realloc(b, cap);
			if (!nb)
				fail("reading the spec: out of memory");
			b = nb;
		}
		struct iovec iov = {b + n, cap - n};
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		} c;
		struct msghdr m = {0};
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = c.buf;
		m.msg_controllen = sizeof c.buf;
		ssize_t r = recvmsg(FD_SPEC, &m, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fail("reading the spec: %s", strerror(errno));
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
			if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
				continue;
			int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
				if (*nfds < MAX_FDS)
					fds[(*nfds)++] = fd;
				else
					fail("reading the spec: too many descriptors");
			}
		}
		if (m.msg_flags & MSG_CTRUNC)
			fail("reading the spec: descriptors cut off");
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(FD_SPEC);
	*len = n;
	return b;
}

struct spec {
	unsigned long flags, restrict_flags;
	char *path;
	char **argv, **envp;
	char **ro; // the files the init binds read-only (SPEC_RO), NULL-ended
	int ruleset, cgdir, cgkill;
	int join[2], home[2]; // cgroup v1 pids, memory: the agent's tasks file, ours
};

// parse_num reads a decimal field no greater than max.
static int parse_num(const char *s, unsigned long max, unsigned long *out) {
	if (!*s)
		return 0;
	unsigned long v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		unsigned long d = (unsigned long)(*s - '0');
		if (v > max / 10)
			return 0;
		v *= 10;
		if (d > max - v)
			return 0;
		v += d;
	}
	*out = v;
	return 1;
}

// parse_spec splits the spec's NUL-terminated fields in place (spec.go).
static void parse_spec(char *b, size_t len, int fds[MAX_FDS], int nfds, struct spec *s) {
	if (len == 0 || b[len - 1] != 0)
		fail("launch spec: truncated");
	size_t nf = 0;
	for (size_t i = 0; i < len; i++)
		nf += b[i] == 0;
	char **f = calloc(nf + 1, sizeof *f);
	if (!f)
		fail("launch spec: out of memory");
	size_t k = 0;
	for (char *p = b; p < b + len; p += strlen(p) + 1)
		f[k++] = p;
	size_t i = 0;
	unsigned long argc, envc;
	if (nf < 6 || strcmp(f[i++], spec_magic) != 0)
		fail("launch spec: not a %s spec", spec_magic);
	if (!parse_num(f[i++], SPEC_ALL, &s->flags))
		fail("launch spec: bad flags");
	if (!parse_num(f[i++], 0xffffffffUL, &s->restrict_flags))
		fail("launch spec: bad restrict flags");
	s->path = f[i++];
	if (!*s->path)
		fail("launch spec: no path");
	const char *count = f[i++];
	if (!parse_num(count, nf - i, &argc) || argc == 0)
		fail("launch spec: bad arguments");
	s->argv = &f[i];
	i += argc;
	if (i >= nf || !parse_num(f[i], nf - i - 1, &envc))
		fail("launch spec: bad environment");
	f[i++] = NULL; // ends argv, where the count of the environment was
	s->envp = &f[i];
	i += envc;
	s->ro = &f[nf]; // none: the NULL at the end
	if (s->flags & SPEC_RO) {
		unsigned long roc;
		if (!(s->flags & SPEC_HIDE) || i >= nf || !parse_num(f[i], nf - i - 1, &roc) || roc == 0)
			fail("launch spec: bad read-only list");
		f[i++] = NULL; // ends envp, where the count of the list was
		s->ro = &f[i];
		for (unsigned long k = 0; k < roc; k++, i++)
			if (f[i][0] != '/')
				fail("launch spec: read-only path %s is not absolute", f[i]);
	}
	if (i != nf)
		fail("launch spec: bad environment");
	f[i] = NULL; // ends envp, or the read-only list
	int want = 0;
	for (unsigned long bit = 1; bit <= SPEC_ALL; bit <<= 1)
		want += (s->flags & bit) != 0 ? (bit >= SPEC_HIDE ? 0 : bit >= SPEC_V1PIDS ? 2 : 1) : 0;
	if (nfds != want)
		fail("launch spec: %d descriptors for flags %lu", nfds, s->flags);
	int j = 0;
	s->ruleset = s->flags & SPEC_RULESET ? fds[j++] : -1;
	s->cgdir = s->flags & SPEC_CGDIR ? fds[j++] : -1;
	s->cgkill = s->flags & SPEC_CGKILL ? fds[j++] : -1;
	for (int i = 0; i < 2; i++) {
		int on = (s->flags & (i ? SPEC_V1MEM : SPEC_V1PIDS)) != 0;
		s->join[i] = on ? fds[j++] : -1;
		s->home[i] = on ? fds[j++] : -1;
	}
}

// read_file reads a small /proc file whole; NULL where it cannot.
static char *read_file(const char *path) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);
	while (b) {
		if (n + 1 == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
		}
		ssize_t r = read(fd, b + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (b)
		b[n] = 0;
	return b;
}

// push appends v to a growing array; 0 when out of memory.
static int push(pid_t **a, size_t *n, size_t *cap, pid_t v) {
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		pid_t *nb = realloc(*a, c * sizeof **a);
		if (!nb)
			return 0;
		*a = nb;
		*cap = c;
	}
	(*a)[(*n)++] = v;
	return 1;
}

// walk_children appends to *out the pids below root, breadth first, from the
// kernel's children lists (CONFIG_PROC_CHILDREN): a few small reads,
// where a scan reads every process's stat. 0 where there are no lists.
static int walk_children(pid_t root, pid_t **out, size_t *n, size_t *cap) {
	if (access("/proc/thread-self/children", R_OK) != 0)
		return 0;
	size_t head = *n;
	pid_t cur = root;
	for (;;) {
		char dir[64];
		snprintf(dir, sizeof dir, "/proc/%d/task", (int)cur);
		DIR *d = opendir(dir);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d))) {
				if (e->d_name[0] < '0' || e->d_name[0] > '9')
					continue;
				char path[sizeof dir + 16 + sizeof e->d_name];
				snprintf(path, sizeof path, "%s/%s/children", dir, e->d_name);
				char *buf = read_file(path);
				if (!buf)
					continue;
				for (char *p = buf; *p;) {
					char *end;
					long v = strtol(p, &end, 10);
					if (end == p)
						break;
					p = end;
					if (!push(out, n, cap, (pid_t)v))
						break;
				}
				free(buf);
			}
			closedir(d);
		}
		if (head == *n)
			return 1;
		cur = (*out)[head++];
	}
}

// scan_descendants is walk_children by a scan of every process's stat.
static void scan_descendants(pid_t root, pid_t **out, size_t *n, size_t *cap) {
	pid_t *pid = NULL, *ppid = NULL;
	size_t np = 0, cp = 0, cpp = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[16 + sizeof e->d_name];
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		char *st = read_file(path);
		if (!st)
			continue;
		char *rp = strrchr(st, ')'); // the name in parentheses may hold anything
		int pp;
		char state;
		int ok = rp && sscanf(rp + 1, " %c %d", &state, &pp) == 2;
		free(st);
		size_t k = np;
		if (!ok || !push(&pid, &np, &cp, (pid_t)atoi(e->d_name)))
			continue;
		if (!push(&ppid, &k, &cpp, (pid_t)pp)) {
			np--;
			break;
		}
	}
	closedir(d);
	size_t head = *n;
	for (pid_t cur = root;;) {
		for (size_t i = 0; i < np; i++)
			if (ppid[i] == cur && !push(out, n, cap, pid[i]))
				goto done;
		if (head == *n)
			break;
		cur = (*out)[head++];
	}
done:
	free(pid);
	free(ppid);
}

// reap reaps every child that has ended, noting the agent's status. It
// returns 0 once there are no children left at all.
static int reap(pid_t agent, int *status, int *agent_done) {
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);
		if (w > 0) {
			if (w == agent) {
				*status = st;
				*agent_done = 1;
			}
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		return !(w < 0 && errno == ECHILD);
	}
}

static void drain_signals(void) {
	struct signalfd_siginfo si[16];
	while (read(sigfd, si, sizeof si) > 0) {
	}
}

// kill_tree SIGKILLs everything below the launcher until nothing is left:
// orphans are reparented to it (the subreaper), so "no children" means
// nothing escaped. The cgroup, where there is one, kills atomically, forks
// in flight included.
static void kill_tree(int cgkill, pid_t agent, int *status, int *agent_done) {
	pid_t *kids = NULL;
	size_t cap = 0;
	while (reap(agent, status, agent_done)) {
		if (cgkill >= 0 && write(cgkill, "1", 1) < 0) {
			// cgroup.kill refused: the scan below still kills
		}
		size_t n = 0;
		if (!walk_children(getpid(), &kids, &n, &cap))
			scan_descendants(getpid(), &kids, &n, &cap);
		for (size_t i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		// They are dying: look again at the next SIGCHLD, or in 2 ms for
		// one mid-fork.
		struct pollfd p = {sigfd, POLLIN, 0};
		if (poll(&p, 1, 2) > 0)
			drain_signals();
	}
	free(kids);
}

// exit_as ends the launcher the way the agent ended: its exit code, or its
// fatal signal, so that tai's exit reporting sees the agent.
__attribute__((noreturn)) static void exit_as(int st) {
	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none); // the agent's core is its own, not ours
	signal(sig, SIG_DFL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	kill(getpid(), sig);
	_exit(128 + sig);
}

// cloexec_all marks every descriptor from 3 up close-on-exec: the agent
// gets its stdio and nothing else, not even what tai itself inherited.
static void cloexec_all(void) {
	if (syscall(SYS_close_range, 3U, ~0U, TAI_CLOSE_RANGE_CLOEXEC) == 0)
		return;
	DIR *d = opendir("/proc/self/fd"); // before Linux 5.11
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (fd > 2 && fd != dirfd(d))
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(d);
}

// drop_stdio lets go of the agent's stdin, stdout and stderr, once the
// agent runs with its own copies: were we to hold them, an agent that
// closes its stdout and lives on would never give tai the EOF that says
// its output is over. /dev/null takes their place (nothing we open later
// lands on 0-2), or, where even that is refused, they are just closed.
static void drop_stdio(void) {
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd <= 2; fd++) {
		if (nul < 0 || dup2(nul, fd) < 0)
			close(fd);
	}
	if (nul > 2)
		close(nul);
}

// child is what the agent's side of the start needs.
struct child {
	const struct spec *s;
	int errfd; // the exec error goes here
	pid_t launcher;
	// Hiding processes: the init's pipe for the agent's status, and the
	// user namespace's maps (the user mapped to itself) where we are not
	// root.
	int statfd, userns;
	char uid_map[32], gid_map[32];
};

// start_error is what the child sends back when it cannot start the
// agent: at which step, and the errno (and which file, binding one).
enum { STEP_EXEC, STEP_CGROUP, STEP_HIDE, STEP_LANDLOCK, STEP_READONLY, STEP_N };
static const char *const step_names[STEP_N] = {"", "joining its cgroup v1: ", "hiding processes: ", "landlock: ",
					       "binding a config file read-only: "};
struct start_error {
	int step, err, ro;
};

// agent is the child's side of the start: our signal mask undone, killed
// if we die, its cgroup v1 cgroups joined (before anything of the agent's
// runs, so that all it forks is held), then the agent's exec. It may run
// on the launcher's memory (clone3_run): system calls only, no
// allocation, nothing written but errno.
__attribute__((noreturn)) static void hidden_init(const struct child *c);

__attribute__((noreturn)) static int agent(void *arg) {
	const struct child *c = arg;
	struct start_error se = {STEP_EXEC, 0, 0};
	if (c->statfd >= 0 && getpid() == 1)
		hidden_init(c);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != (c->statfd >= 0 ? 1 : c->launcher))
		_exit(EXIT_LAUNCH);
	for (int i = 0; i < 2; i++)
		if (c->s->join[i] >= 0 && write(c->s->join[i], "0", 1) != 1) {
			se.step = STEP_CGROUP;
			goto out;
		}
	execve(c->s->path, c->s->argv, c->s->envp);
out:
	se.err = errno;
	if (write(c->errfd, &se, sizeof se) < 0) {
	}
	_exit(127);
}

// write_file writes a short text to path; 0 on a failure, errno set.
static int write_file(const char *path, const char *text) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = strlen(text);
	int ok = write(fd, text, n) == (ssize_t)n;
	int e = errno;
	close(fd);
	errno = e;
	return ok;
}

// bind_ro makes the file or directory p read-only in this mount
// namespace: a bind mount of it on itself, remounted read-only. Writes
// fail (EROFS), and so do renames over it and its removal (EBUSY), while
// its directory stays writable. p is opened without following a final
// symlink, and bound through its descriptor, so a symlink swapped in
// cannot redirect the bind; the remount goes through the new mount's
// descriptor, checked to be the same file. 0 and errno on a failure.
static int bind_ro(const char *p) {
	char a[32], b[32];
	struct stat st, st2;
	struct statvfs vfs;
	int ok = 0, fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC), fd2 = -1;
	if (fd < 0 || fstat(fd, &st) != 0)
		goto out;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		errno = ELOOP; // a symlink, or worse: tai sends files and directories only
		goto out;
	}
	snprintf(a, sizeof a, "/proc/self/fd/%d", fd);
	if (mount(a, a, NULL, MS_BIND, NULL) != 0)
		goto out;
	fd2 = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd2 < 0 || fstat(fd2, &st2) != 0 || fstatvfs(fd2, &vfs) != 0)
		goto out;
	if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		errno = ESTALE;
		goto out;
	}
	// A remount may not clear the flags the mount below holds (locked,
	// in a user namespace): keep them.
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
	flags |= (vfs.f_flag & ST_NOSUID ? MS_NOSUID : 0) | (vfs.f_flag & ST_NODEV ? MS_NODEV : 0) |
		 (vfs.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) | (vfs.f_flag & ST_NOATIME ? MS_NOATIME : 0) |
		 (vfs.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0) | (vfs.f_flag & ST_RELATIME ? MS_RELATIME : 0);
	snprintf(b, sizeof b, "/proc/self/fd/%d", fd2);
	ok = mount(NULL, b, NULL, flags, NULL) == 0;
out:;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
	errno = e;
	return ok;
}

// hidden_init is PID 1 of the agent's own PID and mount namespaces (and
// user namespace, where we are not root), started as a copy: it maps the
// user to itself, binds the agents' config files read-only (bind_ro),
// mounts a /proc of the namespace (so the agent sees its own processes
// only, not the environments of the user's others), gives
// it a Landlock rule (the ruleset's are on the old /proc's inodes) and
// enforces Landlock (which forbids mounts: after them), then starts the
// agent and reaps all below until the agent ends. An init cannot die of
// a signal it is sent, so it hands the agent's status to the launcher,
// which ends as the agent did; its own exit kills what is left.
__attribute__((noreturn)) static void hidden_init(const struct child *c) {
	const struct spec *s = c->s;
	struct start_error se = {STEP_HIDE, 0, 0};
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (c->userns && (!write_file("/proc/self/setgroups", "deny") || !write_file("/proc/self/uid_map", c->uid_map) ||
			  !write_file("/proc/self/gid_map", c->gid_map)))
		goto out;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		goto out;
	// The agents' config files, before Landlock (which forbids mounts).
	se.step = STEP_READONLY;
	for (; s->ro[se.ro]; se.ro++)
		if (!bind_ro(s->ro[se.ro]))
			goto out;
	se.step = STEP_HIDE;
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		goto out;
	if (s->ruleset >= 0) {
		se.step = STEP_LANDLOCK;
		struct __attribute__((packed)) {
			uint64_t allowed_access;
			int32_t parent_fd;
		} rule = {PROC_RIGHTS, open("/proc", O_PATH | O_CLOEXEC)};
		if (rule.parent_fd < 0 || syscall(SYS_landlock_add_rule, s->ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0) != 0)
			goto out;
		close(rule.parent_fd);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    syscall(SYS_landlock_restrict_self, s->ruleset, (unsigned int)s->restrict_flags) != 0)
			goto out;
	}
	// The agent's cgroup v1 cgroups, ours too: it inherits them.
	se.step = STEP_CGROUP;
	for (int i = 0; i < 2; i++)
		if (s->join[i] >= 0 && write(s->join[i], "0", 1) != 1)
			goto out;
	pid_t pid = fork();
	if (pid == 0)
		agent((void *)c);
	se.step = STEP_EXEC;
	if (pid < 0)
		goto out;
	drop_stdio(); // before the EOF below: once tai hears the agent runs, we hold none of its stdio
	close(c->errfd); // the agent's copy closes at its exec: EOF, it runs
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, 0);
		if (w == pid) {
			if (write(c->statfd, &st, sizeof st) < 0) {
			}
			_exit(0);
		}
		if (w < 0 && errno != EINTR)
			_exit(EXIT_LAUNCH);
	}
out:
	se.err = errno;
	if (write(c->errfd, &se, sizeof se) < 0) {
	}
	_exit(127);
}

// spawn starts the agent with clone args a: on the launcher's memory
// where it can (clone3_run on stack), else as a copy; -1 and errno when
// it cannot.
static pid_t spawn(const struct tai_clone_args *a, struct child *c, void *stack, size_t stack_size) {
	if (stack) {
		struct tai_clone_args v = *a;
		v.flags |= TAI_CLONE_VM | TAI_CLONE_VFORK;
		v.stack = (uint64_t)(uintptr_t)stack;
		v.stack_size = stack_size;
		long r = clone3_run(&v, agent, c);
		if (r >= 0)
			return (pid_t)r;
		// Refused (no such start on this architecture, a seccomp
		// filter): the copy's start says whether the args are the cause.
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, a, sizeof *a);
	if (pid == 0)
		agent(c);
	return pid;
}

__attribute__((noreturn)) static void launch(void) {
	cloexec_all();
	// tai set SIGUSR2 as our parent-death signal at fork. Signals to the
	// group are the agent's to act on: we outlive the agent whatever it
	// is sent (SIGKILL aside), and read them all from a signalfd.
	sigset_t set;
	sigemptyset(&set);
	int sigs[] = {SIGCHLD, SIGUSR2, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, &oldmask);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		fail("signalfd: %s", strerror(errno));
	if (prctl(PR_SET_PDEATHSIG, SIGUSR2, 0, 0, 0) != 0)
		fail("pdeathsig: %s", strerror(errno));
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		fail("subreaper: %s", strerror(errno));

	int fds[MAX_FDS], nfds;
	size_t len;
	char *b = read_spec(&len, fds, &nfds);
	struct spec s;
	parse_spec(b, len, fds, nfds, &s);

	// Hiding processes, the namespaces' init enforces it, after its mount.
	const int hide = (s.flags & SPEC_HIDE) != 0;
	if (s.ruleset >= 0 && !hide) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			fail("landlock: no_new_privs: %s", strerror(errno));
		if (syscall(SYS_landlock_restrict_self, s.ruleset, (unsigned int)s.restrict_flags) != 0)
			fail("landlock: restricting: %s", strerror(errno));
		close(s.ruleset);
	}

	// The child's exec error comes back on a close-on-exec pipe: EOF
	// means the agent runs.
	int errp[2];
	if (pipe2(errp, O_CLOEXEC) != 0)
		fail("starting %s: %s", s.argv[0], strerror(errno));
	struct child c = {&s, errp[1], getpid(), -1, 0, "", ""};
	// The agent's end status, when an init stands between us.
	int statp[2] = {-1, -1};
	if (hide) {
		if (pipe2(statp, O_CLOEXEC) != 0)
			fail("hiding processes: %s", strerror(errno));
		c.statfd = statp[1];
		if (geteuid() != 0) {
			c.userns = 1;
			snprintf(c.uid_map, sizeof c.uid_map, "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
			snprintf(c.gid_map, sizeof c.gid_map, "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
		}
	}
	struct tai_clone_args a;
	memset(&a, 0, sizeof a);
	a.exit_signal = SIGCHLD;
	if (s.cgdir >= 0) {
		a.flags = TAI_CLONE_INTO_CGROUP;
		a.cgroup = (uint64_t)s.cgdir;
	}
	if (hide)
		a.flags |= CLONE_NEWPID | CLONE_NEWNS | (c.userns ? CLONE_NEWUSER : 0);
	const size_t stack_size = 64 << 10;
	void *stack = NULL;
	if (!copy_start && !hide) { // the init runs on, as a copy
		stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stack == MAP_FAILED)
			stack = NULL;
	}
	pid_t pid = spawn(&a, &c, stack, stack_size);
	int in_cgroup = pid >= 0 && s.cgdir >= 0;
	if (pid < 0 && s.cgdir >= 0) {
		// Starting into the cgroup refused (an older kernel, a seccomp
		// filter): the subreaper alone still holds the tree.
		close(s.cgdir);
		if (s.cgkill >= 0)
			close(s.cgkill);
		s.cgdir = s.cgkill = -1;
		a.flags &= ~TAI_CLONE_INTO_CGROUP;
		a.cgroup = 0;
		pid = spawn(&a, &c, stack, stack_size);
	}
	if (pid < 0 && hide)
		fail("hiding processes: %s", strerror(errno));
	if (pid < 0) {
		pid = fork();
		if (pid == 0)
			agent(&c);
	}
	if (pid < 0)
		fail("starting %s: %s", s.argv[0], strerror(errno));
	if (stack)
		munmap(stack, stack_size); // the child has exec'd or exited: not on it any more
	close(errp[1]);
	if (statp[1] >= 0)
		close(statp[1]);
	struct start_error se;
	ssize_t r;
	do
		r = read(errp[0], &se, sizeof se);
	while (r < 0 && errno == EINTR);
	close(errp[0]);
	if (r == (ssize_t)sizeof se) {
		waitpid(pid, NULL, 0);
		int step = se.step < STEP_N && se.step >= 0 ? se.step : STEP_EXEC;
		size_t nro = 0;
		while (s.ro[nro])
			nro++;
		if (step == STEP_READONLY && se.ro >= 0 && (size_t)se.ro < nro)
			fail("starting %s: %s%s: %s", s.argv[0], step_names[step], s.ro[se.ro], strerror(se.err));
		fail("starting %s: %s%s", s.argv[0], step_names[step], strerror(se.err));
	}
	if (s.cgdir >= 0)
		close(s.cgdir);
	for (int i = 0; i < 2; i++) {
		if (s.join[i] >= 0)
			close(s.join[i]);
		if (s.home[i] >= 0)
			close(s.home[i]); // the Go launcher's way back; this one never left
	}
	drop_stdio(); // before the report: once tai has it, we hold none of the agent's stdio
	char line[64];
	snprintf(line, sizeof line, "{\"pid\":%d,\"in_cgroup\":%s}\n", (int)pid, in_cgroup ? "true" : "false");
	report(line);
	close(FD_REPORT);
	free(b);

	int status = 0, agent_done = 0, killed = 0, ctl_open = 1;
	while (!agent_done) {
		struct pollfd p[2] = {{sigfd, POLLIN, 0}, {FD_CTL, POLLIN, 0}};
		int kill_now = 0;
		if (poll(p, ctl_open ? 2 : 1, -1) < 0 && errno != EINTR)
			kill_now = 1; // cannot wait on tai: end it all
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si[16];
			ssize_t n = read(sigfd, si, sizeof si);
			for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof *si; i++)
				if (si[i].ssi_signo == SIGUSR2)
					kill_now = 1; // tai died
		}
		if (ctl_open && p[1].revents) {
			char buf[256];
			ssize_t n = read(FD_CTL, buf, sizeof buf);
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
				ctl_open = 0; // tai asks, or is gone
				kill_now = 1;
			}
		}
		if (kill_now && !killed) {
			kill(pid, SIGKILL);
			killed = 1;
		}
		reap(pid, &status, &agent_done);
	}
	kill_tree(s.cgkill, pid, &status, &agent_done);
	if (!agent_done)
		_exit(EXIT_LAUNCH);
	if (statp[0] >= 0) {
		// The init's exit is not the agent's: an init cannot die of a
		// signal it is sent. It wrote the agent's status (nothing if it
		// was killed first: then its SIGKILL is the agent's end).
		int st;
		if (read(statp[0], &st, sizeof st) == (ssize_t)sizeof st)
			status = st;
	}
	exit_as(status);
}

// is_launch says whether this process is `tai __tai-launch`, and not told
// to leave the job to the Go launcher (TAI_LAUNCHER=go, which only tai's
// tests set: tai gives the launcher an environment of its own, as it does
// TAI_LAUNCHER=copy, the start as a copy that is the fallback).
static int is_launch(int argc, char **argv) {
	if (argc != 2 || strcmp(argv[1], "__tai-launch") != 0)
		return 0;
	const char *impl = getenv("TAI_LAUNCHER");
	copy_start = impl && strcmp(impl, "copy") == 0;
	return !impl || strcmp(impl, "go") != 0;
}

#ifdef __GLIBC__
// glibc passes main's arguments to constructors.
__attribute__((constructor)) static void tai_launcher(int argc, char **argv, char **envp) {
	(void)envp;
	if (is_launch(argc, argv))
		launch();
}
#else
__attribute__((constructor)) static void tai_launcher(void) {
	char buf[64];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	char *argv[3] = {buf, NULL, NULL};
	size_t l = strlen(buf);
	if ((ssize_t)l + 1 >= n)
		return;
	argv[1] = buf + l + 1;
	if ((ssize_t)(l + 1 + strlen(argv[1]) + 1) != n)
		return; // more than two arguments
	if (is_launch(2, argv))
		launch();
}
#endif
