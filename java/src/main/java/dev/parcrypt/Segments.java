package dev.parcrypt;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RecursiveAction;
import javax.crypto.BadPaddingException;

/**
 * The Java strategies, {@link Backend#javaThreads(int)} and {@link Backend#forkJoin(int)}:
 * they decide where a message is cut and which Java thread runs each segment; every byte of
 * cipher work, and every rule of the mode, is the library's ({@code parcrypt_segmented_*}:
 * the one-thread kernel per segment at its offset, then the finish that joins GCM's partial
 * sums, pads or appends the tag). GCM decryption runs its segments twice: a first round only
 * hashes the ciphertext, the library checks the tag, and only then does a second round
 * write the plaintext. Every segment of a round has returned before the round ends, even
 * when one failed.
 */
final class Segments {
    private Segments() {}

    static long run(MemorySegment cipher, Backend backend, int direction, MemorySegment iv, MemorySegment aad,
            MemorySegment input, MemorySegment output) throws BadPaddingException {
        boolean inPlace = sameStart(input, output);
        if (!inPlace && input.byteSize() > 0 && output.byteSize() > 0 && input.asOverlappingSlice(output).isPresent()) {
            throw new IllegalArgumentException("output overlaps input (in place, pass the same memory for both)");
        }
        // The segments run on other threads while this one waits: memory confined to this
        // thread is handed to them as plain addresses (heap memory as it is). Checked before
        // the message begins (a closed arena), so that a bad buffer spends nothing.
        MemorySegment sharedInput = Native.unconfined(input);
        MemorySegment sharedOutput = Native.unconfined(output);
        MemorySegment message = Errors.handle(NativeCall.run(Errors::checkCrypto, s -> (int) Native.SEGMENTED_NEW
                .invokeExact(cipher, direction, iv, iv.byteSize(), aad, aad.byteSize(), input.byteSize(),
                        Errors.handleSlot(s), Errors.errorSlot(s))));
        try {
            MemorySegment layout = NativeCall.run(Errors::check, s -> (int) Native.SEGMENTED_LAYOUT.invokeExact(
                    message, inPlace ? 1 : 0, s.asSlice(8, 8), s.asSlice(16, 8), Errors.errorSlot(s)));
            long body = layout.get(java.lang.foreign.ValueLayout.JAVA_LONG, 8);
            long alignment = layout.get(java.lang.foreign.ValueLayout.JAVA_LONG, 16);
            Job job = new Job(message, sharedInput, sharedOutput);
            try {
                // Every segment of a round has returned before the round does, failed or
                // not: only then may the output go back to the caller and the message be
                // freed. GCM decryption's first round writes nothing; its second runs once
                // the tag matched, so a forged message never puts plaintext in the output.
                job.round(backend, body, alignment);
                if (job.authenticate()) {
                    job.round(backend, body, alignment);
                }
                return job.finish();
            } catch (RuntimeException | BadPaddingException e) {
                // A failed decryption leaves the output's body zeroed, as the engine's
                // backends do.
                if (direction == Native.DECRYPT) {
                    output.asSlice(0, Math.min(body, output.byteSize())).fill((byte) 0);
                }
                throw e;
            }
        } finally {
            NativeCall.free(Native.SEGMENTED_FREE, message);
        }
    }

    private static boolean sameStart(MemorySegment a, MemorySegment b) {
        return a.address() == b.address() && a.heapBase().orElse(null) == b.heapBase().orElse(null);
    }

    /**
     * Tests only: what a test sees of each segment, on the segment's thread. It lets a test
     * fail one segment while another is still running, and look at the output a segment
     * left.
     */
    interface Watch {
        /**
         * Just before the segment at {@code offset}; what this throws fails the segment as
         * a failed native call would.
         *
         * @param offset the segment's offset in the body
         */
        default void before(long offset) {}

        /**
         * Just after the segment at {@code offset} returned without failing.
         *
         * @param offset the segment's offset in the body
         * @param length its length
         */
        default void after(long offset, long length) {}
    }

    /** Tests only: the {@link Watch} in force, or null (always, outside tests). */
    static volatile Watch watch;

    /** One message's segments: each a call on the calling thread. */
    private static final class Job {
        private final MemorySegment message;
        private final MemorySegment input;
        private final MemorySegment output;
        /** Set by a segment that failed: the segments not yet begun then do nothing. */
        private volatile boolean failed;

        Job(MemorySegment message, MemorySegment input, MemorySegment output) {
            this.message = message;
            this.input = input;
            this.output = output;
        }

        long outputSize() {
            return output.byteSize();
        }

        void segment(long offset, long length) {
            if (length == 0 || failed) {
                return;
            }
            try {
                Watch watching = watch;
                if (watching != null) {
                    watching.before(offset);
                }
                NativeCall.run(Errors::check, s -> (int) Native.SEGMENTED_RUN.invokeExact(message, offset,
                        input.asSlice(offset), output.asSlice(offset), length, Errors.errorSlot(s)));
                if (watching != null) {
                    watching.after(offset, length);
                }
            } catch (RuntimeException | Error e) {
                failed = true;
                throw e;
            }
        }

