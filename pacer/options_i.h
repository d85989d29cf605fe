/* Private to pacer/options*.c: the options table (options.c) that one
 * set of code parses, checks, dumps and explains (options_dump.c). */
#ifndef DLIOFS_PACER_OPTIONS_I_H
#define DLIOFS_PACER_OPTIONS_I_H

#include <stddef.h>

#include "pacer_i.h"

enum opt_type {
	T_BOOL,
	T_STR,
	T_RATE,	   /* uint64_t bytes/s, 0 = unlimited */
	T_SIZE,	   /* uint64_t bytes */
	T_COUNT,   /* uint64_t, 0 = unlimited */
	T_QD,	   /* uint32_t, 0 = unlimited */
	T_TIME,	   /* uint64_t ns */
	T_LAT,	   /* struct dl_lat_model */
	T_POLICY,  /* enum dl_cache_policy */
	T_NPHASES, /* unsigned */
	T_SHARE,   /* enum dl_share_policy */
	T_NRULES,  /* unsigned */
	T_LATSIZE, /* struct dl_lat_sizes: KEY.SIZE=LATENCY */
	T_CONC,	   /* struct dl_conc_table: KEY.SIZE.K=RATE */
	T_FACTOR,  /* uint64_t x 10^6 (1.25 -> 1250000), 0 = none */
	T_PER,	   /* uint64_t x 10^6 (0.11 -> 110000), 0 .. 64 */
};

enum opt_scope {
	S_TOP,	 /* offset into struct dl_pacer_cfg; key as written */
	S_DEV,	 /* offset into struct dl_dev_model; key {read,write,meta}.NAME
		  * and phases.N.{read,write,meta}.NAME */
	S_PHASE, /* offset into struct dl_phase; key phases.N.NAME */
	S_RULE,	 /* offset into struct dl_share_rule; key share.jobs.N.NAME */
};

struct opt {
	const char *name;
	enum opt_type type;
	enum opt_scope scope;
	size_t off;
	int nodump; /* implied by the dump's structure */
	const char *help;
};

extern const struct opt pacer_opts[];
extern const unsigned pacer_nopts;

/* "{read,write,meta}.", "phases.N.", ...: how keys of the scope are written. */
const char *pacer_scope_prefix(enum opt_scope s);
/* Bytes as written: exact, in the unit that gives the shortest number. */
void pacer_fmt_size(uint64_t b, char *buf, size_t len, const char *suffix);
/* A field's value as the config writes it (500MB/s, 20k, lognormal(...)). */
void pacer_fmt_val(const struct opt *o, const void *field, char *buf, size_t len);

#endif
