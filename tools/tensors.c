/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * Tensor lists and byte sizes from text: what `starfold graph --tensors SPEC` and `bench -b 1M` read.
 *
 *     spec  := model | item { ',' item }          (blanks allowed around items)
 *     item  := [ COUNT ('x' | 'X') ] SIZE          COUNT >= 1 tensors of SIZE bytes each
 *     SIZE  := DIGITS [ 'B' | K | KiB | M | MiB | G | GiB | T | TiB ]   (suffix letters in any case)
 *     model := "resnet50" | "bert-base"            (case-insensitive)
 *
 * Suffixes are binary multiples, as nccl-tests reads -b/-e: K = KiB = 2^10, M = MiB = 2^20,
 * G = GiB = 2^30, T = TiB = 2^40. "KB", "MB", "GB" are rejected as ambiguous (SI or binary?).
 *
 * The parser is written for hostile input (it is fuzzed): it never reads past the terminating NUL,
 * every multiplication and sum is checked before it is done, the number of tensors is capped by
 * STARFOLD_TOOLS_TENSORS_MAX before anything is allocated, and the caller's outputs are written only on
 * success. Two passes: the first validates and counts, the second fills an array of exactly that size.
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>

#include "base/common.h"
#include "tools.h"

/* Longest piece of the caller's text quoted in an error message. */
#define SF_QUOTE_MAX 40

/* ------------------------------------------------------------------------------------------------
 * Sizes
 */

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Case-insensitive comparison of the @n bytes at @s with the NUL-terminated @word. */
static int word_is(const char *s, size_t n, const char *word)
{
    size_t i = 0;
    for (; i < n && word[i]; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)word[i])) return 0;
    return i == n && word[i] == '\0';
}

/*
 * Parses DIGITS [suffix] in s[0..n). @what names the text in errors ("size", "item 3 '4x1Q'").
 * Leading and trailing blanks must already be stripped.
 */
static starfold_status_t parse_size_n(const char *s, size_t n, const char *what, uint64_t *bytes)
{
    size_t i = 0;
    uint64_t v = 0;
    if (n == 0) return starfold__error(STARFOLD_ERR_PARSE, "%s: empty size", what);
    if (!isdigit((unsigned char)s[0]))
        return starfold__error(STARFOLD_ERR_PARSE, "%s: a size starts with a digit, got '%.*s'", what,
                        (int)(n < SF_QUOTE_MAX ? n : SF_QUOTE_MAX), s);
    for (; i < n && isdigit((unsigned char)s[i]); i++) {
        const unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return starfold__error(STARFOLD_ERR_PARSE, "%s: number too large", what);
        v = v * 10 + d;
    }
    const char *suffix = s + i;
    const size_t slen = n - i;
    static const struct {
        const char *name;
        unsigned shift;
    } units[] = {
        { "", 0 },   { "B", 0 },    { "K", 10 }, { "KiB", 10 }, { "M", 20 },
        { "MiB", 20 }, { "G", 30 }, { "GiB", 30 }, { "T", 40 }, { "TiB", 40 },
    };
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (word_is(suffix, slen, units[u].name)) {
            if (v > (UINT64_MAX >> units[u].shift)) return starfold__error(STARFOLD_ERR_PARSE, "%s: size too large", what);
            *bytes = v << units[u].shift;
            return STARFOLD_OK;
        }
    if (word_is(suffix, slen, "KB") || word_is(suffix, slen, "MB") || word_is(suffix, slen, "GB") ||
        word_is(suffix, slen, "TB"))
        return starfold__error(STARFOLD_ERR_PARSE, "%s: ambiguous unit '%.*s': write %c or %ciB (binary, as nccl-tests)", what,
                        (int)slen, suffix, toupper((unsigned char)suffix[0]), toupper((unsigned char)suffix[0]));
    return starfold__error(STARFOLD_ERR_PARSE, "%s: unknown unit '%.*s' (use B, K, KiB, M, MiB, G, GiB, T or TiB)", what,
                    (int)(slen < SF_QUOTE_MAX ? slen : SF_QUOTE_MAX), suffix);
}

