/* The AMX-TILE and AMX-INT8 instructions our tile kernels use, written from their
   descriptions in Intel's Software Developer's Manual (vol. 1 ch. 18 and vol. 2: LDTILECFG,
   TILELOADD, TILESTORED, TILEZERO, TDPBUSD, TILERELEASE), for running the native code of
   tvm_bridge/amx.py on a CPU without AMX: tests/tvm_bridge/amx_emulation.py renames the
   LLVM intrinsics in the generated IR to these functions.  The tile registers and their
   configuration are per thread, as on the hardware; a configuration or an operand shape the
   manual calls a fault (#GP, #UD) is recorded in qd_emu_fault (the first one) and the
   instruction does nothing.  Counters of the instructions run:
   qd_emu_amx_count[ldtilecfg, tileloadd, tilestored, tdpbusd, tilerelease, tilezero]. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct { int configured; uint16_t colsb[8]; uint8_t rows[8]; uint8_t data[8][16][64]; } tiles_t;
static __thread tiles_t T;
long qd_emu_amx_count[6];
#define COUNT(i) __atomic_fetch_add(&qd_emu_amx_count[i], 1, __ATOMIC_RELAXED)

/* the first fault (empty: none); the faulting instruction does nothing (the test reads it) */
char qd_emu_fault[160];
static int fault(const char *what) {
  if (!__atomic_test_and_set(&qd_emu_fault[sizeof qd_emu_fault - 1], __ATOMIC_RELAXED))
    snprintf(qd_emu_fault, sizeof qd_emu_fault - 1, "%s", what);
  return 1;
}

void qd_emu_ldtilecfg(const uint8_t *cfg) {
  COUNT(0);
  if (cfg[0] == 0) { memset(&T, 0, sizeof T); return; }
  if (cfg[0] != 1) { fault("ldtilecfg: palette is not 1"); return; }
  if (cfg[1] != 0) { fault("ldtilecfg: start_row is not 0"); return; }
  for (int i = 2; i < 16; i++) if (cfg[i]) { fault("ldtilecfg: reserved bytes 2..15 not zero"); return; }
  memset(&T, 0, sizeof T);
  for (int t = 0; t < 16; t++) {
    uint16_t colsb = (uint16_t)(cfg[16 + 2 * t] | (cfg[17 + 2 * t] << 8));
    uint8_t rows = cfg[48 + t];
    if (t >= 8) { if (colsb || rows) { fault("ldtilecfg: tile 8..15 configured"); return; } continue; }
    if (colsb > 64 || rows > 16) { fault("ldtilecfg: tile larger than 16 rows x 64 bytes"); return; }
    if ((colsb == 0) != (rows == 0)) { fault("ldtilecfg: tile with rows but no columns, or the reverse"); return; }
    T.colsb[t] = colsb; T.rows[t] = rows;
  }
  T.configured = 1;
}

static int bad(int t, const char *op) {
  char what[80];
  if (!T.configured) return fault("a tile instruction without a configuration");
  if (t < 0 || t > 7 || !T.rows[t]) {
    snprintf(what, sizeof what, "%s on tile %d, which is not configured", op, t);
    return fault(what);
  }
  return 0;
}

void qd_emu_tileloadd64(int8_t t, const uint8_t *base, int64_t stride) {
  COUNT(1);
  if (bad(t, "tileloadd")) return;
  memset(T.data[t], 0, sizeof T.data[t]);
  for (int r = 0; r < T.rows[t]; r++) memcpy(T.data[t][r], base + r * stride, T.colsb[t]);
}

void qd_emu_tilestored64(int8_t t, uint8_t *base, int64_t stride) {
  COUNT(2);
  if (bad(t, "tilestored")) return;
  for (int r = 0; r < T.rows[t]; r++) memcpy(base + r * stride, T.data[t][r], T.colsb[t]);
}

void qd_emu_tilezero(int8_t t) { COUNT(5); if (bad(t, "tilezero")) return; memset(T.data[t], 0, sizeof T.data[t]); }

/* dst.row[m].dword[n] += sum over k < a.colsb / 4 of DPBD(a.row[m].dword[k], b.row[k].dword[n]),
   DPBD of unsigned bytes of a and signed bytes of b; #UD unless the shapes agree */
void qd_emu_tdpbusd(int8_t c, int8_t a, int8_t b) {
  COUNT(3);
  if (bad(c, "tdpbusd dst") || bad(a, "tdpbusd src1") || bad(b, "tdpbusd src2")) return;
  if (T.rows[c] != T.rows[a] || T.colsb[c] != T.colsb[b] || T.colsb[a] != 4 * T.rows[b] || T.colsb[c] % 4 ||
      T.colsb[a] % 4) { fault("tdpbusd: tile shapes disagree (#UD)"); return; }
  for (int m = 0; m < T.rows[c]; m++)
    for (int n = 0; n < T.colsb[c] / 4; n++) {
      uint32_t acc; memcpy(&acc, &T.data[c][m][4 * n], 4);
      for (int k = 0; k < T.colsb[a] / 4; k++)
        for (int i = 0; i < 4; i++)
          acc += (uint32_t)((int32_t)T.data[a][m][4 * k + i] * (int32_t)(int8_t)T.data[b][k][4 * n + i]);
      memcpy(&T.data[c][m][4 * n], &acc, 4);
    }
}

void qd_emu_tilerelease(void) { COUNT(4); memset(&T, 0, sizeof T); }
