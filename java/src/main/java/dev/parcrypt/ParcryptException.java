package dev.parcrypt;

/**
 * A failure that is neither the caller's argument nor a file's: a backend that is not
 * available (no GPU), a handle used after it failed or was closed, an internal error. The
 * message is the library's one-line reason.
 */
public class ParcryptException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The library's status code. */
    private final Status status;

    /**
     * @param status the library's status code
     * @param message the one-line reason
     */
    public ParcryptException(Status status, String message) {
        super(message);
        this.status = status;
    }

    /** @return the library's status code */
    public Status status() {
        return status;
    }
}