starfold_status_t starfold_tools_size_parse(const char *text, uint64_t *bytes)
{
    if (!text || !bytes)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_tools_size_parse: NULL %s", !text ? "text" : "bytes");
    const char *s = text;
    size_t n = strlen(text);
    while (n > 0 && is_blank(*s)) s++, n--;
    while (n > 0 && is_blank(s[n - 1])) n--;
    uint64_t v = 0;
    starfold_status_t st = parse_size_n(s, n, "size", &v);
    if (st == STARFOLD_OK) *bytes = v;
    return st;
}

/* ------------------------------------------------------------------------------------------------
 * Built-in models: the element counts of their trainable variables, in parameter order, generated
 * from the architecture so the numbers can be checked against the published totals.
 */

/* A growable list of element counts (the model builders' output). */
typedef struct count_list {
    size_t *items;
    size_t n, cap;
    int failed; /* an append ran out of memory; later appends do nothing */
} count_list_t;

static void push(count_list_t *l, size_t count)
{
    if (l->failed) return;
    if (SF_GROW(l->items, l->n, l->cap) != 0) {
        l->failed = 1;
        return;
    }
    l->items[l->n++] = count;
}

/* Batch normalisation: gamma and beta are trainable (the moving statistics are not). */
static void batch_norm(count_list_t *l, size_t channels)
{
    push(l, channels);
    push(l, channels);
}

/*
 * ResNet-50 (He et al. 2016; torchvision's resnet50: convolutions without bias, each followed by batch
 * normalisation, the stride on the 3x3 convolution):
 *
 *     conv1 7x7, 3 -> 64, bn                                        (max-pool)
 *     4 stages of [3, 4, 6, 3] bottlenecks, width w = 64, 128, 256, 512, output 4w:
 *         1x1 in -> w, bn | 3x3 w -> w, bn | 1x1 w -> 4w, bn
 *         + on each stage's first block a downsample 1x1 in -> 4w, bn
 *     fc 2048 -> 1000 (+ bias)
 *
 * 161 tensors, 25,557,032 elements.
 */
static void model_resnet50(count_list_t *l)
{
    static const size_t blocks[4] = { 3, 4, 6, 3 }, widths[4] = { 64, 128, 256, 512 };
    size_t in = 64;
    push(l, 7 * 7 * 3 * 64);
    batch_norm(l, 64);
    for (int s = 0; s < 4; s++) {
        const size_t w = widths[s], out = 4 * w;
        for (size_t b = 0; b < blocks[s]; b++) {
            push(l, in * w);
            batch_norm(l, w);
            push(l, 3 * 3 * w * w);
            batch_norm(l, w);
            push(l, w * out);
            batch_norm(l, out);
            if (b == 0) {
                push(l, in * out);
                batch_norm(l, out);
            }
            in = out;
        }
    }
    push(l, 2048 * 1000);
    push(l, 1000);
}

/*
 * BERT-base, uncased (Devlin et al. 2019; Hugging Face's BertModel, with the pooler, without the
 * pre-training heads): hidden 768, 12 layers, 12 heads, feed-forward 3072, vocabulary 30522,
 * 512 positions, 2 token types.
 *
 *     embeddings: word 30522x768, position 512x768, token type 2x768, LayerNorm (gamma, beta)
 *     12 x [ query, key, value, attention output: 768x768 + bias each, LayerNorm,
 *            intermediate 768x3072 + bias, output 3072x768 + bias, LayerNorm ]
 *     pooler 768x768 + bias
 *
 * 199 tensors, 109,482,240 elements.
 */
static void model_bert_base(count_list_t *l)
{
    const size_t h = 768, ff = 3072;
    push(l, 30522 * h);
    push(l, 512 * h);
    push(l, 2 * h);
    push(l, h);
    push(l, h);
    for (int layer = 0; layer < 12; layer++) {
        for (int k = 0; k < 4; k++) { /* query, key, value, attention output */
            push(l, h * h);
            push(l, h);
        }
        push(l, h);
        push(l, h);
        push(l, h * ff);
        push(l, ff);
        push(l, ff * h);
        push(l, h);
        push(l, h);
        push(l, h);
    }
    push(l, h * h);
    push(l, h);
}

