/* dlio-trace: read the per-request traces the mount writes.
 *   summary  what the job asked for, per operation, file and client
 *   export   Chrome/Perfetto JSON, CSV, Darshan-DXT-like text
 *   plot     spatial / temporal pattern and throughput, one PNG (matplotlib)
 *   compare  similarity of two traces, per aspect and overall
 *   merge    the traces of a cluster's nodes as one timeline */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dlio_trace_i.h"
#include "tool_path_i.h"

static const char usage[] =
	"usage: dlio-trace COMMAND [ARGS]\n"
	"  summary TRACE [--json] [--top N]      per operation, per file and per client\n"
	"                                        figures: counts, bytes, request sizes\n"
	"                                        (as the storage saw them and as issued),\n"
	"                                        access mode per file and the job's\n"
	"                                        pattern, sequential share, opens/s,\n"
	"                                        inter-arrival\n"
	"  export --chrome|--csv|--dxt TRACE [-o FILE]\n"
	"                                        Chrome trace JSON (Perfetto), CSV, or\n"
	"                                        Darshan-DXT-like text\n"
	"  plot TRACE -o OUT.png [--title T]     spatial and temporal access pattern and\n"
	"                                        throughput over time (python3-matplotlib)\n"
	"  plot A B -o OUT.png                   two runs one above the other, same time\n"
	"                                        scale: throughput, reads per file, lanes\n"
	"  compare A B [--json]                  similarity of two traces in [0, 1]\n"
	"  merge -o OUT TRACE... [--mono]        the traces of a cluster's nodes as one\n"
	"                                        timeline, each record with its node\n"
	"  COMMAND --help                        details of one command\n"
	"\n"
	"A trace is written by the mount (dliofs trace start MOUNTPOINT FILE [OPS],\n"
	"dliofs trace stop MOUNTPOINT); its records are sorted by arrival time here.\n";

/* The plot is matplotlib's job: hand the arguments to the helper script
 * (found relative to this binary, or $DLIO_TRACE_PLOT). */
static int run_plot(int argc, char **argv)
{
	const char *python = getenv("DLIO_TRACE_PYTHON");
	char script[2 * PATH_MAX + 8];
	char **av;

	if (tool_helper("DLIO_TRACE_PLOT", "dlio_trace_plot.py", script, sizeof(script))) {
		fprintf(stderr,
			"dlio-trace plot: dlio_trace_plot.py not found (looked at %s); set "
			"DLIO_TRACE_PLOT to the script\n",
			script);
		return 1;
	}
	if (!python || !*python)
		python = "/usr/bin/python3";
	if (access(script, R_OK)) {
		fprintf(stderr, "dlio-trace plot: %s: %s (set DLIO_TRACE_PLOT to the script)\n",
			script, strerror(errno));
		return 1;
	}
	av = calloc((size_t)argc + 2, sizeof(*av));
	if (!av)
		return 1;
	av[0] = (char *)python;
	av[1] = (char *)script;
	for (int i = 1; i < argc; i++)
		av[i + 1] = argv[i];
	execv(python, av);
	fprintf(stderr, "dlio-trace plot: cannot run %s: %s\n", python, strerror(errno));
	free(av);
	return 1;
}

static int synth_path_of(void *arg, uint64_t id, char *buf, size_t len)
{
	(void)arg;
	snprintf(buf, len, "synth/file_%llu.bin", (unsigned long long)id);
	return 0;
}

/* Hidden: `synth OUT N` writes N records through the recorder itself (read i
 * of file i % 7 at offset i / 7 * 4096), so that the tests can check the
 * recorder's file with an independent parser. */
static int run_synth(int argc, char **argv)
{
	struct dl_trace *t;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: dlio-trace synth OUT NRECORDS\n");
		return 2;
	}
	uint64_t n = strtoull(argv[2], NULL, 10);
	ret = dl_trace_start(argv[1], "synth.yaml", 0, synth_path_of, NULL, &t);
	if (ret) {
		fprintf(stderr, "dlio-trace synth: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct dl_trace_rec r = {0};
		r.start_ns = dl_mono_ns();
		r.dur_ns_lo = (uint32_t)(1000 + i);
		r.op = DL_TOP_READ;
		r.flags = i % 2;
		r.queue_ns = (uint32_t)(i * 10);
		r.pid = 4242;
		r.tid = 4243 + (uint32_t)(i % 2);
		r.result = 4096;
		r.file_id = i % 7;
		r.offset = i / 7 * 4096;
		r.size = 4096;
		dl_trace_record(t, &r);
		/* Stay well below what the writer drains: no drops. */
		if (i % 1024 == 1023)
			usleep(2000);
	}
	ret = dl_trace_stop(t);
	if (ret) {
		fprintf(stderr, "dlio-trace synth: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		fputs(usage, stdout);
		printf("\ncompare:\n%s", dt_compare_help);
		return 0;
	}
	/* Each command sees argv[0] = its name, like a program of its own. */
	if (!strcmp(cmd, "summary"))
		return dt_summary(argc - 1, argv + 1);
	if (!strcmp(cmd, "export"))
		return dt_export(argc - 1, argv + 1);
	if (!strcmp(cmd, "compare"))
		return dt_compare(argc - 1, argv + 1);
	if (!strcmp(cmd, "merge"))
		return dt_merge(argc - 1, argv + 1);
	if (!strcmp(cmd, "plot"))
		return run_plot(argc - 1, argv + 1);
	if (!strcmp(cmd, "synth"))
		return run_synth(argc - 1, argv + 1);
	fprintf(stderr, "dlio-trace: unknown command '%s'\n%s", cmd, usage);
	return 2;
}
