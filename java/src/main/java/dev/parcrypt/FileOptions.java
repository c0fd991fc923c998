package dev.parcrypt;

import java.util.Objects;

/**
 * How a file is encrypted or decrypted: the backend, whether an existing destination is
 * overwritten, a context bound into the key derivation, and whether the secret is a
 * passphrase (its UTF-8 bytes, stretched with argon2id as the file's header says) rather
 * than a 16- or 32-byte key, and the format a file is written in ({@link FileFormat#AGE}
 * for an age v1 file, ASCII-armored with {@code armor}). Immutable: each {@code with}
 * method returns a new object.
 *
 * <p>{@code overwrite} is the option's name in every front end (the command line's {@code
 * --overwrite}, Python's {@code overwrite=}); {@link #replace()} and {@link
 * #withReplace(boolean)} are its former names, kept as deprecated aliases.
 *
 * @param backend where the chunks are sealed and opened (an engine backend)
 * @param overwrite whether an existing destination is overwritten (never the source itself)
 * @param context bytes bound into the key derivation (decryption must give the same), or null
 * @param passphrase whether the secret is a passphrase
 * @param format the format to encrypt to (decryption recognises an age file by its header)
 * @param armor ASCII armor around an age file (only with {@link FileFormat#AGE})
 */
public record FileOptions(Backend backend, boolean overwrite, byte[] context, boolean passphrase, FileFormat format,
        boolean armor) {
    /** Checks the backend. */
    public FileOptions {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(format, "format");
        if (backend.kind != Backend.Kind.ENGINE) {
            throw new IllegalArgumentException(backend.name() + " is a strategy for messages in memory; files take an"
                    + " engine backend (seq, threads, pool, auto, opencl, cuda)");
        }
        context = context == null ? null : context.clone();
    }

    /**
     * Options for parcrypt's format without armor (the constructor before formats).
     *
     * @param backend where the chunks are sealed and opened (an engine backend)
     * @param overwrite whether an existing destination is overwritten
     * @param context bytes bound into the key derivation, or null
     * @param passphrase whether the secret is a passphrase
     */
    public FileOptions(Backend backend, boolean overwrite, byte[] context, boolean passphrase) {
        this(backend, overwrite, context, passphrase, FileFormat.PARCRYPT, false);
    }

    /**
     * @return the command line's defaults: the auto backend, no overwriting, no context, a
     *     key, parcrypt's format
     */
    public static FileOptions defaults() {
        return new FileOptions(Backend.auto(), false, null, false);
    }

    /**
     * @param backend the backend
     * @return these options on {@code backend}
     */
    public FileOptions withBackend(Backend backend) {
        return new FileOptions(backend, overwrite, context, passphrase, format, armor);
    }

    /**
     * @param overwrite whether an existing destination is overwritten
     * @return these options, overwriting or not
     */
    public FileOptions withOverwrite(boolean overwrite) {
        return new FileOptions(backend, overwrite, context, passphrase, format, armor);
    }

    /**
     * The former name of {@link #overwrite()}.
     *
     * @return whether an existing destination is overwritten
     * @deprecated use {@link #overwrite()}, the option's name in every front end
     */
    @Deprecated
    public boolean replace() {
        return overwrite;
    }

    /**
     * The former name of {@link #withOverwrite(boolean)}.
     *
     * @param replace whether an existing destination is overwritten
     * @return these options, overwriting or not
     * @deprecated use {@link #withOverwrite(boolean)}, the option's name in every front end
     */
    @Deprecated
    public FileOptions withReplace(boolean replace) {
        return withOverwrite(replace);
    }

    /**
     * @param context bytes bound into the key derivation, or null
     * @return these options with {@code context}
     */
    public FileOptions withContext(byte[] context) {
        return new FileOptions(backend, overwrite, context, passphrase, format, armor);
    }

    /**
     * @param passphrase whether the secret is a passphrase
     * @return these options
     */
    public FileOptions withPassphrase(boolean passphrase) {
        return new FileOptions(backend, overwrite, context, passphrase, format, armor);
    }

    /**
     * @param format the format to encrypt to: {@link FileFormat#AGE} for an age v1 file (with
     *     {@link Recipients} or a passphrase, as {@code parcrypt encrypt --format age})
     * @return these options
     */
    public FileOptions withFormat(FileFormat format) {
        return new FileOptions(backend, overwrite, context, passphrase, format, armor);
    }

    /**
     * @param armor ASCII armor (PEM) around an age file, as {@code parcrypt encrypt --format
     *     age -a}; refused for parcrypt's format
     * @return these options
     */
    public FileOptions withArmor(boolean armor) {
        return new FileOptions(backend, overwrite, context, passphrase, format, armor);
    }

    @Override
    public byte[] context() {
        return context == null ? null : context.clone();
    }

    int flags() {
        return (overwrite ? Native.FILE_OVERWRITE : 0) | (passphrase ? Native.FILE_PASSPHRASE : 0)
                | (format == FileFormat.AGE ? Native.FILE_AGE : 0) | (armor ? Native.FILE_ARMOR : 0);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof FileOptions that && backend.toString().equals(that.backend.toString())
                && overwrite == that.overwrite && passphrase == that.passphrase && format == that.format
                && armor == that.armor && java.util.Arrays.equals(context, that.context);
    }

    @Override
    public int hashCode() {
        return Objects.hash(backend.toString(), overwrite, passphrase, format, armor,
                java.util.Arrays.hashCode(context));
    }

    @Override
    public String toString() {
        return "FileOptions[backend=" + backend + ", overwrite=" + overwrite + ", context="
                + (context == null ? "none" : context.length + " bytes") + ", passphrase=" + passphrase + ", format=" + format + ", armor=" + armor + "]";
    }
}
