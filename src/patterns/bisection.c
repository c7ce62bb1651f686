/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Bisection: the two best-connected halves of a set of positions (patterns.h).
 *
 * Exhaustive over the group-0 members besides position 0, in lexicographic order, so the first
 * maximum found is the tie-break the header promises.
 */
#include "config.h"

#include <math.h>

#include "patterns/patterns.h"

/* Bandwidth inside the two groups of @side (bit i set: position i in group 1). */
static double intra_bandwidth(int n, const double *bw, unsigned side)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (((side >> i) & 1u) == ((side >> j) & 1u)) sum += bw[i * n + j];
    return sum;
}

/*
 * Next k-combination of {1..last} in lexicographic order (c ascending); 0 after the last one.
 * Position 0 is fixed in group 0, so group 0 = {0} + c and the enumeration visits first groups in
 * lexicographic order of positions.
 */
static int next_combination(int *c, int k, int last)
{
    int i = k - 1;
    while (i >= 0 && c[i] == last - (k - 1 - i)) i--;
    if (i < 0) return 0;
    c[i]++;
    for (int j = i + 1; j < k; j++) c[j] = c[j - 1] + 1;
    return 1;
}

static void bisect_exhaustive(int n, const double *bw, int *group)
{
    const int k = n / 2 - 1;               /* members of group 0 besides position 0 */
    int c[STARFOLD__BISECT_EXHAUSTIVE_MAX];
    for (int j = 0; j < k; j++) c[j] = j + 1;

    unsigned best_side = 0;
    double best = -1;
    do {
        unsigned side = ((1u << n) - 1u) & ~1u;   /* everyone in group 1 but position 0 */
        for (int j = 0; j < k; j++) side &= ~(1u << c[j]);
        double score = intra_bandwidth(n, bw, side);
        /* strictly better by more than rounding: equal splits keep the earlier (smaller) first group */
        if (score > best + 1e-12 * fmax(1.0, fabs(best))) {
            best = score;
            best_side = side;
        }
    } while (next_combination(c, k, n - 1));
    for (int i = 0; i < n; i++) group[i] = (int)((best_side >> i) & 1u);
}

void starfold__bisect(int n, const double *bw, int *group)
{
    if (n == 1) {
        group[0] = 0;
    } else if (n > STARFOLD__BISECT_EXHAUSTIVE_MAX) {
        for (int i = 0; i < n; i++) group[i] = i < n / 2 ? 0 : 1;
    } else {
        bisect_exhaustive(n, bw, group);
    }
}
