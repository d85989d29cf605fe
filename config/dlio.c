/* PLACEHOLDER: DLIO workload translation (being written) */
