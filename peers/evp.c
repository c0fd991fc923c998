/* One harness of `parcrypt-lab --peers` (protocol: peers/README.md): OpenSSL's EVP
 * interface with one context per thread, keyed once, then per message
 * EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, -1) + EVP_CipherUpdate + EVP_CipherFinal_ex.
 *
 *   evp CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS
 *
 * Build: cc -O2 -pthread evp.c -o evp -lcrypto */
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG 16

static int gcm, encrypt, key_bytes;
static size_t bytes;
static const EVP_CIPHER *cipher;

static void fail(const char *message) {
    fprintf(stderr, "error: %s\n", message);
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A context holding the key schedule (and for GCM the H table), built once. */
static EVP_CIPHER_CTX *keyed(const unsigned char *key, int enc) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx || !EVP_CipherInit_ex(ctx, cipher, NULL, key, NULL, enc))
        fail("EVP_CipherInit_ex refused the key");
    return ctx;
}

/* One message from `in` to `out` under `iv`; GCM encryption writes the tag after the
 * body, GCM decryption checks the tag found after the body of `in`. Returns 0 on failure. */
static int message(EVP_CIPHER_CTX *ctx, int enc, const unsigned char *iv,
                   const unsigned char *in, unsigned char *out, size_t n) {
    int length = 0, final = 0;
    if (!EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, -1)) return 0;
    if (gcm && !enc &&
        !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, (void *)(in + n)))
        return 0;
    /* EVP_CipherUpdate takes an int length: feed huge messages in pieces. */
    size_t done = 0;
    while (done < n) {
        size_t piece = n - done > (1u << 30) ? (1u << 30) : n - done;
        if (!EVP_CipherUpdate(ctx, out + done, &length, in + done, (int)piece)) return 0;
        done += (size_t)length;
    }
    if (!EVP_CipherFinal_ex(ctx, out + done, &final)) return 0;
    if (gcm && enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, out + n)) return 0;
    return 1;
}

static int unhex(const char *text, unsigned char *out) {
    size_t n = strlen(text) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned int byte;
        if (sscanf(text + 2 * i, "%2x", &byte) != 1) fail("hex");
        out[i] = (unsigned char)byte;
    }
    return (int)n;
}

/* NIST GCM test cases 2 and 14; SP 800-38A F.5.1 and F.5.5 (first block). */
static int known_answer(void) {
    const char *key, *iv, *plain, *expected;
    if (gcm) {
        key = key_bytes == 16 ? "00000000000000000000000000000000"
                              : "0000000000000000000000000000000000000000000000000000000000000000";
        iv = "000000000000000000000000";
        plain = "00000000000000000000000000000000";
        expected = key_bytes == 16
            ? "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf"
            : "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919";
    } else {
        key = key_bytes == 16 ? "2b7e151628aed2a6abf7158809cf4f3c"
                              : "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
        iv = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
        plain = "6bc1bee22e409f96e93d7e117393172a";
        expected = key_bytes == 16 ? "874d6191b620e3261bef6864990db6ce"
                                   : "601ec313775789a5b7a7f504bbf3d228";
    }
    unsigned char k[32], v[16], p[16], e[32], out[32], back[32];
    unhex(key, k); unhex(iv, v); unhex(plain, p);
    int elen = unhex(expected, e);
    EVP_CIPHER_CTX *enc = keyed(k, 1), *dec = keyed(k, 0);
    int ok = message(enc, 1, v, p, out, 16) && memcmp(out, e, (size_t)elen) == 0 &&
             message(dec, 0, v, e, back, 16) && memcmp(back, p, 16) == 0;
    EVP_CIPHER_CTX_free(enc);
    EVP_CIPHER_CTX_free(dec);
    return ok;
}

/* Each worker (its IV is rewritten per message) on its own 128-byte pair of cache lines, and
   4 KiB of unused room after each buffer, as every harness leaves: adjacent threads' data
   could share a line or a prefetched pair otherwise. */
#define SPACING 4096
typedef struct {
    _Alignas(128) int thread;
    EVP_CIPHER_CTX *ctx;
    unsigned char *in, *out, iv[16];
} Worker;

static pthread_barrier_t start_line;
static uint64_t count;

