/* Private to formats/dlrm.c and its unit test: the format's parameters. */
#ifndef DLIOFS_DLRM_I_H
#define DLIOFS_DLRM_I_H

#include <stdint.h>

#include "dliofs/dataset.h"

/* Criteo's binary record: label, 13 dense and 26 categorical int32 fields. */
#define DL_DLRM_RECORD_BYTES 160ULL
#define DL_DLRM_DEFAULT_CARDINALITY 10000000ULL

/* mlperf_bin: which of MLPerf's files the dataset's one train file also is. */
enum { DL_DLRM_MLPERF_NONE, DL_DLRM_MLPERF_TRAIN, DL_DLRM_MLPERF_TEST, DL_DLRM_MLPERF_VAL };

/* A dlrm dataset's own parameters (the keys cardinality, mlperf_bin). */
struct dl_dlrm_params {
	uint64_t cardinality;	/* categorical ids are drawn below this */
	unsigned mlperf_bin;	/* DL_DLRM_MLPERF_* */
};
DL_DS_PARAMS_FIT(struct dl_dlrm_params);

static inline const struct dl_dlrm_params *dl_dlrm_params(const struct dl_dataset *ds)
{
	return DL_DS_PARAMS(ds, const struct dl_dlrm_params);
}

#endif
