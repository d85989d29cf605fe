/* dlio-whatif: storage what-ifs as one command.
 *   sweep    the job at every point of a grid of storage settings, cold,
 *            repeated; table, JSON, plot
 *   search   the least demanding setting that meets a target (bisection on
 *            a log scale)
 *   predict  the job under other settings from one traced run, in seconds:
 *            the trace replayed through the pacer in virtual time */
#include <stdio.h>
#include <string.h>

#include "dlio_whatif_i.h"
#include "tool_stop_i.h"

static const char usage[] =
    "usage: dlio-whatif COMMAND [ARGS]\n"
    "  sweep CONFIG --set KEY=V1,V2,... [--repeat R --warmup W] [--jobs N]\n"
    "        [--json F] [--plot F.png] -- JOB...\n"
    "                      run JOB at every point of a grid of storage settings,\n"
    "                      each run cold; mean, min, max, stdev per point\n"
    "  search CONFIG --vary KEY=LOW..HIGH --target au>=0.90 [--resolution 5%]\n"
    "        -- JOB...     the least demanding setting that meets the target\n"
    "  predict TRACE [--set KEY=V1,V2,...] [--clients N]\n"
    "                      what the traced job would get under other settings, or\n"
    "                      N copies of it on one shared device, without running it\n"
    "  sweep|search ... --nodes N  on a cluster of N mounts that share one storage\n"
    "                      model, the job (dlio-drive) one rank per mount\n"
    "  COMMAND --help      details of one command\n"
    "\n"
    "JOB is any command; {mount} in it is replaced by the mountpoint. dlio-drive\n"
    "reports AU, samples/s and stall itself; anything else (an unmodified PyTorch\n"
    "or TensorFlow script) runs under `dlio-stall run`, which times its waits for\n"
    "data. KEYs are the pacer's (`dliofs --help`): read.bandwidth, read.latency,\n"
    "read.iops, read.queue_depth, meta.latency, cache.size, ...\n";

/* Stopped by a signal: the verb has stopped its jobs, unmounted and removed
 * its files on the way out; the exit status says why it ended. */
static int stopped(int rc)
{
	int sig = tool_stop_requested();

	if (!sig)
		return rc;
	fprintf(stderr, "dlio-whatif: stopped by signal %d (%s): jobs stopped, mount and "
			"working files removed\n",
		sig, strsignal(sig));
	return 128 + sig;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		fputs(usage, cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	/* predict mounts and starts nothing: a signal ends it as usual. */
	if (!strcmp(cmd, "sweep") || !strcmp(cmd, "search"))
		tool_stop_install();
	if (!strcmp(cmd, "sweep"))
		return stopped(wi_sweep(argc - 1, argv + 1));
	if (!strcmp(cmd, "search"))
		return stopped(wi_search(argc - 1, argv + 1));
	if (!strcmp(cmd, "predict"))
		return wi_predict(argc - 1, argv + 1);
	/* Not in the usage: what each node of a --nodes cluster runs. */
	if (!strcmp(cmd, "node"))
		return wi_node(argc - 1, argv + 1);
	fprintf(stderr, "dlio-whatif: unknown command '%s'\n%s", cmd, usage);
	return 2;
}