static const struct {
    const char *name;
    void (*build)(count_list_t *l);
} models[] = {
    { "resnet50", model_resnet50 },
    { "bert-base", model_bert_base },
};

static const char *const model_names[] = { "resnet50", "bert-base", NULL };

const char *const *starfold_tools_tensors_model_names(void)
{
    return model_names;
}

/* ------------------------------------------------------------------------------------------------
 * Tensor lists
 */

/* One item of a list, located in the caller's text (blanks stripped). */
typedef struct item {
    const char *text;
    size_t len;
    uint64_t count;  /* tensors */
    uint64_t elems;  /* elements of each */
} item_t;

/* Parses item number @index (1-based) of s[0..n), checking the size against the element size. */
static starfold_status_t parse_item(const char *s, size_t n, size_t index, size_t esize, starfold_dtype_t dtype,
                                    item_t *it)
{
    char what[SF_QUOTE_MAX + 48];
    snprintf(what, sizeof what, "tensor list: item %zu '%.*s%s'", index, (int)(n < SF_QUOTE_MAX ? n : SF_QUOTE_MAX), s,
             n > SF_QUOTE_MAX ? "..." : "");
    if (n == 0) return starfold__error(STARFOLD_ERR_PARSE, "tensor list: item %zu is empty", index);

    /* An 'x' after the leading digits separates a count from the size ("4x1MiB"). */
    size_t i = 0;
    while (i < n && isdigit((unsigned char)s[i])) i++;
    uint64_t count = 1;
    const char *size_text = s;
    size_t size_len = n;
    if (i > 0 && i < n && (s[i] == 'x' || s[i] == 'X')) {
        uint64_t c = 0;
        for (size_t k = 0; k < i; k++) {
            const unsigned d = (unsigned)(s[k] - '0');
            if (c > (UINT64_MAX - d) / 10) return starfold__error(STARFOLD_ERR_PARSE, "%s: count too large", what);
            c = c * 10 + d;
        }
        if (c == 0) return starfold__error(STARFOLD_ERR_PARSE, "%s: the count before 'x' must be >= 1", what);
        count = c;
        size_text = s + i + 1;
        size_len = n - i - 1;
    }
    uint64_t bytes = 0;
    starfold_status_t st = parse_size_n(size_text, size_len, what, &bytes);
    if (st != STARFOLD_OK) return st;
    if (bytes % esize != 0)
        return starfold__error(STARFOLD_ERR_PARSE, "%s: %llu bytes is not a multiple of the %s element size (%zu bytes)", what,
                        (unsigned long long)bytes, starfold_dtype_name(dtype), esize);
#if SIZE_MAX < UINT64_MAX
    if (bytes / esize > SIZE_MAX) return starfold__error(STARFOLD_ERR_PARSE, "%s: size too large for this machine", what);
#endif
    it->text = s;
    it->len = n;
    it->count = count;
    it->elems = bytes / esize;
    return STARFOLD_OK;
}

/*
 * Walks the list once: validates every item and, when @out is not NULL, writes the tensors into it.
 * Returns the number of tensors in @total. The first pass (out == NULL) guarantees the second
 * cannot fail.
 */