static void *work(void *argument) {
    Worker *w = argument;
    pthread_barrier_wait(&start_line);
    for (uint64_t index = 0; index < count; index++) {
        if (encrypt || !gcm) {
            w->iv[0] = (unsigned char)w->thread;
            for (int i = 0; i < 8; i++) w->iv[4 + i] = (unsigned char)(index >> (56 - 8 * i));
        }
        if (!message(w->ctx, encrypt, w->iv, w->in, w->out, bytes)) fail("a message failed (tag?)");
    }
    return NULL;
}

static double run(Worker *workers, int threads, uint64_t messages) {
    pthread_t ids[256];
    count = messages;
    pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, work, &workers[t]);
    pthread_barrier_wait(&start_line);
    double start = now();
    for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    double seconds = now() - start;
    pthread_barrier_destroy(&start_line);
    return seconds;
}

int main(int argc, char **argv) {
    if (argc != 7) fail("usage: evp CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS");
    const char *name = argv[1];
    if (!strcmp(name, "aes-128-gcm")) { gcm = 1; key_bytes = 16; cipher = EVP_aes_128_gcm(); }
    else if (!strcmp(name, "aes-256-gcm")) { gcm = 1; key_bytes = 32; cipher = EVP_aes_256_gcm(); }
    else if (!strcmp(name, "aes-128-ctr")) { gcm = 0; key_bytes = 16; cipher = EVP_aes_128_ctr(); }
    else if (!strcmp(name, "aes-256-ctr")) { gcm = 0; key_bytes = 32; cipher = EVP_aes_256_ctr(); }
    else fail("unknown cipher");
    if (!strcmp(argv[2], "encrypt")) encrypt = 1;
    else if (!strcmp(argv[2], "decrypt")) encrypt = 0;
    else fail("unknown direction");
    char *end;
    bytes = strtoull(argv[3], &end, 10);
    if (*end) fail("BYTES is not a number");
    int threads = atoi(argv[4]), runs = atoi(argv[5]);
    double min_seconds = strtod(argv[6], &end);
    if (threads < 1 || threads > 256 || runs < 1 || *end) fail("bad THREADS, RUNS or MIN_SECONDS");
    if (!known_answer()) {
        fprintf(stderr, "error: known-answer test failed\n");
        return 2;
    }

    unsigned char key[32];
    for (int i = 0; i < 32; i++) key[i] = (unsigned char)i;
    unsigned char fixed_iv[16];
    memset(fixed_iv, 0x5a, sizeof fixed_iv);
    size_t tag = gcm ? TAG : 0;
    Worker workers[256];
    for (int t = 0; t < threads; t++) {
        Worker *w = &workers[t];
        w->thread = t;
        w->ctx = keyed(key, encrypt);
        memcpy(w->iv, fixed_iv, sizeof fixed_iv);
        w->in = malloc(bytes + tag + 16 + SPACING);
        w->out = malloc(bytes + tag + 16 + SPACING);
        if (!w->in || !w->out) fail("out of memory");
        for (size_t i = 0; i < bytes; i++) w->in[i] = (unsigned char)(i * 31);
        memset(w->out, 0x11, bytes + tag + 16);
        if (gcm && !encrypt) {
            /* A valid ciphertext and tag under the fixed IV, made before timing. */
            EVP_CIPHER_CTX *sealer = keyed(key, 1);
            if (!message(sealer, 1, fixed_iv, w->in, w->out, bytes)) fail("could not seal");
            memcpy(w->in, w->out, bytes + tag);
            EVP_CIPHER_CTX_free(sealer);
        }
    }
    uint64_t messages = 1;
    while (run(workers, threads, messages) < min_seconds) messages *= 2;
    printf("{\"peer\":\"evp\",\"library\":\"%s\",\"cipher\":\"%s\",\"direction\":\"%s\","
           "\"bytes\":%zu,\"threads\":%d,\"messages\":%llu,\"seconds\":[",
           OpenSSL_version(OPENSSL_VERSION), name, argv[2], bytes, threads,
           (unsigned long long)messages);
    for (int r = 0; r < runs; r++) printf("%s%.9f", r ? "," : "", run(workers, threads, messages));
    printf("]}\n");
    return 0;
}
