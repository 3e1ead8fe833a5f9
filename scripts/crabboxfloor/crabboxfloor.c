/*
 * crabboxfloor: the least a two-core install of the same tree can cost, as
 * a yardstick for `clawkit crabbox install` (scripts/bench-crabbox.sh runs
 * it in the same rounds). `crabboxfloor LIST DEST` reads LIST, one entry a
 * line as "d PATH", "f SIZE PATH", "l TARGET\tPATH" (symlink) or
 * "h TARGET\tPATH" (hard link; the bench writes it from the node bootstrap
 * and adds the worker archive as one file), creates the folders from one
 * thread, then the files (SIZE bytes each, from a zeroed buffer) and
 * symlinks from two threads, then the hard links: as fast as the file
 * system allows, with no inflation, parsing, hashing or checks. Whatever
 * it costs is the file system's price for this tree on this machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ent {
	char type;
	long size;
	char *path, *target;
};

static struct ent *ents;
static long n;
static char buf[1 << 20];

static void mkparents(char *p) {
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (mkdir(p, 0755) != 0 && errno != EEXIST) {
			perror(p);
			exit(1);
		}
		*s = '/';
	}
}

static void *worker(void *arg) {
	long id = (long)arg;
	for (long i = id; i < n; i += 2) {
		struct ent *e = &ents[i];
		if (e->type == 'l') {
			if (symlink(e->target, e->path) != 0) {
				perror(e->path);
				exit(1);
			}
			continue;
		}
		if (e->type != 'f')
			continue;
		int fd = open(e->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(e->path);
			exit(1);
		}
		for (long left = e->size; left > 0;) {
			long k = left < (long)sizeof buf ? left : (long)sizeof buf;
			ssize_t w = write(fd, buf, k);
			if (w <= 0) {
				perror(e->path);
				exit(1);
			}
			left -= w;
		}
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: crabboxfloor LIST DEST\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	long cap = 1024;
	ents = malloc(cap * sizeof *ents);
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	size_t dl = strlen(argv[2]);
	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (n == cap)
			ents = realloc(ents, (cap *= 2) * sizeof *ents);
		struct ent *e = &ents[n++];
		memset(e, 0, sizeof *e);
		e->type = line[0];
		char *rel = line + 2;
		if (e->type == 'f') {
			e->size = strtol(rel, &rel, 10);
			rel++;
		} else if (e->type == 'l' || e->type == 'h') {
			char *tab = strchr(rel, '\t');
			*tab = 0;
			e->target = strdup(rel);
			rel = tab + 1;
		}
		e->path = malloc(dl + strlen(rel) + 2);
		sprintf(e->path, "%s/%s", argv[2], rel);
		if (e->type == 'h') {
			char *abs = malloc(dl + strlen(e->target) + 2);
			sprintf(abs, "%s/%s", argv[2], e->target);
			e->target = abs;
		}
	}
	/* Folders first, from one thread (files need their parents). */
	for (long i = 0; i < n; i++)
		mkparents(ents[i].path);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (long i = 0; i < n; i++)
		if (ents[i].type == 'h' && link(ents[i].target, ents[i].path) != 0) {
			perror(ents[i].path);
			return 1;
		}
	return 0;
}
