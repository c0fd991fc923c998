package dev.parcrypt;

import java.util.Objects;

/**
 * How a file is encrypted or decrypted: the backend, whether an existing destination is
 * replaced, a context bound into the key derivation, and whether the secret is a passphrase
 * (its UTF-8 bytes, stretched with argon2id as the file's header says) rather than a 16- or
 * 32-byte key. Immutable: each {@code with} method returns a new object.
 *
 * @param backend where the chunks are sealed and opened (an engine backend)
 * @param replace whether an existing destination is replaced
 * @param context bytes bound into the key derivation (decryption must give the same), or null
 * @param passphrase whether the secret is a passphrase
 */
public record FileOptions(Backend backend, boolean replace, byte[] context, boolean passphrase) {
    /** Checks the backend. */
    public FileOptions {
        Objects.requireNonNull(backend, "backend");
        if (backend.kind != Backend.Kind.ENGINE) {
            throw new IllegalArgumentException(backend.name() + " is a strategy for messages in memory; files take an"
                    + " engine backend (seq, threads, pool, auto, opencl, cuda)");
        }
        context = context == null ? null : context.clone();
    }

    /** @return the command line's defaults: the auto backend, no replacing, no context, a key */
    public static FileOptions defaults() {
        return new FileOptions(Backend.auto(), false, null, false);
    }

    /**
     * @param backend the backend
     * @return these options on {@code backend}
     */
    public FileOptions withBackend(Backend backend) {
        return new FileOptions(backend, replace, context, passphrase);
    }

    /**
     * @param replace whether an existing destination is replaced
     * @return these options, replacing or not
     */
    public FileOptions withReplace(boolean replace) {
        return new FileOptions(backend, replace, context, passphrase);
    }

    /**
     * @param context bytes bound into the key derivation, or null
     * @return these options with {@code context}
     */
    public FileOptions withContext(byte[] context) {
        return new FileOptions(backend, replace, context, passphrase);
    }

    /**
     * @param passphrase whether the secret is a passphrase
     * @return these options
     */
    public FileOptions withPassphrase(boolean passphrase) {
        return new FileOptions(backend, replace, context, passphrase);
    }

    @Override
    public byte[] context() {
        return context == null ? null : context.clone();
    }

    int flags() {
        return (replace ? Native.FILE_REPLACE : 0) | (passphrase ? Native.FILE_PASSPHRASE : 0);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof FileOptions that && backend.toString().equals(that.backend.toString())
                && replace == that.replace && passphrase == that.passphrase
                && java.util.Arrays.equals(context, that.context);
    }

    @Override
    public int hashCode() {
        return Objects.hash(backend.toString(), replace, passphrase, java.util.Arrays.hashCode(context));
    }

    @Override
    public String toString() {
        return "FileOptions[backend=" + backend + ", replace=" + replace + ", context="
                + (context == null ? "none" : context.length + " bytes") + ", passphrase=" + passphrase + "]";
    }
}
