/*
 * bench_bare_loop.c - the floor the benchmark measures paritydiff against: one thread,
 * 256-row hyperslabs of /t from both files, computing only max |c - e|. No statistics, no
 * checks, no isolation: what reading plus the cheapest possible comparison costs.
 *
 * Usage: bench_bare_loop EAGER.h5 COMPILED.h5
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <hdf5.h>

int main(int argc, char **argv)
{
    hid_t hFileE, hFileC, hE, hC, hSpaceE, hSpaceC, hMem;
    hsize_t aDim[2], aStart[2] = { 0, 0 }, aCount[2];
    float *pE, *pC;
    double maxAbs = 0.0;
    size_t i;

    if (argc != 3) return 2;
    hFileE = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    hFileC = H5Fopen(argv[2], H5F_ACC_RDONLY, H5P_DEFAULT);
    hE = H5Dopen2(hFileE, "/t", H5P_DEFAULT);
    hC = H5Dopen2(hFileC, "/t", H5P_DEFAULT);
    if (hE < 0 || hC < 0) return 1;
    hSpaceE = H5Dget_space(hE);
    hSpaceC = H5Dget_space(hC);
    H5Sget_simple_extent_dims(hSpaceE, aDim, NULL);
    aCount[1] = aDim[1];
    pE = malloc(sizeof(float) * 256 * aDim[1]);
    pC = malloc(sizeof(float) * 256 * aDim[1]);
    for (aStart[0] = 0; aStart[0] < aDim[0]; aStart[0] += 256) {
        aCount[0] = aDim[0] - aStart[0] < 256 ? aDim[0] - aStart[0] : 256;
        hMem = H5Screate_simple(2, aCount, NULL);
        H5Sselect_hyperslab(hSpaceE, H5S_SELECT_SET, aStart, NULL, aCount, NULL);
        H5Sselect_hyperslab(hSpaceC, H5S_SELECT_SET, aStart, NULL, aCount, NULL);
        H5Dread(hE, H5T_NATIVE_FLOAT, hMem, hSpaceE, H5P_DEFAULT, pE);
        H5Dread(hC, H5T_NATIVE_FLOAT, hMem, hSpaceC, H5P_DEFAULT, pC);
        for (i = 0; i < aCount[0] * aDim[1]; i++) maxAbs = fmax(maxAbs, fabs((double)pC[i] - pE[i]));
        H5Sclose(hMem);
    }
    printf("max_abs %.9g\n", maxAbs);
    free(pE);
    free(pC);
    H5Sclose(hSpaceE);
    H5Sclose(hSpaceC);
    H5Dclose(hE);
    H5Dclose(hC);
    H5Fclose(hFileE);
    H5Fclose(hFileC);
    return 0;
}
