package dev.parcrypt;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A native handle with a count of the calls using it, so that closing it while another
 * thread is in a call never frees memory under that call: the handle is freed when it is
 * closed and the last call has left, or by the {@link Cleaner} when its owner is garbage.
 */
final class NativeHandle implements Runnable {
    static final Cleaner CLEANER = Cleaner.create();

    private static final int CLOSED = 1 << 30;
    private static final int FREED = -1;

    private final MemorySegment pointer;
    private final MethodHandle free;
    private final String what;
    /** Calls in progress, plus CLOSED once closed; FREED once freed. */
    private final AtomicInteger state = new AtomicInteger();

    NativeHandle(MemorySegment pointer, MethodHandle free, String what) {
        this.pointer = pointer;
        this.free = free;
        this.what = what;
    }

    /** Registers the cleanup of this handle when {@code owner} becomes unreachable. */
    Cleaner.Cleanable register(Object owner) {
        return CLEANER.register(owner, this);
    }

    /** Starts a call: the pointer, valid until {@link #release()}. */
    MemorySegment acquire() {
        while (true) {
            int current = state.get();
            if (current < 0 || (current & CLOSED) != 0) {
                throw new IllegalStateException("this " + what + " is closed");
            }
            if (state.compareAndSet(current, current + 1)) {
                return pointer;
            }
        }
    }

    /** Ends a call; frees the handle if it was closed meanwhile and this was the last call. */
    void release() {
        if (state.decrementAndGet() == CLOSED && state.compareAndSet(CLOSED, FREED)) {
            freeNow();
        }
    }

    boolean isOpen() {
        int current = state.get();
        return current >= 0 && (current & CLOSED) == 0;
    }

    /** Closes: frees now if no call is in progress, else when the last one ends. */
    @Override
    public void run() {
        while (true) {
            int current = state.get();
            if (current < 0 || (current & CLOSED) != 0) {
                return;
            }
            if (current == 0) {
                if (state.compareAndSet(0, FREED)) {
                    freeNow();
                    return;
                }
            } else if (state.compareAndSet(current, current | CLOSED)) {
                return;
            }
        }
    }

    private void freeNow() {
        NativeCall.free(free, pointer);
    }
}
