/*
 * parallel.c - parity_run_shares (parallel.h).
 */
#include <pthread.h>
#include "formats/parallel.h"

void parity_run_shares(void *(*xWork)(void *), void *aShare, size_t nShareSize, int n)
{
    pthread_t aThread[PARITY_MAX_THREADS];
    int aStarted[PARITY_MAX_THREADS] = { 0 }, k;
    char *p = aShare;
    if (n > PARITY_MAX_THREADS) n = PARITY_MAX_THREADS;
    for (k = 1; k < n; k++)
        aStarted[k] = pthread_create(&aThread[k], NULL, xWork, p + (size_t)k * nShareSize) == 0;
    if (n > 0) xWork(p);
    for (k = 1; k < n; k++) {
        if (aStarted[k]) pthread_join(aThread[k], NULL);
        else xWork(p + (size_t)k * nShareSize);
    }
}
