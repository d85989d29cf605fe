/* PLACEHOLDER: private header of pacer/ (being written) */
