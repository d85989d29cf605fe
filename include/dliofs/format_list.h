/* The formats, in the order they are listed to people. Adding a format is
 * its file in formats/ (with its ops table dl_fmt_<name>_ops), one line
 * here, and the file in meson.build (docs/adding-a-format.md). */
DL_FORMAT(NPY, npy)
DL_FORMAT(NPZ, npz)
DL_FORMAT(TFRECORD, tfrecord)
DL_FORMAT(DLRM, dlrm)
DL_FORMAT(RAW, raw)
DL_FORMAT(INDEXED_BINARY, indexed_binary)
DL_FORMAT(MMAP_INDEXED_BINARY, mmap_indexed_binary)
DL_FORMAT(HDF5, hdf5)
DL_FORMAT(JPEG, jpeg)
DL_FORMAT(PNG, png)
DL_FORMAT(CSV, csv)
