package dev.parcrypt;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Reference;

/**
 * The one way a status-returning downcall is made: the thread's scratch memory for its
 * out-parameters, the status turned into an exception by one of {@link Errors}' checks, and
 * the {@code Throwable} that {@code invokeExact} declares (never thrown by a downcall) kept
 * out of every caller's signature.
 *
 * <pre>{@code
 * MemorySegment scratch = NativeCall.run(Errors::check, s -> (int) Native.ENGINE_NEW.invokeExact(
 *         name, threads, Errors.handleSlot(s), Errors.errorSlot(s)));
 * MemorySegment engine = Errors.handle(scratch);
 * }</pre>
 */
final class NativeCall {
    private NativeCall() {}

    /** A downcall: writes its out-parameters into {@code scratch} and returns its status. */
    @FunctionalInterface
    interface Downcall {
        int call(MemorySegment scratch) throws Throwable;
    }

    /** A downcall on a handle's pointer, valid while the call runs. */
    @FunctionalInterface
    interface HandleDowncall {
        int call(MemorySegment pointer, MemorySegment scratch) throws Throwable;
    }

    /**
     * What a non-zero status becomes: {@link Errors#check} (unchecked exceptions), {@link
     * Errors#checkCrypto} (a tag or padding is a {@code BadPaddingException}) or {@link
     * Errors#checkFile} (what concerns the file is an {@code IOException}).
     */
    @FunctionalInterface
    interface Check<E extends Exception> {
        void check(int status, MemorySegment scratch) throws E;
    }

    /**
     * Runs {@code downcall} and checks its status.
     *
     * @return the scratch memory, holding the call's out-parameters until this thread's
     *     next call
     */
    static <E extends Exception> MemorySegment run(Check<E> check, Downcall downcall) throws E {
        MemorySegment scratch = Errors.scratch();
        int status;
        try {
            status = downcall.call(scratch);
        } catch (Throwable t) {
            throw Errors.unexpected(t);
        }
        check.check(status, scratch);
        return scratch;
    }

    /** Frees a native object with its {@code parcrypt_*_free} function (which cannot fail). */
    static void free(MethodHandle free, MemorySegment pointer) {
        try {
            free.invokeExact(pointer);
        } catch (Throwable t) {
            throw Errors.unexpected(t);
        }
    }

    /**
     * Runs {@code downcall} on {@code handle}'s pointer, which stays valid (and {@code owner}
     * reachable, so its cleaner waits) until the call returns.
     *
     * @return as {@link #run(Check, Downcall)}
     * @throws IllegalStateException the handle is closed
     */
    static <E extends Exception> MemorySegment on(NativeHandle handle, Object owner, Check<E> check,
            HandleDowncall downcall) throws E {
        MemorySegment pointer = handle.acquire();
        try {
            return run(check, scratch -> downcall.call(pointer, scratch));
        } finally {
            handle.release();
            Reference.reachabilityFence(owner);
        }
    }
}