static starfold_status_t walk_list(const char *spec, size_t esize, starfold_dtype_t dtype, starfold_tensor_desc_t *out,
                                   size_t *total)
{
    size_t ntensors = 0, index = 0;
    uint64_t total_bytes = 0;
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        const size_t raw = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        size_t n = raw;
        while (n > 0 && is_blank(*s)) s++, n--;
        while (n > 0 && is_blank(s[n - 1])) n--;
        index++;
        item_t it = { 0 };
        starfold_status_t st = parse_item(s, n, index, esize, dtype, &it);
        if (st != STARFOLD_OK) return st;
        if (it.count > (uint64_t)(STARFOLD_TOOLS_TENSORS_MAX - ntensors))
            return starfold__error(STARFOLD_ERR_PARSE, "tensor list: item %zu: more than %d tensors in all", index,
                            STARFOLD_TOOLS_TENSORS_MAX);
        /* count <= STARFOLD_TOOLS_TENSORS_MAX here, so the product overflows only if elems is huge. */
        const uint64_t item_bytes_each = it.elems * esize; /* == the parsed byte size, no overflow */
        if (item_bytes_each != 0 && it.count > (UINT64_MAX - total_bytes) / item_bytes_each)
            return starfold__error(STARFOLD_ERR_PARSE, "tensor list: item %zu: the total size overflows", index);
        total_bytes += it.count * item_bytes_each;
        if (out)
            for (uint64_t k = 0; k < it.count; k++) out[ntensors + k] = (starfold_tensor_desc_t){ dtype, (size_t)it.elems };
        ntensors += (size_t)it.count;
        if (!end) break;
        p = end + 1;
    }
#if SIZE_MAX < UINT64_MAX
    if (total_bytes > SIZE_MAX) return starfold__error(STARFOLD_ERR_PARSE, "tensor list: the total size overflows");
#endif
    *total = ntensors;
    return STARFOLD_OK;
}

starfold_status_t starfold_tools_tensors_parse(const char *spec, starfold_dtype_t dtype,
                                                      starfold_tensor_desc_t **tensors, size_t *count)
{
    if (!spec || !tensors || !count)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_tools_tensors_parse: NULL %s",
                        !spec ? "spec" : !tensors ? "tensors" : "count");
    const size_t esize = starfold_dtype_size(dtype);
    if (esize == 0)
        return starfold__error(STARFOLD_ERR_INVALID_ARGUMENT, "starfold_tools_tensors_parse: unknown dtype %d", (int)dtype);

    /* A model name, blanks around it allowed. */
    const char *s = spec;
    size_t n = strlen(spec);
    while (n > 0 && is_blank(*s)) s++, n--;
    while (n > 0 && is_blank(s[n - 1])) n--;
    if (n == 0) return starfold__error(STARFOLD_ERR_PARSE, "tensor list: empty (give sizes such as 4x1MiB,1000 or a model: resnet50, bert-base)");
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        if (!word_is(s, n, models[m].name)) continue;
        count_list_t l = { 0 };
        models[m].build(&l);
        if (l.failed) {
            free(l.items);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_tools_tensors_parse: out of memory building %s", models[m].name);
        }
        starfold_tensor_desc_t *t = malloc(sizeof *t * l.n);
        if (!t) {
            free(l.items);
            return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_tools_tensors_parse: out of memory");
        }
        for (size_t k = 0; k < l.n; k++) t[k] = (starfold_tensor_desc_t){ dtype, l.items[k] };
        free(l.items);
        *tensors = t;
        *count = l.n;
        return STARFOLD_OK;
    }
    if (isalpha((unsigned char)*s) && !strchr(spec, ','))
        return starfold__error(STARFOLD_ERR_PARSE, "tensor list: unknown model '%.*s' (known: resnet50, bert-base)",
                        (int)(n < SF_QUOTE_MAX ? n : SF_QUOTE_MAX), s);

    size_t total = 0;
    starfold_status_t st = walk_list(spec, esize, dtype, NULL, &total);
    if (st != STARFOLD_OK) return st;
    /* total >= 1: every item holds at least one tensor. */
    starfold_tensor_desc_t *t = malloc(sizeof *t * total);
    if (!t) return starfold__error(STARFOLD_ERR_OUT_OF_MEMORY, "starfold_tools_tensors_parse: out of memory for %zu tensors", total);
    size_t again = 0;
    st = walk_list(spec, esize, dtype, t, &again);
    if (st != STARFOLD_OK || again != total) { /* cannot happen: the same text parsed twice */
        free(t);
        return st != STARFOLD_OK ? st : starfold__error(STARFOLD_ERR_INTERNAL, "starfold_tools_tensors_parse: second pass differs");
    }
    *tensors = t;
    *count = total;
    return STARFOLD_OK;
}

void starfold_tools_tensors_free(starfold_tensor_desc_t *tensors)
{
    free(tensors);
}
