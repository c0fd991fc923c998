package dev.parcrypt;

/** The C ABI's status codes ({@code ParcryptStatus} in parcrypt.h), by the same numbers. */
public enum Status {
    /** Success. */
    OK,
    /** A required pointer was NULL (a bug in this binding if it ever shows). */
    NULL_POINTER,
    /** An argument is not acceptable: a length, overlapping buffers, unpadded input that is not whole blocks. */
    INVALID_ARGUMENT,
    /** The cipher or backend name is not one parcrypt knows. */
    UNKNOWN_NAME,
    /** The key or passphrase is not one the cipher or file takes. */
    BAD_KEY,
    /** The IV is missing, has the wrong length, or was given to ECB. */
    BAD_IV,
    /** The output buffer is too small. */
    OUTPUT_TOO_SMALL,
    /** A GCM tag or a file chunk did not match; no plaintext was released. */
    AUTHENTICATION_FAILED,
    /** Decrypted padding is not PKCS#7. */
    BAD_PADDING,
    /** The key or passphrase does not open this file. */
    WRONG_KEY,
    /** Not a parcrypt file, a damaged or truncated header, a newer version. */
    BAD_FORMAT,
    /** Reading or writing a file failed, or the output is refused. */
    IO,
    /** The backend failed or is not available. */
    BACKEND,
    /** The handle cannot do this now (finished, or failed before). */
    STATE,
    /** An internal error in the library: please report it. */
    INTERNAL,
    /** A code this binding does not know (a newer library). */
    UNKNOWN;

    private static final Status[] BY_CODE = values();

    static Status of(int code) {
        return code >= 0 && code < UNKNOWN.ordinal() ? BY_CODE[code] : UNKNOWN;
    }
}
