package dev.parcrypt;

/**
 * The format a file is written in ({@link FileOptions#withFormat(FileFormat)}). Decryption
 * recognises an age file by its header whatever the options say, as {@code parcrypt decrypt}
 * does.
 */
public enum FileFormat {
    /**
     * parcrypt's own format ({@code parcrypt encrypt}): AES-GCM chunks under a key, a
     * passphrase (argon2id) or public-key recipients, with an optional context.
     */
    PARCRYPT,
    /**
     * An age v1 file (age-encryption.org/v1, {@code parcrypt encrypt --format age}), which
     * age and rage read: to public-key recipients (X25519 or post-quantum hybrid) or to a
     * passphrase (scrypt), ASCII-armored with {@link FileOptions#withArmor(boolean)}. Never
     * under a raw key or with a context; sealed and opened on the CPU (a GPU backend is
     * refused); whole files only (the streams and the channel read and write parcrypt files).
     */
    AGE
}
