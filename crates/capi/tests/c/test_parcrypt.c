/*
 * The C ABI from C: known-answer vectors, GCM tag failures, file round trips (age files
 * among them), interop with the parcrypt command line, concurrency on one cipher, and every error path.
 *
 * Usage: test_parcrypt PARCRYPT_BINARY SCRATCH_FOLDER
 * Prints one line per failed check, then "c api: N checks passed, M failed"; exits 1 on
 * any failure. Built and run by scripts/test.sh (see scripts/capi_test.sh).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parcrypt.h"

static int checks = 0;
static int failures = 0;

#define CHECK(condition, ...)                                                   \
    do {                                                                        \
        checks++;                                                               \
        if (!(condition)) {                                                     \
            failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

static const char *scratch;
static const char *parcrypt_bin;

static size_t unhex(const char *hex, uint8_t *out) {
    size_t n = 0;
    for (; hex[0] && hex[1]; hex += 2) {
        unsigned value;
        sscanf(hex, "%2x", &value);
        out[n++] = (uint8_t)value;
    }
    return n;
}

static char *scratch_path(const char *name) {
    static char paths[16][512];
    static int next = 0;
    char *path = paths[next++ % 16];
    snprintf(path, 512, "%s/%s", scratch, name);
    return path;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* A failed call: the status returned, the error object's status, and its message (one
 * line, not empty). Frees the error. The error comes by its address, read only after the
 * call (C leaves the order of a call's arguments unspecified). */
static void expect_failure(const char *what, ParcryptStatus got, ParcryptError **slot,
                           ParcryptStatus want) {
    ParcryptError *error = *slot;
    *slot = NULL;
    CHECK(got == want, "%s: status %s, expected %s", what, parcrypt_status_name(got),
          parcrypt_status_name(want));
    CHECK(error != NULL, "%s: no error object", what);
    if (error) {
        const char *message = parcrypt_error_message(error);
        CHECK(parcrypt_error_status(error) == want, "%s: error object says %s", what,
              parcrypt_status_name(parcrypt_error_status(error)));
        CHECK(message && message[0] != '\0', "%s: empty message", what);
        CHECK(message && strchr(message, '\n') == NULL, "%s: message has a newline: %s", what,
              message);
        parcrypt_error_free(error);
    }
}

static void expect_ok(const char *what, ParcryptStatus got, ParcryptError **slot) {
    ParcryptError *error = *slot;
    *slot = NULL;
    CHECK(got == PARCRYPT_STATUS_OK && error == NULL, "%s: %s: %s", what,
          parcrypt_status_name(got), error ? parcrypt_error_message(error) : "(no message)");
    parcrypt_error_free(error);
}

/* Fills `bytes` with the test pattern i * step + first (mod 256). */
static void fill(uint8_t *bytes, size_t length, unsigned step, unsigned first) {
    for (size_t i = 0; i < length; i++) bytes[i] = (uint8_t)(i * step + first);
}

/* An aes-128-gcm cipher under a key of 16 bytes `key_byte`, with `iv` (NULL, 0: none) at
 * creation; NULL after a failed check named `what`. */
static ParcryptCipher *gcm_cipher(ParcryptEngine *engine, const char *what, uint8_t key_byte,
                                  const uint8_t *iv, size_t iv_length) {
    uint8_t key[16];
    memset(key, key_byte, sizeof key);
    ParcryptCipher *cipher = NULL;
    ParcryptError *error = NULL;
    expect_ok(what, parcrypt_cipher_new(engine, "aes-128-gcm", key, 16, iv, iv_length, 0, &cipher,
                                        &error), &error);
    return cipher;
}

/* One known answer: encrypt, decrypt, in place, and with the IV given per call. */
static void known_answer(ParcryptEngine *engine, const char *name, const char *key_hex,
                         const char *iv_hex, const char *aad_hex, const char *plain_hex,
                         const char *sealed_hex, uint32_t flags) {
    uint8_t key[64], iv[64], aad[64], plain[256], sealed[256], out[512];
    size_t key_length = unhex(key_hex, key), iv_length = unhex(iv_hex, iv);
    size_t aad_length = unhex(aad_hex, aad), plain_length = unhex(plain_hex, plain);
    size_t sealed_length = unhex(sealed_hex, sealed), out_length = 0;
    ParcryptError *error = NULL;
    ParcryptCipher *cipher = NULL;
    ParcryptStatus status = parcrypt_cipher_new(engine, name, key, key_length,
                                                iv_length ? iv : NULL, iv_length, flags,
                                                &cipher, &error);
    expect_ok(name, status, &error);
    if (!cipher) return;

    status = parcrypt_cipher_encrypt(cipher, plain, plain_length, aad, aad_length, out,
                                     sizeof out, &out_length, &error);
    expect_ok(name, status, &error);
    CHECK(out_length == sealed_length && memcmp(out, sealed, sealed_length) == 0,
          "%s: encryption differs from the vector", name);

    status = parcrypt_cipher_decrypt(cipher, sealed, sealed_length, aad, aad_length, out,
                                     sizeof out, &out_length, &error);
    expect_ok(name, status, &error);
    CHECK(out_length == plain_length && memcmp(out, plain, plain_length) == 0,
          "%s: decryption differs from the vector", name);

    /* The IV has encrypted its one message (issue 31 finding 3): a second is refused, and
     * in place needs a cipher of its own. */
    status = parcrypt_cipher_encrypt(cipher, plain, plain_length, aad, aad_length, out,
                                     sizeof out, &out_length, &error);
    if (iv_length)
        expect_failure("a second message under the IV", status, &error, PARCRYPT_STATUS_STATE);
    else
        expect_ok(name, status, &error);
    parcrypt_cipher_free(cipher);
    cipher = NULL;
    status = parcrypt_cipher_new(engine, name, key, key_length, iv_length ? iv : NULL,
                                 iv_length, flags, &cipher, &error);
    expect_ok(name, status, &error);
    if (!cipher) return;

    /* In place: the same pointer for input and output. */
    memcpy(out, plain, plain_length);
    status = parcrypt_cipher_encrypt(cipher, out, plain_length, aad, aad_length, out,
                                     sizeof out, &out_length, &error);
    expect_ok(name, status, &error);
    CHECK(out_length == sealed_length && memcmp(out, sealed, sealed_length) == 0,
          "%s: in-place encryption differs from the vector", name);
    status = parcrypt_cipher_decrypt(cipher, out, out_length, aad, aad_length, out, sizeof out,
                                     &out_length, &error);
    expect_ok(name, status, &error);
    CHECK(out_length == plain_length && memcmp(out, plain, plain_length) == 0,
          "%s: in-place decryption differs from the vector", name);
    parcrypt_cipher_free(cipher);

    if (iv_length == 0) return;
    /* A cipher made without an IV, the IV given per message. */
    status = parcrypt_cipher_new(engine, name, key, key_length, NULL, 0, flags, &cipher, &error);
    expect_ok(name, status, &error);
    if (!cipher) return;
    status = parcrypt_cipher_encrypt_iv(cipher, iv, iv_length, plain, plain_length, aad,
                                        aad_length, out, sizeof out, &out_length, &error);
    expect_ok(name, status, &error);
    CHECK(out_length == sealed_length && memcmp(out, sealed, sealed_length) == 0,
          "%s: per-call IV encryption differs from the vector", name);
    status = parcrypt_cipher_decrypt_iv(cipher, iv, iv_length, sealed, sealed_length, aad,
                                        aad_length, out, sizeof out, &out_length, &error);
    expect_ok(name, status, &error);
    CHECK(out_length == plain_length && memcmp(out, plain, plain_length) == 0,
          "%s: per-call IV decryption differs from the vector", name);
    /* Without a per-call IV such a cipher has none: refused. */
    status = parcrypt_cipher_encrypt(cipher, plain, plain_length, aad, aad_length, out,
                                     sizeof out, &out_length, &error);
    expect_failure("encrypt without any IV", status, &error, PARCRYPT_STATUS_BAD_IV);
    parcrypt_cipher_free(cipher);
}

static void vectors(ParcryptEngine *engine) {
    /* NIST SP 800-38A (2001), appendix F.5.1 CTR-AES128.Encrypt. */
    known_answer(engine, "aes-128-ctr", "2b7e151628aed2a6abf7158809cf4f3c",
                 "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", "",
                 "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                 "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710",
                 "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
                 "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee",
                 0);
    /* NIST SP 800-38A, appendix F.2.1 CBC-AES128.Encrypt (whole blocks, no padding). */
    known_answer(engine, "aes-128-cbc", "2b7e151628aed2a6abf7158809cf4f3c",
                 "000102030405060708090a0b0c0d0e0f", "",
                 "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                 "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710",
                 "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
                 "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7",
                 PARCRYPT_CIPHER_NO_PADDING);
    /* McGrew and Viega, "The Galois/Counter Mode of Operation (GCM)", revised 2005,
     * appendix B, test case 4 (AES-128, 12-byte IV, AAD): ciphertext then tag. */
    known_answer(engine, "aes-128-gcm", "feffe9928665731c6d6a8f9467308308",
                 "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
                 "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                 "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
                 "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                 "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
                 "5bc94fbc3221a5db94fae95ae7121a47",
                 0);
    /* Eric Young's Blowfish ECB vectors (schneier.com vectors.txt), first row. */
    known_answer(engine, "bf-ecb", "0000000000000000", "", "", "0000000000000000",
                 "4ef997456198dd78", PARCRYPT_CIPHER_NO_PADDING);
    /* The RC6 paper (Rivest, Robshaw, Sidney, Yin, v1.1, 1998), test vectors, 128-bit key. */
    known_answer(engine, "rc6-128-ecb", "0123456789abcdef0112233445566778", "", "",
                 "02132435465768798a9bacbdcedfe0f1", "524e192f4715c6231f51f6367ea43f18",
                 PARCRYPT_CIPHER_NO_PADDING);
}

/* A GCM message whose ciphertext or tag changed releases nothing. */
static void gcm_tag_failure(ParcryptEngine *engine) {
    uint8_t iv[12], plain[100], sealed[116], out[128];
    size_t out_length = 0;
    memset(iv, 9, sizeof iv);
    fill(plain, sizeof plain, 31, 1);
    ParcryptError *error = NULL;
    ParcryptCipher *cipher = gcm_cipher(engine, "gcm cipher", 7, iv, 12);
    if (!cipher) return;
    expect_ok("gcm seal", parcrypt_cipher_encrypt(cipher, plain, sizeof plain, NULL, 0, sealed,
                                                  sizeof sealed, &out_length, &error), &error);
    CHECK(out_length == sizeof sealed, "gcm: sealed length %zu", out_length);
    size_t flips[2] = {0, sizeof sealed - 1}; /* the first ciphertext byte, the last tag byte */
    for (int f = 0; f < 2; f++) {
        sealed[flips[f]] ^= 1;
        memset(out, 0xAA, sizeof out);
        out_length = 12345;
        ParcryptStatus status = parcrypt_cipher_decrypt(cipher, sealed, sizeof sealed, NULL, 0,
                                                        out, sizeof out, &out_length, &error);
        expect_failure("gcm forged", status, &error, PARCRYPT_STATUS_AUTHENTICATION_FAILED);
        CHECK(out_length == 0, "gcm forged: output length %zu", out_length);
        int leaked = 0;
        for (size_t i = 0; i < sizeof plain; i++) leaked |= out[i] == plain[i] && plain[i] != 0;
        CHECK(!leaked, "gcm forged: plaintext bytes reached the output");
        sealed[flips[f]] ^= 1;
    }
    /* The wrong AAD fails the same way. */
    ParcryptStatus status = parcrypt_cipher_decrypt(cipher, sealed, sizeof sealed,
                                                    (const uint8_t *)"x", 1, out, sizeof out,
                                                    &out_length, &error);
    expect_failure("gcm wrong aad", status, &error, PARCRYPT_STATUS_AUTHENTICATION_FAILED);
    parcrypt_cipher_free(cipher);
}

