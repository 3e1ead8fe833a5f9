/*
 * relayfloor: the least a stdio relay can do, as a yardstick for the cost
 * of `clawkit mcp proxy` (scripts/bench-mcp.sh runs it in the same rounds).
 * Invoked like the proxy, `relayfloor mcp proxy [--env K=V]... -- CMD ARGS`,
 * it starts CMD on two pipes and copies bytes both ways from one thread
 * blocked in poll(2): no framing, no limits, no admission, no cleanup
 * timers. Whatever it costs over a direct connection is the price of one
 * more process on the path (two more wake-ups per round trip) on this
 * machine, which no relay can go below.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void copy_all(int fd, const char *p, ssize_t n) {
	while (n > 0) {
		ssize_t w = write(fd, p, (size_t)n);
		if (w <= 0)
			exit(1);
		p += w;
		n -= w;
	}
}

int main(int argc, char **argv) {
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--env") == 0 && i + 1 < argc)
			putenv(argv[++i]);
	if (++i >= argc)
		return 2;
	int to[2], from[2];
	if (pipe(to) != 0 || pipe(from) != 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]); close(to[1]); close(from[0]); close(from[1]);
		execvp(argv[i], argv + i);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	static char buf[1 << 16];
	struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = from[0], .events = POLLIN}};
	for (;;) {
		if (poll(fds, 2, -1) < 0)
			continue;
		if (fds[0].revents) {
			ssize_t n = read(0, buf, sizeof buf);
			if (n <= 0) {
				close(to[1]);
				fds[0].fd = -1;
			} else {
				copy_all(to[1], buf, n);
			}
		}
		if (fds[1].revents) {
			ssize_t n = read(from[0], buf, sizeof buf);
			if (n <= 0)
				break;
			copy_all(1, buf, n);
		}
	}
	int st;
	waitpid(pid, &st, 0);
	return 0;
}
