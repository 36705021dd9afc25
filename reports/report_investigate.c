/*
 * report_investigate.c - the text report of paritydiff investigate (diff/investigate.c):
 * per alert, the incident scaffold in the order a responder writes it down: the earliest
 * known-bad run, the last known-good one, what changed across the boundary (suspects
 * first, then what had changed before without effect), the smallest affected slice with a
 * passing counterexample, and the mitigation kept apart from the root-cause confirmation.
 * Reads the investigation's JSON document only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/escape.h"
#include "reports/report_gate.h"

static const char *str(const json_t *pObj, const char *zKey)
{
    const char *z = json_string_value(json_object_get(pObj, zKey));
    return z ? z : "-";
}

/* A JSON value on one line, escaped for the terminal. */
static void put_value(FILE *pOut, const json_t *pV)
{
    char *z = json_is_string(pV) ? NULL : json_dumps(pV, JSON_COMPACT | JSON_ENCODE_ANY);
    char zEsc[512];
    fputs(parity_escape(json_is_string(pV) ? json_string_value(pV) : z ? z : "null", zEsc,
                        sizeof zEsc), pOut);
    free(z);
}

static void put_run(FILE *pOut, const char *zWhat, const json_t *pRun)
{
    char zEsc[256];
    if (!json_is_object(pRun)) {
        fprintf(pOut, "  %s: none in the history\n", zWhat);
        return;
    }
    fprintf(pOut, "  %s: %s at %s\n", zWhat, parity_escape(str(pRun, "run"), zEsc, sizeof zEsc),
            str(pRun, "timestamp"));
}

static void put_changes(FILE *pOut, const json_t *pList, const char *zTitle, int showBetween)
{
    const json_t *pC;
    size_t i;
    if (json_array_size(pList) == 0) return;
    fprintf(pOut, "  %s:\n", zTitle);
    json_array_foreach(pList, i, pC) {
        fprintf(pOut, "    %s.%s: ", str(pC, "side"), str(pC, "key"));
        put_value(pOut, json_object_get(pC, "before"));
        fputs(" -> ", pOut);
        put_value(pOut, json_object_get(pC, "after"));
        if (json_is_true(json_object_get(pC, "cleared_before")))
            fputs("  (also changed between good runs)", pOut);
        if (showBetween && json_is_array(json_object_get(pC, "between")))
            fprintf(pOut, "  (between %s and %s)",
                    json_string_value(json_array_get(json_object_get(pC, "between"), 0)),
                    json_string_value(json_array_get(json_object_get(pC, "between"), 1)));
        fputc('\n', pOut);
    }
}

/* root_cause.repro: made (its shape, the command that shows it), not made (why), or not
 * asked for (--repro). */
static void put_repro(FILE *pOut, const json_t *pR)
{
    char zEsc[4096];
    if (!json_is_object(pR)) {
        fprintf(pOut, "    minimized repro: not made (paritydiff investigate --repro DIR makes it)\n");
        return;
    }
    if (!json_is_string(json_object_get(pR, "path"))) {
        fprintf(pOut, "    minimized repro: none: %s\n",
                parity_escape(str(pR, "why"), zEsc, sizeof zEsc));
        return;
    }
    fprintf(pOut, "    minimized repro: %s, ", parity_escape(str(pR, "path"), zEsc, sizeof zEsc));
    put_value(pOut, json_object_get(pR, "shape"));
    fprintf(pOut, " of ");
    put_value(pOut, json_object_get(pR, "source_shape"));
    fprintf(pOut, " at ");
    put_value(pOut, json_object_get(pR, "offset"));
    fprintf(pOut, "\n      %s\n", parity_escape(str(pR, "confirm"), zEsc, sizeof zEsc));
}

static void put_smallest(FILE *pOut, const json_t *pS)
{
    const json_t *pT, *pD;
    size_t i, d;
    char zEsc[512];
    fputs("  smallest affected slice: ", pOut);
    if (json_array_size(json_object_get(pS, "slices")) == 1)   /* its name, keys in order */
        fputs(parity_escape(json_string_value(json_array_get(json_object_get(pS, "slices"), 0)),
                            zEsc, sizeof zEsc), pOut);
    else
        put_value(pOut, json_object_get(pS, "labels"));
    fputc('\n', pOut);
    json_array_foreach(json_object_get(pS, "tensors"), i, pT) {
        fprintf(pOut, "    tensor %s (%s)", parity_escape(str(pT, "tensor"), zEsc, sizeof zEsc),
                str(pT, "op"));
        if (json_is_array(json_object_get(pT, "elements"))) {
            fputs(", elements [", pOut);
            json_array_foreach(json_object_get(pT, "elements"), d, pD)
                fprintf(pOut, "%s%lld:%lld", d ? ", " : "",
                        (long long)json_integer_value(json_array_get(pD, 0)),
                        (long long)json_integer_value(json_array_get(pD, 1)));
            fputc(']', pOut);
        }
        fprintf(pOut, ", in %zu pair%s\n", json_array_size(json_object_get(pT, "pairs")),
                json_array_size(json_object_get(pT, "pairs")) == 1 ? "" : "s");
    }
}

