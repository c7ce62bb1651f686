/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Fuzz harness for the tensor-spec parser: starfold_tools_tensors_parse() and starfold_tools_size_parse() on
 * arbitrary bytes. Built as a libFuzzer target by `make fuzz` and as a corpus replayer (with
 * tests/fuzz/replay.c) by `make check`; see fuzz_topology.c.
 *
 * The first byte picks the dtype (the rest is the text), so the corpus covers every element size.
 * Properties: on success, 1 <= count <= STARFOLD_TOOLS_TENSORS_MAX and every tensor has the dtype asked for;
 * on failure, a parse status, a non-empty detail, outputs untouched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <starfold.h>

#include "tools.h"

#define FUZZ_CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 16 * 1024) return 0;
    starfold_dtype_t dtype = (starfold_dtype_t)(data[0] % STARFOLD_DTYPE_COUNT);
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';

    starfold_tensor_desc_t *sentinel = (starfold_tensor_desc_t *)(uintptr_t)0x1, *tensors = sentinel;
    size_t count = 12345;
    starfold_status_t st = starfold_tools_tensors_parse(text, dtype, &tensors, &count);
    if (st == STARFOLD_OK) {
        FUZZ_CHECK(tensors != sentinel && tensors != NULL);
        FUZZ_CHECK(count >= 1 && count <= STARFOLD_TOOLS_TENSORS_MAX);
        for (size_t i = 0; i < count; i++) FUZZ_CHECK(tensors[i].dtype == dtype);
        starfold_tools_tensors_free(tensors);
    } else {
        FUZZ_CHECK(tensors == sentinel && count == 12345);
        FUZZ_CHECK(st == STARFOLD_ERR_PARSE || st == STARFOLD_ERR_OUT_OF_MEMORY);
        FUZZ_CHECK(starfold_last_error()[0] != '\0');
    }

    uint64_t bytes = 777;
    st = starfold_tools_size_parse(text, &bytes);
    if (st != STARFOLD_OK) FUZZ_CHECK(st == STARFOLD_ERR_PARSE && bytes == 777);
    free(text);
    return 0;
}
