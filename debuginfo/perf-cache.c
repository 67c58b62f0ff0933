/* SPDX-License-Identifier: MIT */
/* perf's build-id cache directory (perf-cache.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo/perf-cache.h"

/* `dir` of section [buildid] in perf's configuration file PATH (git's
 * format: `[section]`, `key = value`, # and ; comments), malloc'd, or
 * NULL. */
static char *config_dir(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char line[4096], *dir = NULL;
	int in = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (isspace((unsigned char)*p))
			p++;
		char *e = p + strlen(p);
		while (e > p && isspace((unsigned char)e[-1]))
			*--e = 0;
		if (*p == '[') {
			in = !strncasecmp(p, "[buildid]", 9);
			continue;
		}
		if (!in || strncasecmp(p, "dir", 3))
			continue;
		p += 3;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p++ != '=')
			continue;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '"' && e > p + 1 && e[-1] == '"') {
			p++;
			*--e = 0;
		}
		if (*p) {
			free(dir);
			dir = strdup(p);
		}
	}
	fclose(f);
	return dir;
}

char *su_perf_buildid_dir(void)
{
	const char *env = getenv("PERF_BUILDID_DIR");
	if (env && *env)
		return strdup(env);
	char *dir = NULL;
	const char *cfg = getenv("PERF_CONFIG");
	const char *home = getenv("HOME");
	if (cfg && *cfg) {
		dir = config_dir(cfg);
	} else {
		const char *nosys = getenv("PERF_CONFIG_NOSYSTEM");
		if (!nosys || !*nosys || !strcmp(nosys, "0"))
			dir = config_dir("/etc/perfconfig");
		if (home && *home == '/') {
			char user[4096];
			snprintf(user, sizeof(user), "%s/.perfconfig", home);
			char *u = config_dir(user);
			if (u) {
				free(dir);
				dir = u;
			}
		}
	}
	if (dir)
		return dir;
	if (!home || *home != '/')
		return NULL;
	size_t const n = strlen(home) + sizeof("/.debug");
	if ((dir = malloc(n)))
		snprintf(dir, n, "%s/.debug", home);
	return dir;
}