struct shared_job {
    ParcryptCipher *cipher;
    int index;
    int ok;
};

static void *encrypt_many(void *argument) {
    struct shared_job *job = argument;
    uint8_t iv[12] = {0}, plain[4096], out[4096 + 16], back[4096];
    job->ok = 1;
    for (int round = 0; round < 50; round++) {
        iv[0] = (uint8_t)job->index;
        iv[1] = (uint8_t)round;
        memset(plain, job->index * 50 + round, sizeof plain);
        size_t sealed = 0, opened = 0;
        if (parcrypt_cipher_encrypt_iv(job->cipher, iv, 12, plain, sizeof plain, NULL, 0, out,
                                       sizeof out, &sealed, NULL) != PARCRYPT_STATUS_OK ||
            parcrypt_cipher_decrypt_iv(job->cipher, iv, 12, out, sealed, NULL, 0, back,
                                       sizeof back, &opened, NULL) != PARCRYPT_STATUS_OK ||
            opened != sizeof plain || memcmp(back, plain, sizeof plain) != 0)
            job->ok = 0;
    }
    return NULL;
}

/* Eight threads share one cipher (and its engine). */
static void threads_share_a_cipher(ParcryptEngine *engine) {
    ParcryptCipher *cipher = gcm_cipher(engine, "shared cipher", 1, NULL, 0);
    if (!cipher) return;
    pthread_t threads[8];
    struct shared_job jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (struct shared_job){cipher, i, 0};
        pthread_create(&threads[i], NULL, encrypt_many, &jobs[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(threads[i], NULL);
        CHECK(jobs[i].ok, "thread %d: a round trip on the shared cipher failed", i);
    }
    parcrypt_cipher_free(cipher);
}

static const uint8_t FILE_KEY[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                     0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
static const char *FILE_KEY_HEX = "00112233445566778899aabbccddeeff";
#define PLAIN_BYTES 100000

static uint8_t *pattern(void) {
    static uint8_t bytes[PLAIN_BYTES];
    for (size_t i = 0; i < PLAIN_BYTES; i++) bytes[i] = (uint8_t)((i * 7 + i / 251) & 0xff);
    return bytes;
}

static int write_file(const char *path, const uint8_t *bytes, size_t length) {
    FILE *file = fopen(path, "wb");
    if (!file) return 0;
    int ok = fwrite(bytes, 1, length, file) == length;
    return fclose(file) == 0 && ok;
}

static size_t read_file(const char *path, uint8_t *bytes, size_t capacity) {
    FILE *file = fopen(path, "rb");
    if (!file) return (size_t)-1;
    size_t length = fread(bytes, 1, capacity, file);
    fclose(file);
    return length;
}

static int run(const char *command) {
    int status = system(command);
    return status == 0;
}

/* Reads the whole plaintext of an encrypted file through the decryptor. */
static int decrypted_matches(ParcryptEngine *engine, const char *path, const uint8_t *secret,
                             size_t secret_length, uint32_t flags, const uint8_t *want,
                             size_t want_length) {
    ParcryptFileDecryptor *decryptor = NULL;
    ParcryptError *error = NULL;
    ParcryptStatus status = parcrypt_file_decryptor_open(engine, path, secret, secret_length,
                                                         NULL, 0, flags, &decryptor, &error);
    expect_ok("decryptor open", status, &error);
    if (!decryptor) return 0;
    static uint8_t plain[PLAIN_BYTES + 1];
    size_t total = 0, got = 0;
    do {
        status = parcrypt_file_decryptor_read(decryptor, plain + total,
                                              sizeof plain - total < 7001 ? sizeof plain - total
                                                                          : 7001,
                                              &got, &error);
        expect_ok("decryptor read", status, &error);
        total += got;
    } while (status == PARCRYPT_STATUS_OK && got > 0 && total < sizeof plain);
    parcrypt_file_decryptor_free(decryptor);
    return total == want_length && memcmp(plain, want, want_length) == 0;
}

static void files(ParcryptEngine *engine) {
    const uint8_t *plain = pattern();
    ParcryptError *error = NULL;
    ParcryptStatus status;
    char *sealed_path = scratch_path("abi.parcrypt");

    /* Streaming encryption, in pieces of odd sizes. */
    ParcryptFileEncryptor *encryptor = NULL;
    status = parcrypt_file_encryptor_new(engine, sealed_path, FILE_KEY, 16, NULL, 0, 0,
                                         &encryptor, &error);
    expect_ok("encryptor new", status, &error);
    if (!encryptor) return;
    for (size_t done = 0; done < PLAIN_BYTES;) {
        size_t piece = PLAIN_BYTES - done < 7919 ? PLAIN_BYTES - done : 7919;
        expect_ok("encryptor write",
                  parcrypt_file_encryptor_write(encryptor, plain + done, piece, &error), &error);
        done += piece;
    }
    CHECK(!exists(sealed_path), "the file exists before finish");
    expect_ok("encryptor finish", parcrypt_file_encryptor_finish(encryptor, &error), &error);
    CHECK(exists(sealed_path), "the file does not exist after finish");
    status = parcrypt_file_encryptor_write(encryptor, plain, 1, &error);
    expect_failure("write after finish", status, &error, PARCRYPT_STATUS_STATE);
    status = parcrypt_file_encryptor_finish(encryptor, &error);
    expect_failure("finish twice", status, &error, PARCRYPT_STATUS_STATE);
    parcrypt_file_encryptor_free(encryptor);

    /* Read back whole, and at random places. */
    CHECK(decrypted_matches(engine, sealed_path, FILE_KEY, 16, 0, plain, PLAIN_BYTES),
          "ABI encrypt -> ABI decrypt round trip differs");
    ParcryptFileDecryptor *decryptor = NULL;
    expect_ok("decryptor open", parcrypt_file_decryptor_open(engine, sealed_path, FILE_KEY, 16,
                                                             NULL, 0, 0, &decryptor, &error),
              &error);
    if (decryptor) {
        uint64_t length = 0, position = 0;
        expect_ok("length", parcrypt_file_decryptor_length(decryptor, &length, &error), &error);
        CHECK(length == PLAIN_BYTES, "length %llu", (unsigned long long)length);
        uint8_t piece[1000];
        size_t got = 0;
        expect_ok("read_at", parcrypt_file_decryptor_read_at(decryptor, 50000, piece,
                                                             sizeof piece, &got, &error),
                  &error);
        CHECK(got == sizeof piece && memcmp(piece, plain + 50000, sizeof piece) == 0,
              "read_at 50000 differs");
        expect_ok("seek end", parcrypt_file_decryptor_seek(decryptor, -10, PARCRYPT_SEEK_END,
                                                           &position, &error),
                  &error);
        CHECK(position == PLAIN_BYTES - 10, "seek end gave %llu", (unsigned long long)position);
        expect_ok("read tail", parcrypt_file_decryptor_read(decryptor, piece, sizeof piece,
                                                            &got, &error),
                  &error);
        CHECK(got == 10 && memcmp(piece, plain + PLAIN_BYTES - 10, 10) == 0, "tail differs");
        expect_ok("read at end", parcrypt_file_decryptor_read(decryptor, piece, sizeof piece,
                                                              &got, &error),
                  &error);
        CHECK(got == 0, "a read at the end gave %zu bytes", got);
        status = parcrypt_file_decryptor_seek(decryptor, 0, 7, &position, &error);
        expect_failure("seek with a bad whence", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        status = parcrypt_file_decryptor_seek(decryptor, -1, PARCRYPT_SEEK_SET, &position,
                                              &error);
        expect_failure("seek before the start", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        parcrypt_file_decryptor_free(decryptor);
    }

    /* Whole files in one call. */
    char *plain_path = scratch_path("plain.bin");
    char *back_path = scratch_path("abi.back");
    CHECK(write_file(plain_path, plain, PLAIN_BYTES), "cannot write %s", plain_path);
    uint64_t bytes = 0;
    char *whole_path = scratch_path("whole.parcrypt");
    expect_ok("encrypt_file", parcrypt_encrypt_file(engine, plain_path, whole_path, FILE_KEY,
                                                    16, NULL, 0, 0, &bytes, &error),
              &error);
    CHECK(bytes == PLAIN_BYTES, "encrypt_file: %llu bytes", (unsigned long long)bytes);
    expect_ok("decrypt_file", parcrypt_decrypt_file(engine, whole_path, back_path, FILE_KEY, 16,
                                                    NULL, 0, 0, &bytes, &error),
              &error);
    static uint8_t back[PLAIN_BYTES + 1];
    CHECK(read_file(back_path, back, sizeof back) == PLAIN_BYTES &&
              memcmp(back, plain, PLAIN_BYTES) == 0,
          "encrypt_file -> decrypt_file differs");
    status = parcrypt_decrypt_file(engine, whole_path, back_path, FILE_KEY, 16, NULL, 0, 0,
                                   NULL, &error);
    expect_failure("destination exists", status, &error, PARCRYPT_STATUS_IO);
    expect_ok("overwrite", parcrypt_decrypt_file(engine, whole_path, back_path, FILE_KEY, 16,
                                                 NULL, 0, PARCRYPT_FILE_OVERWRITE, NULL, &error),
              &error);
    /* PARCRYPT_FILE_REPLACE, the flag's former name, still works. */
    CHECK(PARCRYPT_FILE_REPLACE == PARCRYPT_FILE_OVERWRITE, "REPLACE is not OVERWRITE");
    expect_ok("replace", parcrypt_decrypt_file(engine, whole_path, back_path, FILE_KEY, 16,
                                               NULL, 0, PARCRYPT_FILE_REPLACE, NULL, &error),
              &error);

    /* Interop with the command line, both ways. */
    char command[2048];
    char *cli_back = scratch_path("cli.back");
    snprintf(command, sizeof command, "'%s' decrypt --quiet --key %s '%s' -o '%s'",
             parcrypt_bin, FILE_KEY_HEX, sealed_path, cli_back);
    CHECK(run(command), "the CLI cannot decrypt the ABI's file: %s", command);
    CHECK(read_file(cli_back, back, sizeof back) == PLAIN_BYTES &&
              memcmp(back, plain, PLAIN_BYTES) == 0,
          "ABI encrypt -> CLI decrypt differs");
    char *cli_sealed = scratch_path("cli.parcrypt");
    snprintf(command, sizeof command, "'%s' encrypt --quiet --key %s '%s' -o '%s'",
             parcrypt_bin, FILE_KEY_HEX, plain_path, cli_sealed);
    CHECK(run(command), "the CLI cannot encrypt: %s", command);
    CHECK(decrypted_matches(engine, cli_sealed, FILE_KEY, 16, 0, plain, PLAIN_BYTES),
          "CLI encrypt -> ABI decrypt differs");

    /* A passphrase, as the CLI reads it from a file. */
    const char *passphrase = "correct horse battery staple";
    char *pass_path = scratch_path("passphrase.txt");
    CHECK(write_file(pass_path, (const uint8_t *)passphrase, strlen(passphrase)),
          "cannot write the passphrase file");
    char *pass_sealed = scratch_path("pass.parcrypt");
    expect_ok("encrypt_file passphrase",
              parcrypt_encrypt_file(engine, plain_path, pass_sealed, (const uint8_t *)passphrase,
                                    strlen(passphrase), NULL, 0, PARCRYPT_FILE_PASSPHRASE, NULL,
                                    &error),
              &error);
    char *pass_back = scratch_path("pass.back");
    snprintf(command, sizeof command,
             "'%s' decrypt --quiet --passphrase-file '%s' '%s' -o '%s'", parcrypt_bin,
             pass_path, pass_sealed, pass_back);
    CHECK(run(command), "the CLI cannot decrypt the ABI's passphrase file: %s", command);
    CHECK(read_file(pass_back, back, sizeof back) == PLAIN_BYTES &&
              memcmp(back, plain, PLAIN_BYTES) == 0,
          "ABI passphrase encrypt -> CLI decrypt differs");
    status = parcrypt_file_decryptor_open(engine, pass_sealed, FILE_KEY, 16, NULL, 0, 0,
                                          &decryptor, &error);
    expect_failure("a key for a passphrase file", status, &error, PARCRYPT_STATUS_BAD_KEY);

    /* A file to a public-key recipient (written by the CLI): C gives keys and passphrases
     * only, so both are refused as a bad key, before anything is written. */
    /* Paths of their own: scratch_path's 16 slots hold paths used further down. */
    char identity_path[512], recipient_sealed[512], recipient_out[512];
    snprintf(identity_path, sizeof identity_path, "%s/identity.txt", scratch);
    snprintf(recipient_sealed, sizeof recipient_sealed, "%s/recipient.parcrypt", scratch);
    snprintf(recipient_out, sizeof recipient_out, "%s/recipient.out", scratch);
    snprintf(command, sizeof command,
             "'%s' encrypt --quiet -r \"$('%s' keygen -o '%s')\" '%s' -o '%s'", parcrypt_bin,
             parcrypt_bin, identity_path, plain_path, recipient_sealed);
    CHECK(run(command), "the CLI cannot encrypt to a recipient: %s", command);
    status = parcrypt_decrypt_file(engine, recipient_sealed, recipient_out, FILE_KEY, 16,
                                   NULL, 0, 0, NULL, &error);
    expect_failure("a key for a recipient file", status, &error, PARCRYPT_STATUS_BAD_KEY);
    CHECK(!exists(recipient_out), "a key for a recipient file left a file");
    status = parcrypt_file_decryptor_open(engine, recipient_sealed, (const uint8_t *)passphrase,
                                          strlen(passphrase), NULL, 0,
                                          PARCRYPT_FILE_PASSPHRASE, &decryptor, &error);
    expect_failure("a passphrase for a recipient file", status, &error,
                   PARCRYPT_STATUS_BAD_KEY);

    /* Freed before finishing: no file. */
    char *abandoned = scratch_path("abandoned.parcrypt");
    encryptor = NULL;
    expect_ok("encryptor new", parcrypt_file_encryptor_new(engine, abandoned, FILE_KEY, 16,
                                                           NULL, 0, 0, &encryptor, &error),
              &error);
    expect_ok("encryptor write", parcrypt_file_encryptor_write(encryptor, plain, 100, &error),
              &error);
    parcrypt_file_encryptor_free(encryptor);
    CHECK(!exists(abandoned), "an unfinished encryptor left a file");

    /* The wrong key: refused before any chunk, and no destination. */
    uint8_t wrong[16];
    memcpy(wrong, FILE_KEY, 16);
    wrong[0] ^= 1;
    char *never = scratch_path("never.out");
    status = parcrypt_decrypt_file(engine, sealed_path, never, wrong, 16, NULL, 0, 0, NULL,
                                   &error);
    expect_failure("decrypt_file wrong key", status, &error, PARCRYPT_STATUS_WRONG_KEY);
    CHECK(!exists(never), "a wrong key left a file");
    status = parcrypt_file_decryptor_open(engine, sealed_path, wrong, 16, NULL, 0, 0,
                                          &decryptor, &error);
    expect_failure("decryptor wrong key", status, &error, PARCRYPT_STATUS_WRONG_KEY);
    status = parcrypt_file_decryptor_open(engine, sealed_path, FILE_KEY, 16,
                                          (const uint8_t *)"other", 5, 0, &decryptor, &error);
    expect_failure("decryptor wrong context", status, &error, PARCRYPT_STATUS_WRONG_KEY);

    /* A truncated file: the length and reads past the authenticated part fail. */
    static uint8_t sealed_bytes[PLAIN_BYTES + 4096];
    size_t sealed_length = read_file(sealed_path, sealed_bytes, sizeof sealed_bytes);
    char *cut_path = scratch_path("cut.parcrypt");
    CHECK(write_file(cut_path, sealed_bytes, sealed_length - 100), "cannot write the cut file");
    status = parcrypt_decrypt_file(engine, cut_path, never, FILE_KEY, 16, NULL, 0, 0, NULL,
                                   &error);
    expect_failure("decrypt_file truncated", status, &error,
                   PARCRYPT_STATUS_AUTHENTICATION_FAILED);
    CHECK(!exists(never), "a truncated file left a destination");
    decryptor = NULL;
    expect_ok("open truncated", parcrypt_file_decryptor_open(engine, cut_path, FILE_KEY, 16,
                                                             NULL, 0, 0, &decryptor, &error),
              &error);
    if (decryptor) {
        uint64_t length = 0;
        status = parcrypt_file_decryptor_length(decryptor, &length, &error);
        expect_failure("length of a truncated file", status, &error,
                       PARCRYPT_STATUS_AUTHENTICATION_FAILED);
        uint8_t piece[4096];
        size_t got = 0;
        /* The authenticated chunk before the cut comes out; the next read fails. */
        expect_ok("read before the cut",
                  parcrypt_file_decryptor_read_at(decryptor, PLAIN_BYTES - 4000, piece,
                                                  sizeof piece, &got, &error),
                  &error);
        CHECK(got == 98304 - (PLAIN_BYTES - 4000) &&
                  memcmp(piece, plain + PLAIN_BYTES - 4000, got) == 0,
              "the read before the cut gave %zu bytes", got);
        status = parcrypt_file_decryptor_read(decryptor, piece, sizeof piece, &got, &error);
        expect_failure("read the truncated end", status, &error,
                       PARCRYPT_STATUS_AUTHENTICATION_FAILED);
        CHECK(got == 0, "a failed read reported %zu bytes", got);
        parcrypt_file_decryptor_free(decryptor);
    }
    char *stub_path = scratch_path("stub.parcrypt");
    CHECK(write_file(stub_path, sealed_bytes, 10), "cannot write the stub");
    status = parcrypt_file_decryptor_open(engine, stub_path, FILE_KEY, 16, NULL, 0, 0,
                                          &decryptor, &error);
    expect_failure("a header cut short", status, &error, PARCRYPT_STATUS_BAD_FORMAT);
    status = parcrypt_file_decryptor_open(engine, plain_path, FILE_KEY, 16, NULL, 0, 0,
                                          &decryptor, &error);
    expect_failure("not a parcrypt file", status, &error, PARCRYPT_STATUS_BAD_FORMAT);
    status = parcrypt_file_decryptor_open(engine, scratch_path("missing.parcrypt"), FILE_KEY,
                                          16, NULL, 0, 0, &decryptor, &error);
    expect_failure("a missing input", status, &error, PARCRYPT_STATUS_IO);

    /* Writing into a folder that does not exist, or over a file without OVERWRITE. */
    char *nowhere = scratch_path("no/such/folder/out.parcrypt");
    encryptor = NULL;
    status = parcrypt_file_encryptor_new(engine, nowhere, FILE_KEY, 16, NULL, 0, 0, &encryptor,
                                         &error);
    expect_failure("encryptor into a missing folder", status, &error, PARCRYPT_STATUS_IO);
    CHECK(encryptor == NULL, "a failed new set the handle");
    status = parcrypt_encrypt_file(engine, plain_path, nowhere, FILE_KEY, 16, NULL, 0, 0, NULL,
                                   &error);
    expect_failure("encrypt_file into a missing folder", status, &error, PARCRYPT_STATUS_IO);
    status = parcrypt_file_encryptor_new(engine, sealed_path, FILE_KEY, 16, NULL, 0, 0,
                                         &encryptor, &error);
    expect_failure("encryptor over an existing file", status, &error, PARCRYPT_STATUS_IO);

    /* Bad secrets and flags. */
    status = parcrypt_file_encryptor_new(engine, scratch_path("k.parcrypt"), FILE_KEY, 20, NULL,
                                         0, 0, &encryptor, &error);
    expect_failure("a 20-byte file key", status, &error, PARCRYPT_STATUS_BAD_KEY);
    status = parcrypt_file_encryptor_new(engine, scratch_path("k.parcrypt"), NULL, 16, NULL, 0,
                                         0, &encryptor, &error);
    expect_failure("a NULL file key", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    status = parcrypt_file_encryptor_new(engine, scratch_path("k.parcrypt"), FILE_KEY, 16, NULL,
                                         0, 0x100, &encryptor, &error);
    expect_failure("unknown file flags", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
    status = parcrypt_file_encryptor_new(engine, NULL, FILE_KEY, 16, NULL, 0, 0, &encryptor,
                                         &error);
    expect_failure("a NULL destination", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    status = parcrypt_file_encryptor_write(NULL, plain, 1, &error);
    expect_failure("write on NULL", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    size_t got = 0;
    status = parcrypt_file_decryptor_read(NULL, back, 1, &got, &error);
    expect_failure("read on NULL", status, &error, PARCRYPT_STATUS_NULL_POINTER);
}

/* A failed call as expect_failure checks it, whose message must not quote `secret` (the
 * start of a key's text). */
static void expect_failure_without(const char *what, ParcryptStatus got, ParcryptError **slot,
                                   ParcryptStatus want, const char *secret) {
    const char *message = *slot ? parcrypt_error_message(*slot) : "";
    CHECK(strstr(message, secret) == NULL, "%s: the message quotes the key: %s", what, message);
    expect_failure(what, got, slot, want);
}

/* An identity from parcrypt_keygen without a path: its text and its recipient, freed by the
 * caller with parcrypt_string_free. */
static int keygen_text(uint32_t flags, char **identity, char **recipient) {
    ParcryptError *error = NULL;
    *identity = NULL;
    *recipient = NULL;
    expect_ok("keygen", parcrypt_keygen(flags, NULL, identity, recipient, &error), &error);
    return *identity != NULL && *recipient != NULL;
}

/* `path` decrypted whole with `secret` (text) and `flags` (for an age file without
 * PARCRYPT_FILE_AGE: the header says age) equals `want`. */
static int secret_opens(ParcryptEngine *engine, const char *path, const char *secret,
                        uint32_t flags, const uint8_t *want, size_t want_length,
                        uint8_t *buffer) {
    char *out = scratch_path("decrypted.out");
    uint64_t bytes = 0;
    ParcryptError *error = NULL;
    ParcryptStatus status =
        parcrypt_decrypt_file(engine, path, out, (const uint8_t *)secret, strlen(secret), NULL, 0,
                              flags | PARCRYPT_FILE_OVERWRITE, &bytes, &error);
    expect_ok("decrypt_file with a secret's text", status, &error);
    return status == PARCRYPT_STATUS_OK && bytes == want_length &&
           read_file(out, buffer, want_length + 1) == want_length &&
           memcmp(buffer, want, want_length) == 0;
}

/* The whole plaintext of `path` decrypted with the identity file text `identity`, compared
 * with `want`. */
static int identity_opens(ParcryptEngine *engine, const char *path, const char *identity,
                          const uint8_t *want, size_t want_length, uint8_t *buffer) {
    return secret_opens(engine, path, identity, PARCRYPT_FILE_IDENTITIES, want, want_length,
                        buffer);
}

/* Files to public-key recipients: X25519 and post-quantum identities from parcrypt_keygen,
 * two recipients in one recipients file (each identity opens it alone) at sizes around the
 * block and the chunk, the streaming encryptor and the seekable decryptor, the command line
 * both ways, and every misuse. */
static void recipients(ParcryptEngine *engine) {
    enum { LARGEST = (1 << 20) + 3 };
    uint8_t *plain = malloc(LARGEST), *back = malloc(LARGEST + 1);
    if (!plain || !back) {
        CHECK(0, "out of memory");
        free(plain);
        free(back);
        return;
    }
    fill(plain, LARGEST, 29, 7);
    ParcryptError *error = NULL;
    ParcryptStatus status;
    char plain_path[512], sealed_path[512];
    snprintf(plain_path, sizeof plain_path, "%s/recipients.plain", scratch);
    snprintf(sealed_path, sizeof sealed_path, "%s/recipients.parcrypt", scratch);
    const size_t sizes[] = {0, 1, 15, 16, 17, 65535, 65536, 65537, LARGEST};
    const uint32_t kinds[] = {0, PARCRYPT_KEYGEN_POST_QUANTUM};
    for (int k = 0; k < 2; k++) {
        char *alice, *alice_public, *bob, *bob_public;
        if (!keygen_text(kinds[k], &alice, &alice_public)) return;
        if (!keygen_text(kinds[k], &bob, &bob_public)) return;
        const char *prefix = kinds[k] ? "age1pq1" : "age1";
        CHECK(strncmp(alice_public, prefix, strlen(prefix)) == 0 &&
                  strncmp(bob_public, prefix, strlen(prefix)) == 0,
              "keygen %u: recipient %s", kinds[k], alice_public);
        CHECK(strstr(alice, alice_public) != NULL, "the identity file names its public key");
        char recipients_text[8192];
        snprintf(recipients_text, sizeof recipients_text, "# two of us\n%s\n\n%s\n", alice_public,
                 bob_public);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t size = sizes[i];
            CHECK(write_file(plain_path, plain, size), "cannot write %s", plain_path);
            uint64_t bytes = 0;
            status = parcrypt_encrypt_file(engine, plain_path, sealed_path,
                                           (const uint8_t *)recipients_text,
                                           strlen(recipients_text), NULL, 0,
                                           PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_OVERWRITE,
                                           &bytes, &error);
            expect_ok("encrypt_file to recipients", status, &error);
            CHECK(bytes == size, "encrypt_file to recipients: %llu bytes of %zu",
                  (unsigned long long)bytes, size);
            CHECK(identity_opens(engine, sealed_path, alice, plain, size, back),
                  "keygen %u, %zu bytes: alice's identity does not open the file", kinds[k], size);
            CHECK(identity_opens(engine, sealed_path, bob, plain, size, back),
                  "keygen %u, %zu bytes: bob's identity does not open the file", kinds[k], size);
        }

        /* Streaming to one recipient; the seekable decryptor with the identity. */
        char *streamed = scratch_path("recipients-stream.parcrypt");
        ParcryptFileEncryptor *encryptor = NULL;
        status = parcrypt_file_encryptor_new(engine, streamed, (const uint8_t *)bob_public,
                                             strlen(bob_public), NULL, 0,
                                             PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_OVERWRITE,
                                             &encryptor, &error);
        expect_ok("encryptor to a recipient", status, &error);
        if (encryptor) {
            for (size_t done = 0; done < PLAIN_BYTES;) {
                size_t piece = PLAIN_BYTES - done < 7919 ? PLAIN_BYTES - done : 7919;
                expect_ok("encryptor write",
                          parcrypt_file_encryptor_write(encryptor, plain + done, piece, &error),
                          &error);
                done += piece;
            }
            expect_ok("encryptor finish", parcrypt_file_encryptor_finish(encryptor, &error),
                      &error);
            parcrypt_file_encryptor_free(encryptor);
            CHECK(decrypted_matches(engine, streamed, (const uint8_t *)bob, strlen(bob),
                                    PARCRYPT_FILE_IDENTITIES, plain, PLAIN_BYTES),
                  "streamed to a recipient -> decryptor with the identity differs");
            ParcryptFileDecryptor *decryptor = NULL;
            status = parcrypt_file_decryptor_open(engine, streamed, (const uint8_t *)alice,
                                                  strlen(alice), NULL, 0,
                                                  PARCRYPT_FILE_IDENTITIES, &decryptor, &error);
            expect_failure_without("decryptor with another's identity", status, &error,
                                   PARCRYPT_STATUS_WRONG_KEY, strrchr(alice, '\n') - 40);
            CHECK(decryptor == NULL, "a failed open set the handle");
        }
        parcrypt_string_free(alice);
        parcrypt_string_free(alice_public);
        parcrypt_string_free(bob);
        parcrypt_string_free(bob_public);
    }

    /* The command line both ways: an identity file written by parcrypt_keygen (0600, never
     * replaced) opens with `parcrypt decrypt -i`, and one written by `parcrypt keygen` opens
     * here from its text. */
    char key_path[512], cli_key_path[512], command[4096];
    snprintf(key_path, sizeof key_path, "%s/abi-key.txt", scratch);
    snprintf(cli_key_path, sizeof cli_key_path, "%s/cli-key.txt", scratch);
    char *recipient = NULL, *identity = (char *)1;
    status = parcrypt_keygen(PARCRYPT_KEYGEN_POST_QUANTUM, key_path, &identity, &recipient,
                             &error);
    expect_ok("keygen to a file", status, &error);
    CHECK(identity == NULL, "keygen to a file returned the identity too");
    struct stat st;
    CHECK(stat(key_path, &st) == 0 && (st.st_mode & 0777) == 0600, "the key file's mode is %o",
          (unsigned)(st.st_mode & 0777));
    if (recipient) {
        CHECK(strncmp(recipient, "age1pq1", 7) == 0, "keygen --pq recipient %.12s", recipient);
        CHECK(write_file(plain_path, plain, PLAIN_BYTES), "cannot write %s", plain_path);
        status = parcrypt_encrypt_file(engine, plain_path, sealed_path, (const uint8_t *)recipient,
                                       strlen(recipient), NULL, 0,
                                       PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_OVERWRITE, NULL,
                                       &error);
        expect_ok("encrypt_file to the keygen file's recipient", status, &error);
        char *cli_back = scratch_path("recipients-cli.back");
        snprintf(command, sizeof command, "'%s' decrypt --quiet -i '%s' '%s' -o '%s'",
                 parcrypt_bin, key_path, sealed_path, cli_back);
        CHECK(run(command), "the CLI cannot decrypt the ABI's recipient file: %s", command);
        CHECK(read_file(cli_back, back, PLAIN_BYTES + 1) == PLAIN_BYTES &&
                  memcmp(back, plain, PLAIN_BYTES) == 0,
              "ABI recipients encrypt -> CLI decrypt -i differs");
    }
    parcrypt_string_free(recipient);
    recipient = NULL;
    static uint8_t before[4096], after[4096];
    size_t before_length = read_file(key_path, before, sizeof before);
    status = parcrypt_keygen(0, key_path, NULL, &recipient, &error);
    expect_failure("keygen over an existing file", status, &error, PARCRYPT_STATUS_IO);
    CHECK(recipient == NULL, "a failed keygen set the recipient");
    CHECK(read_file(key_path, after, sizeof after) == before_length &&
              memcmp(before, after, before_length) == 0,
          "a refused keygen changed the key file");
    status = parcrypt_keygen(0, NULL, NULL, &recipient, &error);
    expect_failure("keygen without a path or an identity out", status, &error,
                   PARCRYPT_STATUS_NULL_POINTER);
    status = parcrypt_keygen(4, NULL, &identity, &recipient, &error);
    expect_failure("keygen with an unknown flag", status, &error,
                   PARCRYPT_STATUS_INVALID_ARGUMENT);

    char *cli_sealed = scratch_path("recipients-cli.parcrypt");
    snprintf(command, sizeof command,
             "'%s' encrypt --quiet -r \"$('%s' keygen -o '%s')\" '%s' -o '%s'", parcrypt_bin,
             parcrypt_bin, cli_key_path, plain_path, cli_sealed);
    CHECK(run(command), "the CLI cannot encrypt to a recipient: %s", command);
    static char cli_identity[4096];
    size_t identity_length = read_file(cli_key_path, (uint8_t *)cli_identity,
                                       sizeof cli_identity - 1);
    CHECK(identity_length != (size_t)-1 && identity_length > 0, "cannot read %s", cli_key_path);
    cli_identity[identity_length == (size_t)-1 ? 0 : identity_length] = '\0';
    CHECK(identity_opens(engine, cli_sealed, cli_identity, plain, PLAIN_BYTES, back),
          "CLI recipients encrypt -> ABI decrypt with identities differs");
    /* The same file's text read by the library: the same identities. */
    char *read_back = NULL;
    status = parcrypt_read_identity_file(cli_key_path, &read_back, &error);
    expect_ok("read_identity_file", status, &error);
    if (read_back) {
        CHECK(strcmp(read_back, cli_identity) == 0, "read_identity_file gave other text");
        CHECK(identity_opens(engine, cli_sealed, read_back, plain, PLAIN_BYTES, back),
              "read_identity_file's text does not open the CLI's file");
        parcrypt_string_free(read_back);
    }
    read_back = (char *)1;
    status = parcrypt_read_identity_file(plain_path, &read_back, &error);
    expect_failure("read_identity_file of a file without keys", status, &error,
                   PARCRYPT_STATUS_BAD_KEY);
    CHECK(read_back == NULL, "a failed read_identity_file set its out-parameter");

    /* Misuse: nothing is written, one line, no key quoted. */
    char *never = scratch_path("recipients-never.out");
    const char *cli_secret = strstr(cli_identity, "AGE-SECRET-KEY-");
    char secret_start[32] = "AGE-SECRET-KEY-1";
    if (cli_secret) snprintf(secret_start, sizeof secret_start, "%.24s", cli_secret);
    char *other, *other_public;
    if (keygen_text(0, &other, &other_public)) {
        status = parcrypt_decrypt_file(engine, cli_sealed, never, (const uint8_t *)other,
                                       strlen(other), NULL, 0, PARCRYPT_FILE_IDENTITIES, NULL,
                                       &error);
        expect_failure("decrypt_file with a wrong identity", status, &error,
                       PARCRYPT_STATUS_WRONG_KEY);
        CHECK(!exists(never), "a wrong identity left a file");
        status = parcrypt_encrypt_file(engine, plain_path, never, (const uint8_t *)other,
                                       strlen(other), NULL, 0, PARCRYPT_FILE_IDENTITIES, NULL,
                                       &error);
        expect_failure_without("identities to encrypt", status, &error,
                               PARCRYPT_STATUS_INVALID_ARGUMENT, secret_start);
        status = parcrypt_encrypt_file(engine, plain_path, never, (const uint8_t *)cli_identity,
                                       identity_length, NULL, 0, PARCRYPT_FILE_RECIPIENTS, NULL,
                                       &error);
        expect_failure_without("an identity file given as recipients", status, &error,
                               PARCRYPT_STATUS_BAD_KEY, secret_start);
        status = parcrypt_decrypt_file(engine, cli_sealed, never,
                                       (const uint8_t *)other_public, strlen(other_public), NULL,
                                       0, PARCRYPT_FILE_RECIPIENTS, NULL, &error);
        expect_failure("recipients to decrypt", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        ParcryptFileDecryptor *decryptor = NULL;
        status = parcrypt_file_decryptor_open(engine, cli_sealed, (const uint8_t *)other_public,
                                              strlen(other_public), NULL, 0,
                                              PARCRYPT_FILE_RECIPIENTS, &decryptor, &error);
        expect_failure("recipients to open a decryptor", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        ParcryptFileEncryptor *encryptor = NULL;
        status = parcrypt_file_encryptor_new(engine, never, (const uint8_t *)other,
                                             strlen(other), NULL, 0, PARCRYPT_FILE_IDENTITIES,
                                             &encryptor, &error);
        expect_failure("identities to start an encryptor", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        status = parcrypt_encrypt_file(engine, plain_path, never, (const uint8_t *)other_public,
                                       strlen(other_public), NULL, 0,
                                       PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_PASSPHRASE, NULL,
                                       &error);
        expect_failure("recipients and a passphrase", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        status = parcrypt_encrypt_file(engine, plain_path, never, (const uint8_t *)other_public,
                                       strlen(other_public), NULL, 0,
                                       PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_COBBLESTONE, NULL,
                                       &error);
        expect_failure("recipients in a Cobblestone message", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        char malformed[512];
        snprintf(malformed, sizeof malformed, "%s", other_public);
        malformed[strlen(malformed) - 1] = malformed[strlen(malformed) - 1] == 'q' ? 'p' : 'q';
        char quoted[24];
        snprintf(quoted, sizeof quoted, "%.20s", malformed);
        status = parcrypt_encrypt_file(engine, plain_path, never, (const uint8_t *)malformed,
                                       strlen(malformed), NULL, 0, PARCRYPT_FILE_RECIPIENTS,
                                       NULL, &error);
        expect_failure_without("a malformed recipient", status, &error, PARCRYPT_STATUS_BAD_KEY,
                               quoted);
        status = parcrypt_decrypt_file(engine, cli_sealed, never, FILE_KEY, 16, NULL, 0, 0, NULL,
                                       &error);
        expect_failure("a key for a recipient file", status, &error, PARCRYPT_STATUS_BAD_KEY);
        CHECK(!exists(never), "a refused call left a file");
        parcrypt_string_free(other);
        parcrypt_string_free(other_public);
    }
    free(plain);
    free(back);
}

/* Reads a whole file into a NUL-terminated static buffer (text such as an identity file). */
static const char *read_text(const char *path) {
    static char text[8192];
    size_t length = read_file(path, (uint8_t *)text, sizeof text - 1);
    text[length == (size_t)-1 ? 0 : length] = '\0';
    return text;
}

/* Whether the file at `path` starts with `start`. */
static int starts_with(const char *path, const char *start) {
    char head[64] = {0};
    size_t length = read_file(path, (uint8_t *)head, sizeof head - 1);
    return length != (size_t)-1 && strncmp(head, start, strlen(start)) == 0;
}

/* age v1 files (PARCRYPT_FILE_AGE): X25519 and post-quantum recipients, binary and armored,
 * at sizes around age's 64 KiB chunk; an scrypt passphrase; the command line both ways; and
 * the misuse of the flags, a wrong identity and a damaged file leaving nothing. */
static void age_files(ParcryptEngine *engine) {
    enum { LARGEST = (1 << 20) + 3 };
    uint8_t *plain = malloc(LARGEST), *back = malloc(LARGEST + 1);
    if (!plain || !back) {
        CHECK(0, "out of memory");
        free(plain);
        free(back);
        return;
    }
    fill(plain, LARGEST, 37, 3);
    ParcryptError *error = NULL;
    ParcryptStatus status;
    char plain_path[512], sealed_path[512], command[4096];
    snprintf(plain_path, sizeof plain_path, "%s/age.plain", scratch);
    snprintf(sealed_path, sizeof sealed_path, "%s/age.sealed", scratch);
    const char *binary_start = "age-encryption.org/v1\n";
    const char *armor_start = "-----BEGIN AGE ENCRYPTED FILE-----";
    const size_t sizes[] = {0, 1, 65535, 65536, 65537, LARGEST};
    const uint32_t kinds[] = {0, PARCRYPT_KEYGEN_POST_QUANTUM};
    const uint32_t armors[] = {0, PARCRYPT_FILE_ARMOR};
    for (int k = 0; k < 2; k++) {
        char *identity, *recipient;
        if (!keygen_text(kinds[k], &identity, &recipient)) continue;
        for (int a = 0; a < 2; a++) {
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                size_t size = sizes[i];
                CHECK(write_file(plain_path, plain, size), "cannot write %s", plain_path);
                uint64_t bytes = 0;
                status = parcrypt_encrypt_file(
                    engine, plain_path, sealed_path, (const uint8_t *)recipient,
                    strlen(recipient), NULL, 0,
                    PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_OVERWRITE |
                        armors[a],
                    &bytes, &error);
                expect_ok("encrypt_file to an age file", status, &error);
                CHECK(bytes == size, "age encrypt: %llu bytes of %zu", (unsigned long long)bytes,
                      size);
                CHECK(starts_with(sealed_path, armors[a] ? armor_start : binary_start),
                      "keygen %u, armor %u, %zu bytes: not an age file's start", kinds[k],
                      armors[a], size);
                CHECK(secret_opens(engine, sealed_path, identity, PARCRYPT_FILE_IDENTITIES, plain,
                                size, back),
                      "keygen %u, armor %u, %zu bytes: the identity does not open the age file",
                      kinds[k], armors[a], size);
            }
        }
        parcrypt_string_free(identity);
        parcrypt_string_free(recipient);
    }

    /* A passphrase (scrypt), binary and armored. */
    const char *passphrase = "correct horse battery staple";
    for (int a = 0; a < 2; a++) {
        size_t size = a ? 1 : 65537;
        CHECK(write_file(plain_path, plain, size), "cannot write %s", plain_path);
        status = parcrypt_encrypt_file(
            engine, plain_path, sealed_path, (const uint8_t *)passphrase, strlen(passphrase),
            NULL, 0,
            PARCRYPT_FILE_AGE | PARCRYPT_FILE_PASSPHRASE | PARCRYPT_FILE_OVERWRITE | armors[a],
            NULL, &error);
        expect_ok("encrypt_file to an age passphrase", status, &error);
        CHECK(secret_opens(engine, sealed_path, passphrase, PARCRYPT_FILE_PASSPHRASE, plain, size,
                        back),
              "armor %u: the passphrase does not open the age file", armors[a]);
        char *never = scratch_path("age-never.out");
        status = parcrypt_decrypt_file(engine, sealed_path, never,
                                       (const uint8_t *)"correct horse battery", 21, NULL, 0,
                                       PARCRYPT_FILE_PASSPHRASE, NULL, &error);
        expect_failure_without("a wrong age passphrase", status, &error,
                               PARCRYPT_STATUS_WRONG_KEY, "horse");
        CHECK(!exists(never), "a wrong passphrase left a file");
    }

    /* The command line both ways. */
    char key_path[512], cli_key_path[512], pass_path[512];
    snprintf(key_path, sizeof key_path, "%s/age-abi-key.txt", scratch);
    snprintf(cli_key_path, sizeof cli_key_path, "%s/age-cli-key.txt", scratch);
    snprintf(pass_path, sizeof pass_path, "%s/age-passphrase.txt", scratch);
    CHECK(write_file(pass_path, (const uint8_t *)passphrase, strlen(passphrase)),
          "cannot write %s", pass_path);
    CHECK(write_file(plain_path, plain, LARGEST), "cannot write %s", plain_path);
    char *cli_out = scratch_path("age-cli.out");
    for (int a = 0; a < 2; a++) {
        /* CLI -> C: to a recipient from `parcrypt keygen`, and to a passphrase. */
        char *cli_sealed = scratch_path("age-cli.age");
        snprintf(command, sizeof command,
                 "rm -f '%s' && '%s' encrypt --quiet --format age %s -r \"$('%s' keygen -o "
                 "'%s')\" '%s' -o '%s' --overwrite",
                 cli_key_path, parcrypt_bin, armors[a] ? "-a" : "", parcrypt_bin, cli_key_path,
                 plain_path, cli_sealed);
        CHECK(run(command), "the CLI cannot write an age file: %s", command);
        CHECK(secret_opens(engine, cli_sealed, read_text(cli_key_path), PARCRYPT_FILE_IDENTITIES,
                        plain, LARGEST, back),
              "armor %u: CLI age encrypt -> C decrypt differs", armors[a]);
        snprintf(command, sizeof command,
                 "'%s' encrypt --quiet --format age %s -p --passphrase-file '%s' '%s' -o '%s' "
                 "--overwrite",
                 parcrypt_bin, armors[a] ? "-a" : "", pass_path, plain_path, cli_sealed);
        CHECK(run(command), "the CLI cannot write an age passphrase file: %s", command);
        CHECK(secret_opens(engine, cli_sealed, passphrase, PARCRYPT_FILE_PASSPHRASE, plain, LARGEST,
                        back),
              "armor %u: CLI age -p -> C decrypt differs", armors[a]);

        /* C -> CLI: to the recipient of an identity file from parcrypt_keygen. */
        char *recipient = NULL;
        remove(key_path);
        status = parcrypt_keygen(a ? PARCRYPT_KEYGEN_POST_QUANTUM : 0, key_path, NULL,
                                 &recipient, &error);
        expect_ok("keygen to a file", status, &error);
        if (recipient) {
            status = parcrypt_encrypt_file(
                engine, plain_path, sealed_path, (const uint8_t *)recipient, strlen(recipient),
                NULL, 0,
                PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_OVERWRITE | armors[a],
                NULL, &error);
            expect_ok("encrypt_file to an age file for the CLI", status, &error);
            snprintf(command, sizeof command,
                     "'%s' decrypt --quiet -i '%s' '%s' -o '%s' --overwrite", parcrypt_bin,
                     key_path, sealed_path, cli_out);
            CHECK(run(command), "the CLI cannot decrypt the ABI's age file: %s", command);
            CHECK(read_file(cli_out, back, LARGEST + 1) == LARGEST &&
                      memcmp(back, plain, LARGEST) == 0,
                  "armor %u: C age encrypt -> CLI decrypt -i differs", armors[a]);
        }
        parcrypt_string_free(recipient);
        status = parcrypt_encrypt_file(
            engine, plain_path, sealed_path, (const uint8_t *)passphrase, strlen(passphrase),
            NULL, 0,
            PARCRYPT_FILE_AGE | PARCRYPT_FILE_PASSPHRASE | PARCRYPT_FILE_OVERWRITE | armors[a],
            NULL, &error);
        expect_ok("encrypt_file to an age passphrase for the CLI", status, &error);
        snprintf(command, sizeof command,
                 "'%s' decrypt --quiet --passphrase-file '%s' '%s' -o '%s' --overwrite",
                 parcrypt_bin, pass_path, sealed_path, cli_out);
        CHECK(run(command), "the CLI cannot decrypt the ABI's age passphrase file: %s", command);
        CHECK(read_file(cli_out, back, LARGEST + 1) == LARGEST &&
                  memcmp(back, plain, LARGEST) == 0,
              "armor %u: C age -p encrypt -> CLI decrypt differs", armors[a]);
    }

    /* Misuse: INVALID_ARGUMENT and one line, nothing written. */
    char *never = scratch_path("age-never.out");
    char *identity, *recipient, *other, *other_public;
    if (keygen_text(0, &identity, &recipient) && keygen_text(0, &other, &other_public)) {
        const uint8_t *r = (const uint8_t *)recipient;
        size_t r_length = strlen(recipient);
        status = parcrypt_encrypt_file(engine, plain_path, never, FILE_KEY, 16, NULL, 0,
                                       PARCRYPT_FILE_AGE, NULL, &error);
        expect_failure("age with a raw key", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
        status = parcrypt_encrypt_file(engine, plain_path, never, r, r_length, NULL, 0,
                                       PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS |
                                           PARCRYPT_FILE_COBBLESTONE,
                                       NULL, &error);
        expect_failure("age with cobblestone", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
        status = parcrypt_encrypt_file(engine, plain_path, never, r, r_length, NULL, 0,
                                       PARCRYPT_FILE_RECIPIENTS | PARCRYPT_FILE_ARMOR, NULL,
                                       &error);
        expect_failure("armor without age", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
        status = parcrypt_encrypt_file(engine, plain_path, never, r, r_length,
                                       (const uint8_t *)"ctx", 3,
                                       PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS, NULL, &error);
        expect_failure("age with a context", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
        ParcryptFileEncryptor *encryptor = NULL;
        status = parcrypt_file_encryptor_new(engine, never, r, r_length, NULL, 0,
                                             PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS,
                                             &encryptor, &error);
        expect_failure("age in the streaming encryptor", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        CHECK(encryptor == NULL, "a refused encryptor was made");
        CHECK(!exists(never), "a refused age call left a file");

        status = parcrypt_encrypt_file(engine, plain_path, sealed_path, r, r_length, NULL, 0,
                                       PARCRYPT_FILE_AGE | PARCRYPT_FILE_RECIPIENTS |
                                           PARCRYPT_FILE_OVERWRITE,
                                       NULL, &error);
        expect_ok("encrypt_file to an age file", status, &error);
        ParcryptFileDecryptor *decryptor = NULL;
        status = parcrypt_file_decryptor_open(engine, sealed_path, (const uint8_t *)identity,
                                              strlen(identity), NULL, 0,
                                              PARCRYPT_FILE_IDENTITIES, &decryptor, &error);
        expect_failure("an age file in the seekable decryptor", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        CHECK(decryptor == NULL, "a refused decryptor was made");
        status = parcrypt_decrypt_file(engine, sealed_path, never, (const uint8_t *)identity,
                                       strlen(identity), (const uint8_t *)"ctx", 3,
                                       PARCRYPT_FILE_IDENTITIES, NULL, &error);
        expect_failure("an age file with a context", status, &error,
                       PARCRYPT_STATUS_INVALID_ARGUMENT);
        status = parcrypt_decrypt_file(engine, sealed_path, never, FILE_KEY, 16, NULL, 0, 0, NULL,
                                       &error);
        expect_failure("an age file with a key", status, &error, PARCRYPT_STATUS_BAD_KEY);
        status = parcrypt_decrypt_file(engine, sealed_path, never, (const uint8_t *)other,
                                       strlen(other), NULL, 0, PARCRYPT_FILE_IDENTITIES, NULL,
                                       &error);
        expect_failure_without("an age file with a wrong identity", status, &error,
                               PARCRYPT_STATUS_WRONG_KEY, strrchr(other, '\n') - 40);
        CHECK(!exists(never), "a wrong identity left a file");

        /* A damaged payload byte (in a later chunk) and a cut file: nothing written. */
        static uint8_t sealed[LARGEST + 4096];
        size_t length = read_file(sealed_path, sealed, sizeof sealed);
        CHECK(length > 200000 && length != (size_t)-1, "cannot read %s", sealed_path);
        if (length > 200000 && length != (size_t)-1) {
            char *damaged = scratch_path("age-damaged.age");
            sealed[length - 100000] ^= 0x04;
            CHECK(write_file(damaged, sealed, length), "cannot write %s", damaged);
            status = parcrypt_decrypt_file(engine, damaged, never, (const uint8_t *)identity,
                                           strlen(identity), NULL, 0, PARCRYPT_FILE_IDENTITIES,
                                           NULL, &error);
            expect_failure("a damaged age file", status, &error,
                           PARCRYPT_STATUS_AUTHENTICATION_FAILED);
            CHECK(!exists(never), "a damaged age file left a file");
            sealed[length - 100000] ^= 0x04;
            CHECK(write_file(damaged, sealed, length - 17), "cannot write %s", damaged);
            status = parcrypt_decrypt_file(engine, damaged, never, (const uint8_t *)identity,
                                           strlen(identity), NULL, 0, PARCRYPT_FILE_IDENTITIES,
                                           NULL, &error);
            expect_failure("a cut age file", status, &error,
                           PARCRYPT_STATUS_AUTHENTICATION_FAILED);
            CHECK(!exists(never), "a cut age file left a file");
        }
        parcrypt_string_free(identity);
        parcrypt_string_free(recipient);
        parcrypt_string_free(other);
        parcrypt_string_free(other_public);
    }
    free(plain);
    free(back);
}

static void cipher_errors(ParcryptEngine *engine) {
    uint8_t key[32] = {0}, iv[16] = {0}, data[64] = {0}, out[128];
    size_t out_length = 0;
    ParcryptCipher *cipher = NULL;
    ParcryptError *error = NULL;
    ParcryptStatus status;

    /* Refused arguments to parcrypt_cipher_new: each fails with its status. */
    const struct {
        const char *what;
        ParcryptEngine *engine;
        const char *name;
        const uint8_t *key;
        size_t key_length, iv_length;
        uint32_t flags;
        ParcryptCipher **out;
        ParcryptStatus expected;
    } refused[] = {
        {"NULL engine", NULL, "aes-128-ctr", key, 16, 16, 0, &cipher, PARCRYPT_STATUS_NULL_POINTER},
        {"NULL name", engine, NULL, key, 16, 16, 0, &cipher, PARCRYPT_STATUS_NULL_POINTER},
        {"NULL key", engine, "aes-128-ctr", NULL, 16, 16, 0, &cipher, PARCRYPT_STATUS_NULL_POINTER},
        {"NULL out-parameter", engine, "aes-128-ctr", key, 16, 16, 0, NULL,
         PARCRYPT_STATUS_NULL_POINTER},
        {"unknown cipher", engine, "aes-999-ctr", key, 16, 16, 0, &cipher, PARCRYPT_STATUS_UNKNOWN_NAME},
        {"Blowfish GCM", engine, "bf-gcm", key, 16, 12, 0, &cipher, PARCRYPT_STATUS_UNKNOWN_NAME},
        {"a 15-byte AES key", engine, "aes-128-ctr", key, 15, 16, 0, &cipher, PARCRYPT_STATUS_BAD_KEY},
        {"a 3-byte Blowfish key", engine, "bf-cbc", key, 3, 8, 0, &cipher, PARCRYPT_STATUS_BAD_KEY},
        {"an 8-byte AES IV", engine, "aes-128-cbc", key, 16, 8, 0, &cipher, PARCRYPT_STATUS_BAD_IV},
        {"an IV for ECB", engine, "aes-128-ecb", key, 16, 16, 0, &cipher, PARCRYPT_STATUS_BAD_IV},
        {"unknown cipher flags", engine, "aes-128-ctr", key, 16, 16, 0x80, &cipher,
         PARCRYPT_STATUS_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        status = parcrypt_cipher_new(refused[i].engine, refused[i].name, refused[i].key,
                                     refused[i].key_length, iv, refused[i].iv_length,
                                     refused[i].flags, refused[i].out, &error);
        expect_failure(refused[i].what, status, &error, refused[i].expected);
    }
    CHECK(cipher == NULL, "a failed new set the handle");
    /* Without an error pointer the status alone comes back. */
    CHECK(parcrypt_cipher_new(engine, "nope", key, 16, NULL, 0, 0, &cipher, NULL) ==
              PARCRYPT_STATUS_UNKNOWN_NAME,
          "status without an error object");

    expect_ok("cbc cipher", parcrypt_cipher_new(engine, "aes-128-cbc", key, 16, iv, 16, 0,
                                                &cipher, &error),
              &error);
    if (!cipher) return;
    size_t needed = 0;
    expect_ok("max output", parcrypt_cipher_max_output_length(cipher, PARCRYPT_ENCRYPT, 33,
                                                              &needed, &error),
              &error);
    CHECK(needed == 48, "padded 33 bytes need %zu", needed);
    status = parcrypt_cipher_max_output_length(cipher, 5, 33, &needed, &error);
    expect_failure("a bad direction", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
    status = parcrypt_cipher_encrypt(cipher, data, 33, NULL, 0, out, 40, &out_length, &error);
    expect_failure("output too small", status, &error, PARCRYPT_STATUS_OUTPUT_TOO_SMALL);
    CHECK(out_length == 48, "output too small: needed %zu, expected 48", out_length);
    status = parcrypt_cipher_encrypt(cipher, data, 33, NULL, 0, NULL, 0, &out_length, &error);
    expect_failure("a size query", status, &error, PARCRYPT_STATUS_OUTPUT_TOO_SMALL);
    CHECK(out_length == 48, "a size query said %zu", out_length);
    status = parcrypt_cipher_encrypt(cipher, NULL, 5, NULL, 0, out, sizeof out, &out_length,
                                     &error);
    expect_failure("NULL input", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    status = parcrypt_cipher_encrypt(cipher, data, 16, NULL, 0, NULL, 32, &out_length, &error);
    expect_failure("NULL output", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    status = parcrypt_cipher_encrypt(cipher, data, 16, NULL, 0, out, sizeof out, NULL, &error);
    expect_failure("NULL output length", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    status = parcrypt_cipher_encrypt(NULL, data, 16, NULL, 0, out, sizeof out, &out_length,
                                     &error);
    expect_failure("NULL cipher", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    status = parcrypt_cipher_encrypt(cipher, out, 16, NULL, 0, out + 8, 64, &out_length, &error);
    expect_failure("overlapping buffers", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
    status = parcrypt_cipher_encrypt(cipher, data, 16, (const uint8_t *)"a", 1, out, sizeof out,
                                     &out_length, &error);
    expect_failure("AAD for CBC", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
    status = parcrypt_cipher_encrypt_iv(cipher, iv, 5, data, 16, NULL, 0, out, sizeof out,
                                        &out_length, &error);
    expect_failure("a 5-byte per-call IV", status, &error, PARCRYPT_STATUS_BAD_IV);
    status = parcrypt_cipher_encrypt_iv(cipher, NULL, 0, data, 16, NULL, 0, out, sizeof out,
                                        &out_length, &error);
    expect_failure("an empty per-call IV", status, &error, PARCRYPT_STATUS_BAD_IV);
    /* SP 800-38A F.2.1's first ciphertext block decrypts to a last byte of 0x2a: not PKCS#7. */
    parcrypt_cipher_free(cipher);
    uint8_t nist_key[16], nist_iv[16], block[16];
    unhex("2b7e151628aed2a6abf7158809cf4f3c", nist_key);
    unhex("000102030405060708090a0b0c0d0e0f", nist_iv);
    unhex("7649abac8119b246cee98e9b12e9197d", block);
    expect_ok("cbc cipher", parcrypt_cipher_new(engine, "aes-128-cbc", nist_key, 16, nist_iv,
                                                16, 0, &cipher, &error),
              &error);
    status = parcrypt_cipher_decrypt(cipher, block, 16, NULL, 0, out, sizeof out, &out_length,
                                     &error);
    expect_failure("bad padding", status, &error, PARCRYPT_STATUS_BAD_PADDING);
    parcrypt_cipher_free(cipher);
    expect_ok("unpadded cipher", parcrypt_cipher_new(engine, "aes-128-cbc", nist_key, 16,
                                                     nist_iv, 16, PARCRYPT_CIPHER_NO_PADDING,
                                                     &cipher, &error),
              &error);
    status = parcrypt_cipher_encrypt(cipher, data, 17, NULL, 0, out, sizeof out, &out_length,
                                     &error);
    expect_failure("unpadded partial block", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
    parcrypt_cipher_free(cipher);
    expect_ok("gcm cipher", parcrypt_cipher_new(engine, "aes-128-gcm", key, 16, iv, 12, 0,
                                                &cipher, &error),
              &error);
    status = parcrypt_cipher_decrypt(cipher, data, 10, NULL, 0, out, sizeof out, &out_length,
                                     &error);
    expect_failure("GCM input shorter than a tag", status, &error,
                   PARCRYPT_STATUS_AUTHENTICATION_FAILED);
    parcrypt_cipher_free(cipher);

    /* Frees take NULL. */
    parcrypt_cipher_free(NULL);
    parcrypt_engine_free(NULL);
    parcrypt_error_free(NULL);
    parcrypt_file_encryptor_free(NULL);
    parcrypt_file_decryptor_free(NULL);
    CHECK(parcrypt_error_message(NULL)[0] != '\0', "the NULL error's message is empty");
    CHECK(strcmp(parcrypt_status_name(PARCRYPT_STATUS_BAD_KEY), "PARCRYPT_STATUS_BAD_KEY") == 0,
          "status name");
    CHECK(strcmp(parcrypt_status_name(999), "PARCRYPT_STATUS_UNKNOWN_STATUS") == 0,
          "unknown status name");
}

/* Issue 31 finding 3: a cipher made with an IV encrypted every message under it. Now it
 * encrypts one; the second is PARCRYPT_STATUS_STATE, on one thread or racing on many, while
 * decryption and per-message IVs go on. A refused size query leaves the IV unspent. */
struct iv_race {
    ParcryptCipher *cipher;
    ParcryptStatus status;
};

static void *encrypt_once(void *argument) {
    struct iv_race *race = argument;
    uint8_t plain[64] = {0}, out[64 + 16];
    size_t written = 0;
    race->status = parcrypt_cipher_encrypt(race->cipher, plain, sizeof plain, NULL, 0, out,
                                           sizeof out, &written, NULL);
    return NULL;
}

static void creation_iv_encrypts_once(ParcryptEngine *engine) {
    static const char *names[] = {"aes-128-gcm", "aes-256-ctr", "bf-cbc", "rc6-128-ctr"};
    uint8_t key[32], iv[16], plain[40], sealed[64], again[64], out[64];
    memset(key, 3, sizeof key);
    memset(iv, 5, sizeof iv);
    memset(plain, 'p', sizeof plain);
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        const char *name = names[n];
        size_t iv_length = strstr(name, "gcm") ? 12 : strncmp(name, "bf", 2) == 0 ? 8 : 16;
        size_t key_length = strncmp(name, "aes-256", 7) == 0 ? 32 : 16;
        ParcryptError *error = NULL;
        ParcryptCipher *cipher = NULL;
        expect_ok(name, parcrypt_cipher_new(engine, name, key, key_length, iv, iv_length, 0,
                                            &cipher, &error), &error);
        if (!cipher) continue;
        size_t sealed_length = 0, length = 0;
        ParcryptStatus status = parcrypt_cipher_encrypt(cipher, plain, sizeof plain, NULL, 0,
                                                        NULL, 0, &length, &error);
        expect_failure("a size query", status, &error, PARCRYPT_STATUS_OUTPUT_TOO_SMALL);
        expect_ok(name, parcrypt_cipher_encrypt(cipher, plain, sizeof plain, NULL, 0, sealed,
                                                sizeof sealed, &sealed_length, &error), &error);
        status = parcrypt_cipher_encrypt(cipher, plain, sizeof plain, NULL, 0, again,
                                         sizeof again, &length, &error);
        CHECK(status == PARCRYPT_STATUS_STATE, "%s: a second message under the IV: status %d",
              name, (int)status);
        CHECK(error && strstr(parcrypt_error_message(error), "IV of its own"),
              "%s: the refusal says what to do", name);
        parcrypt_error_free(error);
        error = NULL;
        CHECK(length == 0, "%s: a refused encryption wrote %zu bytes", name, length);
        for (int round = 0; round < 2; round++) {
            expect_ok(name, parcrypt_cipher_decrypt(cipher, sealed, sealed_length, NULL, 0, out,
                                                    sizeof out, &length, &error), &error);
            CHECK(length == sizeof plain && memcmp(out, plain, length) == 0,
                  "%s: decryption under the creation IV", name);
        }
        uint8_t other_iv[16];
        memset(other_iv, 6, sizeof other_iv);
        expect_ok(name, parcrypt_cipher_encrypt_iv(cipher, other_iv, iv_length, plain,
                                                   sizeof plain, NULL, 0, again, sizeof again,
                                                   &length, &error), &error);
        parcrypt_cipher_free(cipher);
    }

    /* Eight threads race for one IV: exactly one encrypts. */
    for (int trial = 0; trial < 20; trial++) {
        ParcryptCipher *cipher = gcm_cipher(engine, "race cipher", 3, iv, 12);
        if (!cipher) return;
        pthread_t threads[8];
        struct iv_race races[8];
        for (int i = 0; i < 8; i++) {
            races[i] = (struct iv_race){cipher, PARCRYPT_STATUS_INTERNAL};
            pthread_create(&threads[i], NULL, encrypt_once, &races[i]);
        }
        int encrypted = 0, refused = 0;
        for (int i = 0; i < 8; i++) {
            pthread_join(threads[i], NULL);
            encrypted += races[i].status == PARCRYPT_STATUS_OK;
            refused += races[i].status == PARCRYPT_STATUS_STATE;
        }
        CHECK(encrypted == 1 && refused == 7, "race: %d encrypted, %d refused", encrypted,
              refused);
        parcrypt_cipher_free(cipher);
    }
}

/* Issue 31 finding 3: a 1-byte GCM IV was accepted. IVs under 12 bytes now need
 * PARCRYPT_CIPHER_ALLOW_SHORT_GCM_IV, at creation and per message. */
static void short_gcm_ivs(ParcryptEngine *engine) {
    uint8_t key[16] = {0}, iv[12] = {1}, plain[4] = {1, 2, 3, 4}, out[64];
    size_t length = 0;
    ParcryptError *error = NULL;
    ParcryptCipher *cipher = NULL;
    ParcryptStatus status = parcrypt_cipher_new(engine, "aes-128-gcm", key, 16, iv, 1, 0,
                                                &cipher, &error);
    expect_failure("a 1-byte GCM IV", status, &error, PARCRYPT_STATUS_BAD_IV);
    status = parcrypt_cipher_new(engine, "aes-128-gcm", key, 16, iv, 8, 0, &cipher, &error);
    expect_failure("an 8-byte GCM IV", status, &error, PARCRYPT_STATUS_BAD_IV);
    expect_ok("per-message cipher", parcrypt_cipher_new(engine, "aes-128-gcm", key, 16, NULL, 0,
                                                        0, &cipher, &error), &error);
    if (cipher) {
        status = parcrypt_cipher_encrypt_iv(cipher, iv, 8, plain, sizeof plain, NULL, 0, out,
                                            sizeof out, &length, &error);
        expect_failure("an 8-byte per-message GCM IV", status, &error, PARCRYPT_STATUS_BAD_IV);
        parcrypt_cipher_free(cipher);
        cipher = NULL;
    }
    expect_ok("short IVs allowed",
              parcrypt_cipher_new(engine, "aes-128-gcm", key, 16, iv, 8,
                                  PARCRYPT_CIPHER_ALLOW_SHORT_GCM_IV, &cipher, &error),
              &error);
    if (cipher) {
        expect_ok("an 8-byte IV, allowed",
                  parcrypt_cipher_encrypt(cipher, plain, sizeof plain, NULL, 0, out, sizeof out,
                                          &length, &error), &error);
        CHECK(length == sizeof plain + 16, "short IV: sealed length %zu", length);
        expect_ok("a 1-byte per-message IV, allowed",
                  parcrypt_cipher_encrypt_iv(cipher, iv, 1, plain, sizeof plain, NULL, 0, out,
                                             sizeof out, &length, &error), &error);
        parcrypt_cipher_free(cipher);
    }
}

/* The AEAD call: a fresh random nonce per message, nonce || ciphertext || tag. Round trips
 * at every size, two seals of one message differ, the layout is GCM under the nonce in
 * front, and forgeries, cuts and another AAD are refused with no plaintext released. */
static void aead(ParcryptEngine *engine) {
    uint8_t key[32];
    size_t key_length = 0;
    ParcryptError *error = NULL;
    ParcryptStatus status = parcrypt_aead_generate_key("aes-256-gcm", key, 8, &key_length,
                                                       &error);
    expect_failure("a key buffer too small", status, &error, PARCRYPT_STATUS_OUTPUT_TOO_SMALL);
    CHECK(key_length == 32, "aes-256-gcm key length %zu", key_length);
    expect_ok("generate key", parcrypt_aead_generate_key("aes-256-gcm", key, sizeof key,
                                                         &key_length, &error), &error);
    ParcryptAead *sealer = NULL;
    status = parcrypt_aead_new(engine, "aes-256-ctr", key, 32, &sealer, &error);
    expect_failure("AEAD over CTR", status, &error, PARCRYPT_STATUS_INVALID_ARGUMENT);
    status = parcrypt_aead_new(engine, "aes-256-gcm", key, 16, &sealer, &error);
    expect_failure("AEAD with a short key", status, &error, PARCRYPT_STATUS_BAD_KEY);
    expect_ok("aead", parcrypt_aead_new(engine, "aes-256-gcm", key, 32, &sealer, &error),
              &error);
    if (!sealer) return;
    static const size_t sizes[] = {0, 1, 15, 16, 17, 1000, (1 << 20) + 3};
    const uint8_t aad[] = "header";
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s], sealed_length = 0, opened_length = 0;
        uint8_t *plain = malloc(size + 1), *sealed = malloc(size + PARCRYPT_AEAD_OVERHEAD);
        uint8_t *second = malloc(size + PARCRYPT_AEAD_OVERHEAD), *opened = malloc(size + 1);
        for (size_t i = 0; i < size; i++) plain[i] = (uint8_t)(i * 13 + 5);
        expect_ok("seal", parcrypt_aead_seal(sealer, plain, size, aad, 6, sealed,
                                             size + PARCRYPT_AEAD_OVERHEAD, &sealed_length,
                                             &error), &error);
        CHECK(sealed_length == size + PARCRYPT_AEAD_OVERHEAD, "sealed %zu bytes: %zu", size,
              sealed_length);
        expect_ok("seal again", parcrypt_aead_seal(sealer, plain, size, aad, 6, second,
                                                   size + PARCRYPT_AEAD_OVERHEAD,
                                                   &sealed_length, &error), &error);
        CHECK(memcmp(sealed, second, PARCRYPT_AEAD_NONCE_BYTES) != 0 &&
                  memcmp(sealed, second, sealed_length) != 0,
              "two seals of %zu bytes are the same", size);
        expect_ok("open", parcrypt_aead_open(sealer, sealed, sealed_length, aad, 6, opened,
                                             size + 1, &opened_length, &error), &error);
        CHECK(opened_length == size && memcmp(opened, plain, size) == 0,
              "open of %zu bytes differs", size);
        /* The same bytes are AES-GCM under the nonce in front. */
        ParcryptCipher *gcm = NULL;
        expect_ok("gcm", parcrypt_cipher_new(engine, "aes-256-gcm", key, 32, NULL, 0, 0, &gcm,
                                             &error), &error);
        if (gcm) {
            status = parcrypt_cipher_decrypt_iv(gcm, sealed, PARCRYPT_AEAD_NONCE_BYTES,
                                                sealed + PARCRYPT_AEAD_NONCE_BYTES,
                                                sealed_length - PARCRYPT_AEAD_NONCE_BYTES, aad,
                                                6, opened, size + 1, &opened_length, &error);
            expect_ok("gcm under the nonce", status, &error);
            CHECK(opened_length == size && memcmp(opened, plain, size) == 0,
                  "GCM under the nonce differs at %zu bytes", size);
            parcrypt_cipher_free(gcm);
        }
        /* A flipped byte anywhere, another AAD: refused, nothing released. */
        size_t flips[3] = {0, PARCRYPT_AEAD_NONCE_BYTES, sealed_length - 1};
        for (int f = 0; f < 3; f++) {
            sealed[flips[f]] ^= 0x40;
            memset(opened, 0, size + 1);
            status = parcrypt_aead_open(sealer, sealed, sealed_length, aad, 6, opened, size + 1,
                                        &opened_length, &error);
            expect_failure("a forged sealed message", status, &error,
                           PARCRYPT_STATUS_AUTHENTICATION_FAILED);
            CHECK(opened_length == 0, "forged: %zu bytes out", opened_length);
            int leaked = 0;
            for (size_t i = 0; i < size; i++) leaked |= opened[i] == plain[i] && plain[i] != 0;
            CHECK(!leaked, "forged %zu bytes: plaintext reached the output", size);
            sealed[flips[f]] ^= 0x40;
        }
        status = parcrypt_aead_open(sealer, sealed, sealed_length, (const uint8_t *)"other", 5,
                                    opened, size + 1, &opened_length, &error);
        expect_failure("another AAD", status, &error, PARCRYPT_STATUS_AUTHENTICATION_FAILED);
        free(plain);
        free(sealed);
        free(second);
        free(opened);
    }
    /* Shorter than a nonce and a tag: refused as a forgery. */
    uint8_t short_sealed[27] = {0}, out[16];
    size_t out_length = 1;
    for (size_t length = 0; length < sizeof short_sealed; length += 9) {
        status = parcrypt_aead_open(sealer, short_sealed, length, NULL, 0, out, sizeof out,
                                    &out_length, &error);
        expect_failure("a cut sealed message", status, &error,
                       PARCRYPT_STATUS_AUTHENTICATION_FAILED);
    }
    uint8_t plain[4] = {0}, small[20];
    status = parcrypt_aead_seal(sealer, plain, 4, NULL, 0, small, sizeof small, &out_length,
                                &error);
    expect_failure("seal into too small", status, &error, PARCRYPT_STATUS_OUTPUT_TOO_SMALL);
    CHECK(out_length == 32, "seal of 4 bytes needs %zu", out_length);
    parcrypt_aead_free(sealer);
    parcrypt_aead_free(NULL);
}

static void engine_errors(void) {
    ParcryptEngine *engine = NULL;
    ParcryptError *error = NULL;
    ParcryptStatus status = parcrypt_engine_new("warp-drive", 0, &engine, &error);
    expect_failure("unknown backend", status, &error, PARCRYPT_STATUS_UNKNOWN_NAME);
    status = parcrypt_engine_new("pool", 1000000, &engine, &error);
    expect_failure("a million threads", status, &error, PARCRYPT_STATUS_BACKEND);
    status = parcrypt_engine_new("pool", 2, NULL, &error);
    expect_failure("NULL engine out-parameter", status, &error, PARCRYPT_STATUS_NULL_POINTER);
    CHECK(engine == NULL, "a failed engine_new set the handle");
}

/* One round of a segmented message's segments: the body in two, the second half first. */
static int segmented_round(ParcryptSegmented *message, const uint8_t *input, uint8_t *output,
                           size_t body, size_t alignment) {
    size_t cut = alignment ? body / 2 / alignment * alignment : body;
    ParcryptStatus second = parcrypt_segmented_run(message, cut, input + cut, output + cut,
                                                   body - cut, NULL);
    ParcryptStatus first = parcrypt_segmented_run(message, 0, input, output, cut, NULL);
    return first == PARCRYPT_STATUS_OK && second == PARCRYPT_STATUS_OK;
}

/* Issue 31 finding 2 (the segmented calls the JVM library runs): GCM decryption in segments
 * writes nothing into the output until `parcrypt_segmented_authenticate` found the tag
 * good. Before, the segments wrote the plaintext and only the finish checked the tag. */
static void segmented_gcm_authenticates_first(ParcryptEngine *engine) {
    uint8_t iv[12], plain[1000], sealed[1016], out[1016];
    size_t out_length = 0, body = 0, alignment = 0;
    memset(iv, 4, sizeof iv);
    fill(plain, sizeof plain, 7, 5);
    ParcryptError *error = NULL;
    ParcryptCipher *cipher = gcm_cipher(engine, "segmented cipher", 3, NULL, 0);
    if (!cipher) return;
    expect_ok("segmented seal", parcrypt_cipher_encrypt_iv(cipher, iv, 12, plain, sizeof plain,
                                                           NULL, 0, sealed, sizeof sealed,
                                                           &out_length, &error), &error);
    for (int forged = 0; forged < 2; forged++) {
        if (forged) sealed[500] ^= 1;
        ParcryptSegmented *message = NULL;
        expect_ok("segmented new", parcrypt_segmented_new(cipher, PARCRYPT_DECRYPT, iv, 12, NULL, 0,
                                                          sizeof sealed, &message, &error), &error);
        if (!message) continue;
        expect_ok("segmented layout", parcrypt_segmented_layout(message, 0, &body, &alignment,
                                                                &error), &error);
        CHECK(body == sizeof plain && alignment == 16, "segmented layout %zu %zu", body, alignment);
        memset(out, 0xAA, sizeof out);
        CHECK(segmented_round(message, sealed, out, body, alignment), "segmented first round");
        int untouched = 1;
        for (size_t i = 0; i < sizeof out; i++) untouched &= out[i] == 0xAA;
        CHECK(untouched, "segmented gcm (forged %d): the first round wrote the output", forged);
        int again = -1;
        ParcryptStatus status = parcrypt_segmented_authenticate(message, sealed, &again, &error);
        if (forged) {
            expect_failure("segmented forged", status, &error, PARCRYPT_STATUS_AUTHENTICATION_FAILED);
            CHECK(again == 0, "segmented forged: again %d", again);
            CHECK(!segmented_round(message, sealed, out, body, alignment),
                  "segmented forged: a second round ran");
            status = parcrypt_segmented_finish(message, sealed, out, sizeof out, &out_length, &error);
            CHECK(status != PARCRYPT_STATUS_OK, "segmented forged: finish succeeded");
            parcrypt_error_free(error);
            error = NULL;
            for (size_t i = 0; i < sizeof out; i++) untouched &= out[i] == 0xAA;
            CHECK(untouched, "segmented forged: the output changed");
        } else {
            expect_ok("segmented authenticate", status, &error);
            CHECK(again == 1, "segmented gcm: again %d", again);
            CHECK(segmented_round(message, sealed, out, body, alignment), "segmented second round");
            expect_ok("segmented finish", parcrypt_segmented_finish(message, sealed, out, sizeof out,
                                                                    &out_length, &error), &error);
            CHECK(out_length == sizeof plain && memcmp(out, plain, sizeof plain) == 0,
                  "segmented gcm: the plaintext differs");
        }
        parcrypt_segmented_free(message);
    }
    /* Encryption, like every mode but GCM decryption, is one round. */
    ParcryptSegmented *message = NULL;
    expect_ok("segmented encrypt", parcrypt_segmented_new(cipher, PARCRYPT_ENCRYPT, iv, 12, NULL, 0,
                                                          sizeof plain, &message, &error), &error);
    if (message) {
        int again = -1;
        CHECK(segmented_round(message, plain, out, sizeof plain, 16), "segmented encrypt round");
        expect_ok("segmented encrypt authenticate",
                  parcrypt_segmented_authenticate(message, plain, &again, &error), &error);
        CHECK(again == 0, "segmented encrypt: again %d", again);
        expect_ok("segmented encrypt finish", parcrypt_segmented_finish(message, plain, out,
                                                                        sizeof out, &out_length,
                                                                        &error), &error);
        sealed[500] ^= 1;
        CHECK(out_length == sizeof sealed && memcmp(out, sealed, sizeof sealed) == 0,
              "segmented encrypt: differs from the whole-message call");
        parcrypt_segmented_free(message);
    }
    parcrypt_cipher_free(cipher);
}

/* The warnings a callback received (issue 31 finding 7: they were dropped). */
struct warnings_seen {
    int count;
    char last[512];
};

static void record_warning(void *context, const char *message) {
    struct warnings_seen *seen = context;
    seen->count++;
    snprintf(seen->last, sizeof seen->last, "%s", message);
}

static void warnings_reach_the_callback(ParcryptEngine *engine) {
    struct warnings_seen seen = {0, ""};
    ParcryptError *error = NULL;
    expect_ok("set the warning callback",
              parcrypt_set_warning_callback(record_warning, &seen, &error), &error);
    char *plain_path = scratch_path("warned.plain");
    CHECK(write_file(plain_path, (const uint8_t *)"abc", 3), "cannot write %s", plain_path);
    char *sealed = scratch_path("warned.parcrypt");
    expect_ok("encrypt_file under a 1-byte passphrase",
              parcrypt_encrypt_file(engine, plain_path, sealed, (const uint8_t *)"x", 1, NULL, 0,
                                    PARCRYPT_FILE_PASSPHRASE, NULL, &error),
              &error);
    CHECK(seen.count == 1 && strstr(seen.last, "passphrase is only 1 bytes") != NULL,
          "1-byte passphrase: %d warning(s), last \"%s\"", seen.count, seen.last);
    ParcryptFileEncryptor *encryptor = NULL;
    char *streamed = scratch_path("warned-stream.parcrypt");
    expect_ok("file_encryptor_new under a 3-byte passphrase",
              parcrypt_file_encryptor_new(engine, streamed, (const uint8_t *)"abc", 3, NULL, 0,
                                          PARCRYPT_FILE_PASSPHRASE, &encryptor, &error),
              &error);
    parcrypt_file_encryptor_free(encryptor);
    CHECK(seen.count == 2 && strstr(seen.last, "passphrase is only 3 bytes") != NULL,
          "3-byte passphrase: %d warning(s), last \"%s\"", seen.count, seen.last);
    char *aged = scratch_path("warned.age");
    expect_ok("an age file to a 2-byte passphrase",
              parcrypt_encrypt_file(engine, plain_path, aged, (const uint8_t *)"ab", 2, NULL, 0,
                                    PARCRYPT_FILE_AGE | PARCRYPT_FILE_PASSPHRASE, NULL, &error),
              &error);
    CHECK(seen.count == 3 && strstr(seen.last, "passphrase is only 2 bytes") != NULL,
          "2-byte age passphrase: %d warning(s), last \"%s\"", seen.count, seen.last);
    /* A key warns about nothing; with the callback unset nothing is called. */
    char *keyed = scratch_path("warned-key.parcrypt");
    expect_ok("encrypt_file under a key",
              parcrypt_encrypt_file(engine, plain_path, keyed, FILE_KEY, 16, NULL, 0, 0, NULL,
                                    &error),
              &error);
    CHECK(seen.count == 3, "a key warned: \"%s\"", seen.last);
    expect_ok("unset the warning callback", parcrypt_set_warning_callback(NULL, NULL, &error),
              &error);
    char *unset = scratch_path("unwarned.parcrypt");
    expect_ok("encrypt_file without a callback",
              parcrypt_encrypt_file(engine, plain_path, unset, (const uint8_t *)"x", 1, NULL, 0,
                                    PARCRYPT_FILE_PASSPHRASE, NULL, &error),
              &error);
    CHECK(seen.count == 3, "an unset callback was called");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PARCRYPT_BINARY SCRATCH_FOLDER\n", argv[0]);
        return 2;
    }
    parcrypt_bin = argv[1];
    scratch = argv[2];
    CHECK(parcrypt_version()[0] != '\0', "empty version");

    const char *backends[] = {"seq", "pool"};
    for (int b = 0; b < 2; b++) {
        ParcryptEngine *engine = NULL;
        ParcryptError *error = NULL;
        expect_ok("engine", parcrypt_engine_new(backends[b], 2, &engine, &error), &error);
        if (!engine) continue;
        CHECK(strcmp(parcrypt_engine_backend(engine), backends[b]) == 0, "backend name %s",
              parcrypt_engine_backend(engine));
        vectors(engine);
        gcm_tag_failure(engine);
        segmented_gcm_authenticates_first(engine);
        threads_share_a_cipher(engine);
        creation_iv_encrypts_once(engine);
        short_gcm_ivs(engine);
        aead(engine);
        parcrypt_engine_free(engine);
    }
    ParcryptEngine *engine = NULL;
    ParcryptError *error = NULL;
    expect_ok("engine", parcrypt_engine_new(NULL, 0, &engine, &error), &error);
    if (engine) {
        files(engine);
        recipients(engine);
        age_files(engine);
        warnings_reach_the_callback(engine);
        cipher_errors(engine);
        parcrypt_engine_free(engine);
    }
    engine_errors();
    printf("c api: %d checks passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
