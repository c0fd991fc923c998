package dev.parcrypt;

import java.util.Objects;
import java.util.concurrent.ForkJoinPool;

/**
 * Where a cipher's work runs. The engine's own backends run inside the native library:
 * {@link #seq()} (the calling thread), {@link #threads(int)} (a static split over
 * threads, as OpenMP), {@link #pool(int)} (work items taken in turn by the caller and the
 * pool's threads), {@link #auto()} (a cost model
 * measured on this machine picks per message), {@link #opencl()} and {@link #cuda()}.
 *
 * <p>Two more are Java's own strategies, run as real backends:
 * {@link #javaThreads(int)} splits a message into N equal segments and runs
 * each on a new {@link Thread}; {@link #forkJoin(int)} halves it in a {@link
 * java.util.concurrent.RecursiveAction} down to a threshold on a {@link ForkJoinPool}. Each
 * segment is one call into the library's one-thread kernel at its offset (the CTR and GCM
 * counter, CBC's chain and GCM's partial GHASH sums are the library's). GCM decryption
 * runs its segments twice: the first time they only hash the ciphertext, the library checks
 * the tag, and only then do they decrypt into the output, so a forged message never puts
 * plaintext there. A call returns only once all of its segments have, even when one
 * failed. CBC encryption cannot be split (each block chains on the one before) and neither
 * can CBC decryption in place: those run as one segment on the calling thread.
 */
public final class Backend {
    /** The kinds: the engine's own, and the two Java strategies. */
    enum Kind { ENGINE, JAVA_THREADS, FORK_JOIN }

    /** ForkJoin's default threshold: segments of at most this many bytes are not halved. */
    public static final int DEFAULT_FORK_JOIN_THRESHOLD = 256 << 10;

    final Kind kind;
    final String engineName;
    final int threads;
    final int threshold;
    final ForkJoinPool pool;

    private Backend(Kind kind, String engineName, int threads, int threshold, ForkJoinPool pool) {
        this.kind = kind;
        this.engineName = engineName;
        this.threads = threads;
        this.threshold = threshold;
        this.pool = pool;
    }

    private static Backend engine(String name, int threads) {
        if (threads < 0) {
            throw new IllegalArgumentException("threads must be 0 (one per core) or more, got " + threads);
        }
        return new Backend(Kind.ENGINE, name, threads, 0, null);
    }

    /** @return one thread: the caller's */
    public static Backend seq() {
        return engine("seq", 0);
    }

    /**
     * @param threads the threads, 0 for one per core
     * @return a static split over threads (as OpenMP's parallel for)
     */
    public static Backend threads(int threads) {
        return engine("threads", threads);
    }

    /** @return the engine's pool (the caller and its threads take work items in turn), one thread per core */
    public static Backend pool() {
        return engine("pool", 0);
    }

    /**
     * @param threads the pool's threads, 0 for one per core
     * @return the engine's pool (the caller and its threads take work items in turn)
     */
    public static Backend pool(int threads) {
        return engine("pool", threads);
    }

    /** @return the engine's choice per message, by a cost model measured on this machine */
    public static Backend auto() {
        return engine("auto", 0);
    }

    /** @return the OpenCL device (fails when there is none) */
    public static Backend opencl() {
        return engine("opencl", 0);
    }

    /** @return the CUDA device (fails when there is none) */
    public static Backend cuda() {
        return engine("cuda", 0);
    }

    /**
     * An engine backend by its name, as the command line's {@code --backend} takes it.
     *
     * @param name seq, threads, pool, auto, opencl or cuda
     * @param threads the threads for threads, pool and auto; 0 for one per core
     * @return the backend
     */
    public static Backend named(String name, int threads) {
        Objects.requireNonNull(name, "name");
        return switch (name) {
            case "java-threads" -> javaThreads(threads == 0 ? Runtime.getRuntime().availableProcessors() : threads);
            case "fork-join" -> forkJoin();
            default -> engine(name, threads);
        };
    }

    /**
     * @param threads the number of threads (and equal segments) per message
     * @return Java {@link Thread}s with a static equal split, started for each message
     */
    public static Backend javaThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("javaThreads needs at least 1 thread, got " + threads);
        }
        return new Backend(Kind.JAVA_THREADS, "seq", threads, 0, null);
    }

    /** @return ForkJoin on the common pool, halving down to {@link #DEFAULT_FORK_JOIN_THRESHOLD} */
    public static Backend forkJoin() {
        return forkJoin(ForkJoinPool.commonPool(), DEFAULT_FORK_JOIN_THRESHOLD);
    }

    /**
     * @param threshold segments of at most this many bytes are not halved further
     * @return ForkJoin on the common pool
     */
    public static Backend forkJoin(int threshold) {
        return forkJoin(ForkJoinPool.commonPool(), threshold);
    }

    /**
     * @param pool the pool the tasks run on
     * @param threshold segments of at most this many bytes are not halved further
     * @return ForkJoin on {@code pool}
     */
    public static Backend forkJoin(ForkJoinPool pool, int threshold) {
        Objects.requireNonNull(pool, "pool");
        if (threshold < 16) {
            throw new IllegalArgumentException("the ForkJoin threshold must be at least 16 bytes, got " + threshold);
        }
        return new Backend(Kind.FORK_JOIN, "seq", 0, threshold, pool);
    }

    /** @return the backend's name: an engine backend's, or java-threads, fork-join */
    public String name() {
        return switch (kind) {
            case ENGINE -> engineName;
            case JAVA_THREADS -> "java-threads";
            case FORK_JOIN -> "fork-join";
        };
    }

    @Override
    public String toString() {
        return switch (kind) {
            case ENGINE -> threads == 0 ? engineName : engineName + "(" + threads + ")";
            case JAVA_THREADS -> "java-threads(" + threads + ")";
            case FORK_JOIN -> "fork-join(threshold " + threshold + ")";
        };
    }
}
