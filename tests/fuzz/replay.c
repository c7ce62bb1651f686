/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 The starfold authors */
/*
 * main() for a fuzz harness built without libFuzzer: feeds every regular file of the directories (or
 * the files) named on the command line to LLVMFuzzerTestOneInput(), in sorted order. Run by
 * `make check` on tests/fuzz/corpus_*, so every seed and every input that once crashed stays tested.
 * A harness reports a broken property with a trap: the program dies and the test fails.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        uint8_t *bigger = realloc(buf, cap * 2);
        if (!bigger) { free(buf); buf = NULL; break; }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (!buf) return -1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int files = 0, failures = 0;
#ifdef SF_FUZZ_CORPUS
    static char *corpus[] = { NULL, (char *)SF_FUZZ_CORPUS, NULL };
    if (argc < 2) {   /* make check: the harness's own corpus */
        corpus[0] = argv[0];
        argc = 2;
        argv = corpus;
    }
#endif
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            failures++;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            failures += replay_file(argv[i]) != 0;
            files++;
            continue;
        }
        struct dirent **names = NULL;
        int n = scandir(argv[i], &names, NULL, NULL);
        if (n < 0) {
            fprintf(stderr, "replay: cannot list %s\n", argv[i]);
            failures++;
            continue;
        }
        char **paths = calloc((size_t)n, sizeof *paths);
        int np = 0;
        for (int k = 0; k < n; k++) {
            if (names[k]->d_name[0] != '.' && paths) {
                size_t len = strlen(argv[i]) + strlen(names[k]->d_name) + 2;
                paths[np] = malloc(len);
                if (paths[np]) snprintf(paths[np], len, "%s/%s", argv[i], names[k]->d_name), np++;
            }
            free(names[k]);
        }
        free(names);
        if (paths) qsort(paths, (size_t)np, sizeof *paths, by_name);
        for (int k = 0; k < np; k++) {
            if (stat(paths[k], &sb) == 0 && S_ISREG(sb.st_mode)) {
                failures += replay_file(paths[k]) != 0;
                files++;
            }
            free(paths[k]);
        }
        free(paths);
    }
    printf("replayed %d inputs, %d unreadable\n", files, failures);
    return failures || files == 0 ? 1 : 0;
}
