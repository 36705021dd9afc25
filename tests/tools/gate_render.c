/*
 * gate_render.c - a test tool: reads a gate JSON document (diff/GATE.md) and writes the
 * reports that reports/report_gate.h makes of it, so the writers are tested on documents
 * a test controls (hand-made edge cases) as well as on the gate's own output.
 *
 *   gate_render DOC.json [--text FILE] [--junit FILE] [--metrics FILE] [--html FILE]
 *                        [--mitigations FILE]
 * Exit 0, or 2 with one line on stderr.
 */
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "reports/report_gate.h"

int main(int argc, char **argv)
{
    json_error_t jerr;
    json_t *pDoc;
    char zErr[1024];
    int i, rc = 0;

    if (argc < 2 || (argc % 2) != 0) {
        fprintf(stderr, "usage: gate_render DOC.json [--text|--junit|--metrics|--html|"
                        "--mitigations FILE]...\n");
        return 2;
    }
    pDoc = json_load_file(argv[1], 0, &jerr);
    if (pDoc == NULL) {
        fprintf(stderr, "gate_render: %s:%d: %s\n", argv[1], jerr.line, jerr.text);
        return 2;
    }
    for (i = 2; i + 1 < argc && rc == 0; i += 2) {
        const char *zOpt = argv[i], *zPath = argv[i + 1];
        if (strcmp(zOpt, "--text") == 0) {
            FILE *pOut = strcmp(zPath, "-") == 0 ? stdout : fopen(zPath, "w");
            if (pOut == NULL || parity_report_gate_text(pDoc, pOut) != 0) {
                snprintf(zErr, sizeof zErr, "cannot write %s", zPath);
                rc = -1;
            }
            if (pOut && pOut != stdout) fclose(pOut);
        } else if (strcmp(zOpt, "--junit") == 0) {
            rc = parity_report_gate_junit(pDoc, zPath, zErr, sizeof zErr);
        } else if (strcmp(zOpt, "--metrics") == 0) {
            rc = parity_report_gate_metrics(pDoc, zPath, zErr, sizeof zErr);
        } else if (strcmp(zOpt, "--html") == 0) {
            rc = parity_report_gate_html(pDoc, zPath, zErr, sizeof zErr);
        } else if (strcmp(zOpt, "--mitigations") == 0) {
            rc = parity_report_gate_mitigations(pDoc, zPath, zErr, sizeof zErr);
        } else {
            snprintf(zErr, sizeof zErr, "unknown option %s", zOpt);
            rc = -1;
        }
    }
    json_decref(pDoc);
    if (rc != 0) {
        fprintf(stderr, "gate_render: %s\n", zErr);
        return 2;
    }
    return 0;
}
