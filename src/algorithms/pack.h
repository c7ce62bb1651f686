/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Packing plans: which element ranges of which tensors go into which pack buffer. Pure arithmetic,
 * shared by the algorithms that pack.
 *
 * Concat-and-split (TensorFlow's _ConcatAndSplitPacker), per dtype group instead of failing on mixed
 * dtypes: the tensors of one dtype, in their original order, are concatenated into one flat range of
 * `total` elements, cut into num_packs contiguous packs of total / num_packs elements, the last taking
 * the remainder. A pack may cut through a tensor. Empty packs (total < num_packs) are dropped.
 *
 *   tensors (float32):  [ t0 ......... ][ t1 .... ][ t2 ............ ]
 *   num_packs = 3:      [ pack 0    ][ pack 1    ][ pack 2 (+rest)   ]
 *
 * Dtype groups come in order of first appearance; pack indices run across groups, so with the default
 * num_packs = 1 and two dtypes there are two packs (0 and 1), each rotating the hierarchical root.
 * num_packs = 0: no packing, one "pack" per non-empty tensor that is the tensor itself.
 */
#ifndef STARFOLD_SRC_PACK_H
#define STARFOLD_SRC_PACK_H

#include <starfold/graph.h>

typedef struct starfold__pack_seg {
    size_t tensor;       /* which tensor */
    size_t offset;       /* first element in the tensor */
    size_t count;        /* elements */
    size_t pack_offset;  /* first element in the pack */
} starfold__pack_seg_t;

typedef struct starfold__pack {
    size_t index;        /* TensorFlow's pack (or tensor) index, counting dropped empty packs: drives rotation */
    starfold_dtype_t dtype;
    size_t count;        /* elements, > 0 */
    starfold__pack_seg_t *segs; /* in pack order */
    size_t nsegs;
} starfold__pack_t;

typedef struct starfold__pack_plan {
    starfold__pack_t *packs;
    size_t npacks;
} starfold__pack_plan_t;

/* Builds the concat-and-split plan; num_packs >= 0 (0 = direct). */
starfold_status_t starfold__pack_plan_concat_split(const starfold_tensor_desc_t *tensors, size_t ntensors,
                                            int num_packs, starfold__pack_plan_t *plan);

/*
 * Size-based plan (TensorFlow's group_by_size, per dtype): the tensors of each dtype, in order, are
 * appended to the current pack, which is closed once it holds more than @bytes_per_pack bytes, so
 * every pack but the last of a dtype is > bytes_per_pack. Packs hold whole tensors; empty tensors are
 * skipped. Pack indices count packs across dtypes.
 */
starfold_status_t starfold__pack_plan_by_size(const starfold_tensor_desc_t *tensors, size_t ntensors, size_t bytes_per_pack,
                                       starfold__pack_plan_t *plan);

void starfold__pack_plan_free(starfold__pack_plan_t *plan);

#endif /* STARFOLD_SRC_PACK_H */
