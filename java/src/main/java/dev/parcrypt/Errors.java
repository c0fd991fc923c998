package dev.parcrypt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import javax.crypto.AEADBadTagException;
import javax.crypto.BadPaddingException;

/**
 * The one place where a status code and the library's one-line message become a Java
 * exception, and the per-thread scratch memory that out-parameters are written to.
 */
final class Errors {
    private Errors() {}

    /**
     * Out-parameters of one call, per thread: the error pointer at 0, a size at 8, another
     * at 16, a handle at 24. A thread's memory is freed when the thread is gone.
     */
    private static final ThreadLocal<MemorySegment> SCRATCH =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(32, 8));

    static MemorySegment scratch() {
        MemorySegment scratch = SCRATCH.get();
        scratch.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        return scratch;
    }

    static MemorySegment errorSlot(MemorySegment scratch) {
        return scratch;
    }

    static MemorySegment sizeSlot(MemorySegment scratch) {
        return scratch.asSlice(8, 8);
    }

    static MemorySegment handleSlot(MemorySegment scratch) {
        return scratch.asSlice(24, 8);
    }

    /** The slot at 16, for a second pointer written by a call (with {@link #handleSlot}). */
    static MemorySegment secondSlot(MemorySegment scratch) {
        return scratch.asSlice(16, 8);
    }

    static long size(MemorySegment scratch) {
        return scratch.get(ValueLayout.JAVA_LONG, 8);
    }

    static MemorySegment handle(MemorySegment scratch) {
        return scratch.get(ValueLayout.ADDRESS, 24);
    }

    /** The failed call's message (its error object is freed), or a stand-in without one. */
    static String message(MemorySegment scratch) {
        MemorySegment error = scratch.get(ValueLayout.ADDRESS, 0);
        if (error.equals(MemorySegment.NULL)) {
            return "the call failed without a message";
        }
        scratch.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        try {
            MemorySegment text = (MemorySegment) Native.ERROR_MESSAGE.invokeExact(error);
            return text.getString(0);
        } catch (Throwable t) {
            throw unexpected(t);
        } finally {
            try {
                Native.ERROR_FREE.invokeExact(error);
            } catch (Throwable t) {
                throw unexpected(t);
            }
        }
    }

    /** For calls whose failures are arguments or the library's own: unchecked exceptions. */
    static void check(int code, MemorySegment scratch) {
        throwIfFailed(code, scratch, Errors::unchecked);
    }

    /** For decryption: a failed tag or padding is the checked exception JCE users expect. */
    static void checkCrypto(int code, MemorySegment scratch) throws BadPaddingException {
        throwIfFailed(code, scratch, (status, message) -> switch (status) {
            case AUTHENTICATION_FAILED -> new AEADBadTagException(message);
            case BAD_PADDING -> new BadPaddingException(message);
            default -> throw unchecked(status, message);
        });
    }

    /** For files: what concerns the file is an IOException; a bad argument stays unchecked. */
    static void checkFile(int code, MemorySegment scratch) throws ParcryptFileException {
        throwIfFailed(code, scratch, (status, message) -> switch (status) {
            case AUTHENTICATION_FAILED ->
                new ParcryptFileException(status, message, new AEADBadTagException(message));
            case WRONG_KEY, BAD_FORMAT, IO, BAD_PADDING -> new ParcryptFileException(status, message, null);
            default -> throw unchecked(status, message);
        });
    }

    /** What a failed call's status and message become (or throws, for an unchecked one). */
    @FunctionalInterface
    private interface Failure<E extends Exception> {
        E exception(Status status, String message);
    }

    /** Throws what {@code failure} makes of a non-zero status and the call's message. */
    private static <E extends Exception> void throwIfFailed(int code, MemorySegment scratch, Failure<E> failure)
            throws E {
        if (code != 0) {
            throw failure.exception(Status.of(code), message(scratch));
        }
    }

    static RuntimeException unchecked(Status status, String message) {
        return switch (status) {
            case NULL_POINTER, INVALID_ARGUMENT, UNKNOWN_NAME, BAD_KEY, BAD_IV, OUTPUT_TOO_SMALL ->
                new IllegalArgumentException(message);
            default -> new ParcryptException(status, message);
        };
    }

    /** A Throwable out of invokeExact: the downcall itself never throws, so this is a JVM error. */
    static RuntimeException unexpected(Throwable t) {
        if (t instanceof RuntimeException runtime) {
            return runtime;
        }
        if (t instanceof Error error) {
            throw error;
        }
        return new ParcryptException(Status.INTERNAL, "unexpected " + t);
    }
}