int parity_report_investigation_text(const json_t *pDoc, FILE *pOut)
{
    const json_t *pInv;
    size_t i;
    char zEsc[512], zEsc2[512];
    const json_t *pList = json_object_get(pDoc, "investigations");

    fprintf(pOut, "paritydiff investigate: %zu alert%s of run %s\n", json_array_size(pList),
            json_array_size(pList) == 1 ? "" : "s",
            parity_escape(str(json_object_get(pDoc, "run"), "id"), zEsc, sizeof zEsc));
    json_array_foreach(pList, i, pInv) {
        const json_t *pCx = json_object_get(pInv, "known_good_counterexample");
        const json_t *pMit = json_object_get(pInv, "mitigation");
        const json_t *pRoot = json_object_get(pInv, "root_cause");
        fprintf(pOut, "\n%s on %s\n", str(pInv, "metric"),
                parity_escape(str(pInv, "slice"), zEsc, sizeof zEsc));
        put_run(pOut, "earliest known-bad", json_object_get(pInv, "earliest_known_bad"));
        put_run(pOut, "last known-good", json_object_get(pInv, "last_known_good"));
        if (json_array_size(json_object_get(pInv, "recovered_blips")))
            fprintf(pOut, "  recovered blips before it (ignored): %zu run%s\n",
                    json_array_size(json_object_get(pInv, "recovered_blips")),
                    json_array_size(json_object_get(pInv, "recovered_blips")) == 1 ? "" : "s");
        if (json_array_size(json_object_get(pInv, "unknown_runs")))
            fprintf(pOut, "  not measured in %zu run%s of the streak (unknown, not good)\n",
                    json_array_size(json_object_get(pInv, "unknown_runs")),
                    json_array_size(json_object_get(pInv, "unknown_runs")) == 1 ? "" : "s");
        if (json_is_string(json_object_get(pInv, "identity_note")))
            fprintf(pOut, "  identity: %s\n", str(pInv, "identity_note"));
        put_changes(pOut, json_object_get(pInv, "identity_changes"),
                    "identity changed across the boundary", 0);
        put_changes(pOut, json_object_get(pInv, "identity_cleared"),
                    "changed earlier without effect (cleared)", 1);
        put_smallest(pOut, json_object_get(pInv, "smallest_affected_slice"));
        if (json_is_object(pCx)) {
            fprintf(pOut, "  known-good counterexample: %s in run %s (%s)\n    paritydiff %s %s\n",
                    parity_escape(str(pCx, "slice"), zEsc, sizeof zEsc), str(pCx, "run"), str(pCx, "why"),
                    parity_escape(str(pCx, "eager"), zEsc2, sizeof zEsc2), str(pCx, "compiled"));
        } else {
            fputs("  known-good counterexample: none in the history\n", pOut);
        }
        fprintf(pOut, "  mitigation in force: %s (owner %s)\n", str(pMit, "action"),
                parity_escape(str(pMit, "owner"), zEsc, sizeof zEsc));
        fprintf(pOut, "  root cause to confirm: ");
        if (strcmp(str(pRoot, "kind"), "local_cause") == 0)
            fprintf(pOut, "%s (%s) in the compiled kernel ", parity_escape(str(pRoot, "tensor"), zEsc,
                    sizeof zEsc), str(pRoot, "op"));
        put_value(pOut, json_object_get(pRoot, "kernel"));
        fprintf(pOut, "\n    suspects ");
        put_value(pOut, json_object_get(pRoot, "suspects"));
        fprintf(pOut, "\n    %s\n", parity_escape(str(pRoot, "confirm"), zEsc, sizeof zEsc));
        if (strcmp(str(pRoot, "kind"), "local_cause") == 0)
            put_repro(pOut, json_object_get(pRoot, "repro"));
    }
    return ferror(pOut) ? -1 : 0;
}
