/*
 * The single-core derivation ceiling: what plain C with OpenSSL needs per diagnosis key for the
 * work detection cannot avoid (protocol.md §1, §3): RPIK = HKDF-SHA256(TEK, salt empty,
 * info "EN-RPIK", 16) and the 144 RPIs, AES-128-ECB over the padded data in one call.
 * HMAC's pads for the constant salt are hashed once; the per-key ones cannot be. Each message
 * fits one block, so each hash after a pad is one SHA-256 compression, as in ENCore.
 *
 *   derivation-ceiling KEYS.bin [RPIS.bin [THREADS]]
 *
 * KEYS.bin: 16-byte TEKs, back to back. Prints the keys per second and the XOR of every RPI, so
 * that enbench can check that the baseline derives what enagent derives.
 *
 * With RPIS.bin (sightings' 16-byte RPIs, back to back) it also looks every derived RPI up among
 * them, as detection must, and prints the keys per second of derivation and lookups together and
 * the number of RPIs found: the single-core floor of matching before any file is read. The set is
 * what a careful C program would build: a blocked filter of 16 bits a sighting (two bits in one
 * word; RPIs are AES output, so their bits are their hash) before an open-addressed table.
 *
 * With THREADS, as many threads share the keys (each its own contiguous part, its own cipher
 * context; the set is shared, read only): derivation and lookups on that many cores, the rate a
 * whole detection on the machine is measured against.
 */
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INTERVALS 144
#define FIRST_INTERVAL 2700000u

/* Both HMAC pads of `key` (at most 64 bytes) as hashed first blocks. */
static void hmac_pads(const uint8_t *key, size_t length, SHA256_CTX *inner, SHA256_CTX *outer) {
    uint8_t pad[64];
    memset(pad, 0x36, sizeof pad);
    for (size_t i = 0; i < length; i++) pad[i] ^= key[i];
    SHA256_Init(inner);
    SHA256_Update(inner, pad, sizeof pad);
    memset(pad, 0x5c, sizeof pad);
    for (size_t i = 0; i < length; i++) pad[i] ^= key[i];
    SHA256_Init(outer);
    SHA256_Update(outer, pad, sizeof pad);
}

/* SHA-256's padding after the `length` bytes at the start of `block`: the last block of a
 * message of HMAC's 64-byte pad and those bytes. */
static void pad_last_block(uint8_t block[64], size_t length) {
    uint64_t bits = (64 + length) * 8;
    block[length] = 0x80;
    memset(block + length + 1, 0, 55 - length);
    for (int i = 0; i < 8; i++) block[63 - i] = (uint8_t)(bits >> (8 * i));
}

static void digest(const SHA256_CTX *state, uint8_t out[32]) {
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++) out[4 * i + b] = (uint8_t)(state->h[i] >> (24 - 8 * b));
}

/* HMAC's two hashes of a message of at most 32 bytes, from its pads' hashed first blocks: as
 * the message fits their second block, one compression each, SHA-256's padding written here. */
static void hmac_finish(SHA256_CTX inner, SHA256_CTX outer, const uint8_t *data, size_t length, uint8_t out[32]) {
    uint8_t block[64];
    memcpy(block, data, length);
    pad_last_block(block, length);
    SHA256_Transform(&inner, block);
    digest(&inner, block);
    pad_last_block(block, 32);
    SHA256_Transform(&outer, block);
    digest(&outer, out);
}

/* A whole file of 16-byte records. */
static uint8_t *read_records(const char *path, size_t *count) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(1); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    rewind(file);
    *count = (size_t)size / 16;
    uint8_t *records = malloc((size_t)size + 1);
    if (!records || fread(records, 16, *count, file) != *count) { fprintf(stderr, "%s: unreadable\n", path); exit(1); }
    fclose(file);
    return records;
}

struct rpi_set {
    uint64_t *filter, (*slots)[2];
    size_t filter_words, slot_mask;
};

static uint64_t word_at(const uint8_t *bytes) { uint64_t word; memcpy(&word, bytes, 8); return word; }

static size_t filter_word(const struct rpi_set *set, uint64_t low) {
    return (size_t)(((unsigned __int128)low * set->filter_words) >> 64);
}

static uint64_t filter_bits(uint64_t low) { return 1ull << (low & 63) | 1ull << ((low >> 6) & 63); }

static struct rpi_set rpi_set_build(const uint8_t *rpis, size_t count) {
    struct rpi_set set;
    set.filter_words = count / 4 + 1;
    set.filter = calloc(set.filter_words, 8);
    size_t slots = 16;
    while (slots < count * 2) slots *= 2;
    set.slots = calloc(slots, 16);
    set.slot_mask = slots - 1;
    if (!set.filter || !set.slots) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < count; i++) {
        uint64_t low = word_at(rpis + 16 * i), high = word_at(rpis + 16 * i + 8);
        set.filter[filter_word(&set, low)] |= filter_bits(low);
        size_t slot = (size_t)high & set.slot_mask;
        while (set.slots[slot][0] | set.slots[slot][1]) slot = (slot + 1) & set.slot_mask;
        set.slots[slot][0] = low;
        set.slots[slot][1] = high;
    }
    return set;
}

static int rpi_set_contains(const struct rpi_set *set, const uint8_t *rpi) {
    uint64_t low = word_at(rpi), high = word_at(rpi + 8);
    for (size_t slot = (size_t)high & set->slot_mask; set->slots[slot][0] | set->slots[slot][1]; slot = (slot + 1) & set->slot_mask)
        if (set->slots[slot][0] == low && set->slots[slot][1] == high) return 1;
    return 0;
}

