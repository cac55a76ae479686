"""Tests of the sample ops' C kernels and tiling functions, and of the `opbuild new` scaffold."""