        /** One round of segments over the body, on the backend's Java threads. */
        void round(Backend backend, long body, long alignment) {
            switch (backend.kind) {
                case JAVA_THREADS -> javaThreads(body, alignment, backend.threads);
                case FORK_JOIN -> {
                    Halves root = new Halves(this, 0, body, alignment, backend.threshold);
                    if (body <= backend.threshold || alignment == 0) {
                        // One leaf: it runs where it is, as a leaf task would, without
                        // a hand-off to the pool and back.
                        root.compute();
                    } else {
                        backend.pool.invoke(root);
                    }
                }
                case ENGINE -> throw new IllegalStateException("an engine backend has no Java strategy");
            }
        }

        /**
         * Ends a round: for GCM decryption the first round only hashed the ciphertext, and
         * this checks the tag.
         *
         * @return whether the segments run again (GCM decryption whose tag matched)
         * @throws BadPaddingException a GCM tag that does not match (nothing was written)
         */
        boolean authenticate() throws BadPaddingException {
            MemorySegment scratch = NativeCall.run(Errors::checkCrypto, s -> (int) Native.SEGMENTED_AUTHENTICATE
                    .invokeExact(message, input, Errors.sizeSlot(s), Errors.errorSlot(s)));
            return scratch.get(java.lang.foreign.ValueLayout.JAVA_INT, 8) != 0;
        }

        long finish() throws BadPaddingException {
            return Errors.size(NativeCall.run(Errors::checkCrypto, s -> (int) Native.SEGMENTED_FINISH.invokeExact(
                    message, input, output, output.byteSize(), Errors.sizeSlot(s), Errors.errorSlot(s))));
        }

        /**
         * The Java Threads strategy (a static split): the body cut into {@code threads}
         * equal segments (at block
         * boundaries), each on a new Thread, all joined before returning (even when one
         * failed, or a thread could not be started). A body that cannot be split
         * (alignment 0) or is shorter than one block per thread runs on the caller.
         */
        void javaThreads(long body, long alignment, int threads) {
            if (body > output.byteSize()) {
                // Too small an output: the library's finish names the size it needs.
                return;
            }
            long blocks = alignment == 0 ? 1 : Math.max(1, body / alignment);
            int count = (int) Math.min(threads, blocks);
            if (count <= 1) {
                segment(0, body);
                return;
            }
            long[] cuts = new long[count + 1];
            for (int i = 1; i < count; i++) {
                cuts[i] = blocks * i / count * alignment;
            }
            cuts[count] = body;
            List<Thread> started = new ArrayList<>(count);
            Throwable[] failures = new Throwable[count];
            try {
                for (int i = 0; i < count; i++) {
                    int index = i;
                    Thread thread = new Thread(() -> {
                        try {
                            segment(cuts[index], cuts[index + 1] - cuts[index]);
                        } catch (Throwable t) {
                            failures[index] = t;
                        }
                    }, "parcrypt-java-threads-" + i);
                    thread.start();
                    started.add(thread);
                }
            } catch (RuntimeException | Error e) {
                // A thread that could not start: the ones running still finish first.
                failed = true;
                joinAll(started);
                throw e;
            }
            joinAll(started);
            for (Throwable failure : failures) {
                if (failure != null) {
                    throw rethrown(failure);
                }
            }
        }
    }

    /**
     * Waits for every thread, even when interrupted: they write into the caller's output,
     * which must not be handed back while they run. The interrupt is kept for the caller.
     */
    private static void joinAll(List<Thread> threads) {
        boolean interrupted = false;
        for (Thread thread : threads) {
            while (true) {
                try {
                    thread.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** A failure caught on the way up, thrown again as it was (checked ones wrapped). */
    private static RuntimeException rethrown(Throwable failure) {
        if (failure instanceof Error error) {
            throw error;
        }
        return failure instanceof RuntimeException runtime ? runtime : Errors.unexpected(failure);
    }

    /**
     * The ForkJoin strategy (recursive halving): halve at a block boundary until a segment is at most the threshold.
     * A task returns only once both its halves have: {@code invokeAll} would rethrow the
     * first half's failure at once, while the other half may still be writing into the
     * caller's output through the native message that the caller then frees.
     */
    private static final class Halves extends RecursiveAction {
        private static final long serialVersionUID = 1L;

        private final transient Job job;
        private final long start;
        private final long end;
        private final long alignment;
        private final int threshold;

        Halves(Job job, long start, long end, long alignment, int threshold) {
            this.job = job;
            this.start = start;
            this.end = end;
            this.alignment = alignment;
            this.threshold = threshold;
        }

        @Override
        protected void compute() {
            if (end > job.outputSize()) {
                // Too small an output: the library's finish names the size it needs.
                return;
            }
            long length = end - start;
            long middle = alignment == 0 ? start : start + length / 2 / alignment * alignment;
            if (length <= threshold || middle == start) {
                job.segment(start, length);
                return;
            }
            Halves second = new Halves(job, middle, end, alignment, threshold);
            second.fork();
            Throwable failure = null;
            try {
                new Halves(job, start, middle, alignment, threshold).compute();
            } catch (Throwable t) {
                failure = t;
            }
            // Joined whatever the first half did (a failure makes the segments not yet
            // begun skip their work, so this is quick).
            try {
                second.join();
            } catch (Throwable t) {
                if (failure == null) {
                    failure = t;
                } else {
                    failure.addSuppressed(t);
                }
            }
            if (failure != null) {
                throw rethrown(failure);
            }
        }
    }
}
