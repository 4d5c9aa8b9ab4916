/* A narrow C face for ISA-L's streaming gzip inflate (Debian's libisal-dev), so Rust never
 * mirrors `struct inflate_state` by hand: the struct is allocated and read here, where the
 * installed header defines it. Used by src/inflate.rs; see that file for why ISA-L. */
#include <stdint.h>
#include <stdlib.h>
#include <isa-l/igzip_lib.h>

struct inflate_state *cw_isal_new(void) {
    struct inflate_state *s = malloc(sizeof *s);
    if (s) {
        isal_inflate_init(s);
        s->crc_flag = ISAL_GZIP; /* parse the gzip header, verify CRC-32 and length */
    }
    return s;
}

void cw_isal_free(struct inflate_state *s) { free(s); }

/* Ready for the next gzip member of a multi-member file. */
void cw_isal_reset(struct inflate_state *s) {
    isal_inflate_reset(s);
    s->crc_flag = ISAL_GZIP;
}

/* Inflates from `in` into `out`; `*in_len`/`*out_len` come back as the bytes consumed/produced.
 * Returns ISA-L's code (< 0: corrupt); `*done` is 1 once the member ended and was verified. */
int cw_isal_inflate(struct inflate_state *s, const uint8_t *in, uint32_t *in_len, uint8_t *out,
                    uint32_t *out_len, int *done) {
    s->next_in = (uint8_t *)in;
    s->avail_in = *in_len;
    s->next_out = out;
    s->avail_out = *out_len;
    int r = isal_inflate(s);
    *in_len -= s->avail_in;
    *out_len -= s->avail_out;
    *done = s->block_state == ISAL_BLOCK_FINISH;
    return r;
}
