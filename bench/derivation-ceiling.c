/*
 * The single-core derivation ceiling: what plain C with OpenSSL needs per diagnosis key for the
 * work detection cannot avoid (protocol.md §1, §3): RPIK = HKDF-SHA256(TEK, salt empty,
 * info "EN-RPIK", 16) and the 144 RPIs, AES-128-ECB over the padded data in one call.
 * HMAC's pads for the constant salt are hashed once; the per-key ones cannot be.
 *
 *   derivation-ceiling KEYS.bin      KEYS.bin: 16-byte TEKs, back to back
 *
 * Prints the keys per second and the XOR of every RPI, so that enbench can check that the
 * baseline derives what enagent derives.
 */
#include <openssl/evp.h>
#include <openssl/sha.h>
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

static void hmac_finish(SHA256_CTX inner, SHA256_CTX outer, const uint8_t *data, size_t length, uint8_t out[32]) {
    uint8_t digest[32];
    SHA256_Update(&inner, data, length);
    SHA256_Final(digest, &inner);
    SHA256_Update(&outer, digest, sizeof digest);
    SHA256_Final(out, &outer);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s KEYS.bin\n", argv[0]); return 64; }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 1; }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    rewind(file);
    size_t count = (size_t)size / 16;
    uint8_t *keys = malloc((size_t)size);
    if (!keys || fread(keys, 16, count, file) != count) { fprintf(stderr, "%s: unreadable\n", argv[1]); return 1; }
    fclose(file);

    static uint8_t padded[INTERVALS * 16], rpis[INTERVALS * 16];
    for (uint32_t j = 0; j < INTERVALS; j++) {
        uint32_t interval = FIRST_INTERVAL + j;
        memcpy(padded + j * 16, "EN-RPI", 6);
        memset(padded + j * 16 + 6, 0, 6);
        for (int b = 0; b < 4; b++) padded[j * 16 + 12 + b] = (uint8_t)(interval >> (8 * b));
    }
    static const uint8_t zeros[32], info[] = "EN-RPIK\x01";
    SHA256_CTX salt_inner, salt_outer;
    hmac_pads(zeros, sizeof zeros, &salt_inner, &salt_outer);
    /* The cipher is fetched once; each key then only sets its schedule. */
    EVP_CIPHER_CTX *aes = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(aes, EVP_aes_128_ecb(), NULL, NULL, NULL);
    EVP_CIPHER_CTX_set_padding(aes, 0);
    uint64_t checksum[2] = {0, 0};

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t k = 0; k < count; k++) {
        uint8_t prk[32], okm[32];
        hmac_finish(salt_inner, salt_outer, keys + 16 * k, 16, prk);
        SHA256_CTX inner, outer;
        hmac_pads(prk, sizeof prk, &inner, &outer);
        hmac_finish(inner, outer, info, sizeof info - 1, okm);
        int length = 0;
        EVP_EncryptInit_ex(aes, NULL, NULL, okm, NULL);
        EVP_EncryptUpdate(aes, rpis, &length, padded, sizeof padded);
        for (int j = 0; j < INTERVALS; j++) {
            uint64_t words[2];
            memcpy(words, rpis + 16 * j, 16);
            checksum[0] ^= words[0];
            checksum[1] ^= words[1];
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%.0f ", (double)count / seconds);
    for (int i = 0; i < 16; i++) printf("%02x", ((const uint8_t *)checksum)[i]);
    printf("\n");
    EVP_CIPHER_CTX_free(aes);
    free(keys);
    return 0;
}
