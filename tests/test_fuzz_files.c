/*
 * test_fuzz_files.c - parityfuzz facing hostile files and a full disk (issue 14, items 10
 * and 11): a repro whose signature file is a FIFO, or a link to /dev/zero, is refused at
 * once instead of blocking in open(2) or reading forever; so is a FIFO given to the corpus
 * replay driver; and an --out that fills up mid-write ends in one line and exit 2, never
 * in libhdf5's exit handler crashing (HDFFV-11052). Each run is under a time limit, so a
 * regression shows as a failed test, not a hung suite.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"

/* Well over what a refusal takes (milliseconds), well under ctest's limit. */
#define RUN_LIMIT_SECONDS 60.0

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "fuzz-files-");
}

TestSuite(fuzz_files, .init = make_dir, .fini = support_dir_remove, .timeout = 300);

/* The run ended by itself, with exit 2 and exactly one line on stderr that holds zWant. */
static void assert_one_line_exit_2(const run_result *pR, const char *zWant, const char *zWhat)
{
    cr_assert(!pR->timedOut, "%s: still running after %.0f s", zWhat, RUN_LIMIT_SECONDS);
    cr_assert(!pR->signaled, "%s: killed by signal %d\n%s", zWhat, pR->sig, pR->zErr);
    cr_assert_eq(pR->code, 2, "%s: exit %d\n%s", zWhat, pR->code, pR->zErr);
    cr_assert_eq(count_lines(pR->zErr, 0, NULL, 0) + count_lines(pR->zErr, 1, NULL, 0), 1,
                 "%s: not one line on stderr:\n%s", zWhat, pR->zErr);
    cr_assert(strstr(pR->zErr, zWant), "%s: no '%s' in: %s", zWhat, zWant, pR->zErr);
    expect_clean_stderr(pR, zWhat);
}

/* A repro folder zName holding a stored repro's eager.h5 and no signature yet; its path. */
static const char *repro_without_signature(const char *zName)
{
    static const char zStored[] =
        TEST_SOURCE_DIR "/../corpus/repros/fastmath_nan/maximum-02141d76c954d787/eager.h5";
    const char *zDir = tmp_path(zName);
    char zFile[4200];
    unsigned char *p;
    size_t n;
    cr_assert_eq(mkdir(zDir, 0777), 0, "%s", zDir);
    p = read_bytes(zStored, &n);
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zDir);
    write_bytes(zFile, p, n);
    free(p);
    return zDir;
}

static const char *signature_path(const char *zRepro)
{
    static char zFile[4200];
    snprintf(zFile, sizeof zFile, "%s/signature", zRepro);
    return zFile;
}

/* Item 10: open(2) of a FIFO for reading blocks until a writer comes, which is never. */
Test(fuzz_files, replay_refuses_a_fifo_signature_at_once)
{
    const char *zRepro = repro_without_signature("fifo");
    run_result r;
    cr_assert_eq(mkfifo(signature_path(zRepro), 0666), 0);
    run_parityfuzz(&r, "replay", zRepro, NULL);
    cr_log_info("FIFO signature: %.3f s", r.seconds);
    assert_one_line_exit_2(&r, "not a regular file", "a FIFO signature");
    run_free(&r);
}

/* Item 10: /dev/zero never ends and holds no newline; the onednn target (which reads the
 * recorded ISA from the signature file) looped in fgets forever. */
Test(fuzz_files, replay_refuses_a_signature_linked_to_dev_zero_at_once)
{
    const char *zRepro = repro_without_signature("zero");
    run_result r;
    cr_assert_eq(symlink("/dev/zero", signature_path(zRepro)), 0);
#ifdef PARITY_HAVE_ONEDNN
    run_parityfuzz(&r, "replay", zRepro, "--target", "onednn", NULL);
#else
    run_parityfuzz(&r, "replay", zRepro, NULL);
#endif
    cr_log_info("/dev/zero signature: %.3f s", r.seconds);
    assert_one_line_exit_2(&r, "not a regular file", "a signature linked to /dev/zero");
    run_free(&r);
}

/* Item 10, the same reader: a signature file over the size cap is refused, not read. */
Test(fuzz_files, replay_refuses_a_signature_over_the_size_cap)
{
    const char *zRepro = repro_without_signature("huge");
    FILE *f = fopen(signature_path(zRepro), "w");
    run_result r;
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 2 << 20, SEEK_SET), 0);       /* 2 MiB, sparse */
    cr_assert_eq(fputc('\n', f), '\n');
    cr_assert_eq(fclose(f), 0);
    run_parityfuzz(&r, "replay", zRepro, NULL);
    assert_one_line_exit_2(&r, "limit", "a 2 MiB signature");
    run_free(&r);
}

/* Item 10, the corpus replay driver: an input that is a FIFO is an error, not a hang. */
Test(fuzz_files, corpus_replay_driver_refuses_a_fifo_input)
{
    const char *zFifo = tmp_path("input.fifo");
    const char *azArgv[] = { FUZZ_BUILTIN_REPLAY_BIN, zFifo, NULL };
    run_result r;
    cr_assert_eq(mkfifo(zFifo, 0666), 0);
    run_argv(azArgv, RUN_LIMIT_SECONDS, &r);
    cr_assert(!r.timedOut, "still running after %.0f s", RUN_LIMIT_SECONDS);
    cr_assert(!r.signaled, "killed by signal %d", r.sig);
    cr_assert_eq(r.code, 2, "exit %d\n%s", r.code, r.zErr);
    cr_assert(strstr(r.zErr, "not a regular file"), "%s", r.zErr);
    run_free(&r);
}

/* Item 11: a full --out. mount(2) of a small tmpfs needs privileges a CI container lacks,
 * so the disk fills up by RLIMIT_FSIZE instead: 4 blocks (2 or 4 KiB, whatever the
 * shell's unit) is less than any capture, and with SIGXFSZ ignored (inherited across exec)
 * a write past it fails with EFBIG, as one on a full disk fails with ENOSPC. */
Test(fuzz_files, full_out_is_one_line_and_exit_2_not_a_crash)
{
    const char *zOut = tmp_path("out");
    const char *azArgv[] = {
        "/bin/sh", "-c", "ulimit -f 4 && trap '' XFSZ && exec \"$@\"", "sh", PARITYFUZZ_BIN,
        "--defect", "fastmath_nan", "--ops", "amax", "--max-execs", "500",
        "--stop-after-first", "--out", zOut, NULL };
    run_result r;
    DIR *pDir;
    struct dirent *pEnt;
    run_argv(azArgv, RUN_LIMIT_SECONDS, &r);
    cr_log_info("full --out: %.3f s", r.seconds);
    assert_one_line_exit_2(&r, "File too large", "a full --out");
    run_free(&r);
    /* nothing half-written stays behind */
    pDir = opendir(zOut);
    cr_assert_not_null(pDir, "%s", zOut);
    while ((pEnt = readdir(pDir)) != NULL)
        cr_expect(strcmp(pEnt->d_name, ".") == 0 || strcmp(pEnt->d_name, "..") == 0,
                  "left in --out: %s", pEnt->d_name);
    closedir(pDir);
}
