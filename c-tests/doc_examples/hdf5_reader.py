# hdf5-reader FILE: an ordinary HDF5 program (h5py, its own libhdf5) that reads every dataset
# of FILE whole, for the docs' "./any_hdf5_program".
import sys

import h5py


def read(name, obj):
    if isinstance(obj, h5py.Dataset):
        obj[()]
        print(f"{name}: {obj.shape} {obj.dtype}")


with h5py.File(sys.argv[1], "r") as f:
    f.visititems(read)