/* How many of a key's RPIs the set holds: the filter first for all of them, without a branch,
 * so that their filter words are loaded in parallel; the table only for those that pass. */
static uint64_t rpi_set_count(const struct rpi_set *set, const uint8_t *rpis) {
    uint64_t passed[(INTERVALS + 63) / 64] = {0}, found = 0;
    for (int j = 0; j < INTERVALS; j++) {
        uint64_t low = word_at(rpis + 16 * j), bits = filter_bits(low);
        passed[j / 64] |= (uint64_t)((set->filter[filter_word(set, low)] & bits) == bits) << (j % 64);
    }
    for (int w = 0; w < (INTERVALS + 63) / 64; w++)
        for (uint64_t m = passed[w]; m; m &= m - 1)
            found += (uint64_t)rpi_set_contains(set, rpis + 16 * (w * 64 + __builtin_ctzll(m)));
    return found;
}

/* What one thread derives and looks up: keys [first, end), its findings and checksum. */
struct share {
    const uint8_t *keys;
    size_t first, end;
    const struct rpi_set *set;
    uint64_t found, checksum[2];
};

static uint8_t padded[INTERVALS * 16];
static SHA256_CTX salt_inner, salt_outer;

static void *derive(void *argument) {
    struct share *share = argument;
    static const uint8_t info[] = "EN-RPIK\x01";
    uint8_t rpis[INTERVALS * 16];
    /* The cipher is fetched once; each key then only sets its schedule. Padding stays on: it
     * only matters to EVP_EncryptFinal, never called, and OpenSSL 3 would apply a padding of 0
     * again on every init, a parameter looked up by name per key. */
    EVP_CIPHER_CTX *aes = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(aes, EVP_aes_128_ecb(), NULL, NULL, NULL);
    for (size_t k = share->first; k < share->end; k++) {
        uint8_t prk[32], okm[32];
        hmac_finish(salt_inner, salt_outer, share->keys + 16 * k, 16, prk);
        SHA256_CTX inner, outer;
        hmac_pads(prk, sizeof prk, &inner, &outer);
        hmac_finish(inner, outer, info, sizeof info - 1, okm);
        int length = 0;
        EVP_EncryptInit_ex(aes, NULL, NULL, okm, NULL);
        EVP_EncryptUpdate(aes, rpis, &length, padded, sizeof padded);
        if (share->set) {
            share->found += rpi_set_count(share->set, rpis);
        } else {
            for (int j = 0; j < INTERVALS; j++) {
                share->checksum[0] ^= word_at(rpis + 16 * j);
                share->checksum[1] ^= word_at(rpis + 16 * j + 8);
            }
        }
    }
    EVP_CIPHER_CTX_free(aes);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) { fprintf(stderr, "usage: %s KEYS.bin [RPIS.bin [THREADS]]\n", argv[0]); return 64; }
    size_t count, sighting_count = 0;
    uint8_t *keys = read_records(argv[1], &count);
    struct rpi_set set = {0};
    if (argc >= 3) {
        uint8_t *sightings = read_records(argv[2], &sighting_count);
        set = rpi_set_build(sightings, sighting_count);
        free(sightings);
    }
    int threads = argc == 4 ? atoi(argv[3]) : 1;
    if (threads < 1 || threads > 1024) { fprintf(stderr, "%s: THREADS must be 1 to 1024, not %s\n", argv[0], argv[3]); return 64; }

    for (uint32_t j = 0; j < INTERVALS; j++) {
        uint32_t interval = FIRST_INTERVAL + j;
        memcpy(padded + j * 16, "EN-RPI", 6);
        memset(padded + j * 16 + 6, 0, 6);
        for (int b = 0; b < 4; b++) padded[j * 16 + 12 + b] = (uint8_t)(interval >> (8 * b));
    }
    static const uint8_t zeros[32];
    hmac_pads(zeros, sizeof zeros, &salt_inner, &salt_outer);
    struct share *shares = calloc((size_t)threads, sizeof *shares);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    if (!shares || !ids) { fprintf(stderr, "out of memory\n"); return 1; }
    for (int t = 0; t < threads; t++)
        shares[t] = (struct share){keys, count * (size_t)t / (size_t)threads, count * (size_t)(t + 1) / (size_t)threads,
                                   argc >= 3 ? &set : NULL, 0, {0, 0}};

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (threads == 1) {
        derive(&shares[0]);
    } else {
        for (int t = 0; t < threads; t++)
            if (pthread_create(&ids[t], NULL, derive, &shares[t]) != 0) { fprintf(stderr, "cannot start a thread\n"); return 1; }
        for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    uint64_t checksum[2] = {0, 0}, found = 0;
    for (int t = 0; t < threads; t++) {
        found += shares[t].found;
        checksum[0] ^= shares[t].checksum[0];
        checksum[1] ^= shares[t].checksum[1];
    }
    printf("%.0f ", (double)count / seconds);
    if (argc >= 3) {
        printf("%llu\n", (unsigned long long)found);
    } else {
        for (int i = 0; i < 16; i++) printf("%02x", ((const uint8_t *)checksum)[i]);
        printf("\n");
    }
    free(shares);
    free(ids);
    free(keys);
    return 0;
}
