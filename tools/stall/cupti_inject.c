/* PLACEHOLDER: CUPTI injection library (being written) */
