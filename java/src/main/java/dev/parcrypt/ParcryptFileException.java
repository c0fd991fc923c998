package dev.parcrypt;

import java.io.IOException;

/**
 * A file operation that failed: a wrong key, a damaged, truncated or foreign file, an
 * output that exists, a read or write error. A chunk that failed authentication has an
 * {@link javax.crypto.AEADBadTagException} as its cause, with the same message.
 */
public class ParcryptFileException extends IOException {
    private static final long serialVersionUID = 1L;

    /** The library's status code. */
    private final Status status;

    /**
     * @param status the library's status code
     * @param message the one-line reason
     * @param cause what lies under it, or null
     */
    public ParcryptFileException(Status status, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    /** @return the library's status code */
    public Status status() {
        return status;
    }
}
