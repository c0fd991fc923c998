package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import javax.crypto.AEADBadTagException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Java strategies ({@link Backend#javaThreads(int)}, {@link Backend#forkJoin(int)}) hold
 * the library's promises: GCM decryption puts no plaintext where the caller can see it
 * before the tag matched, and a message's segments have all ended before the call returns.
 */
class SegmentsSafetyTest {
    static final byte[] NONCE = new byte[12];
    static final byte[] AAD = {4, 2};
    static final byte SENTINEL = (byte) 0xa5;

    static Stream<Backend> javaBackends() {
        return Stream.of(Backend.javaThreads(2), Backend.javaThreads(5), Backend.forkJoin(Support.POOL, 4096),
                Backend.forkJoin(Support.POOL, 16));
    }

    /**
     * Issue 31 finding 2 (the Java calls): a forged GCM message decrypted by a Java strategy
     * into native memory filled with a sentinel never shows its plaintext there: not right
     * after any segment (looked at on the segment's thread), not to a second thread that
     * watches the output during the call, nor after it (the body is zeroed, the rest keeps
     * the sentinel). Before the fix each segment decrypted into the output and only the
     * finish, after every segment, checked the tag and wiped it.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("javaBackends")
    void a_forged_gcm_message_never_shows_plaintext(Backend backend) throws Exception {
        SplittableRandom random = new SplittableRandom(31);
        byte[] key = Support.bytes(random, 16);
        for (int length : new int[] {1, 17, 1000, (1 << 20) + 3, 8 << 20}) {
            byte[] plaintext = Support.bytes(random, length);
            byte[] forged;
            try (Cipher seq = Parcrypt.cipher("aes-128-gcm", key, null, Backend.seq())) {
                forged = seq.encryptWithIv(NONCE, plaintext, AAD);
            }
            forged[length / 2] ^= 0x01;
            try (Cipher cipher = Parcrypt.cipher("aes-128-gcm", key, null, backend);
                    Arena arena = Arena.ofShared()) {
                MemorySegment input = arena.allocateFrom(ValueLayout.JAVA_BYTE, forged);
                MemorySegment output = arena.allocate(length + 64);
                output.fill(SENTINEL);
                AtomicBoolean stop = new AtomicBoolean();
                AtomicBoolean seen = new AtomicBoolean();
                Thread watcher = new Thread(() -> {
                    byte[] window = new byte[16];
                    while (!stop.get()) {
                        for (long offset = 0; offset + 16 <= length && !seen.get(); offset += 4096) {
                            MemorySegment.copy(output, ValueLayout.JAVA_BYTE, offset, window, 0, 16);
                            if (Arrays.equals(window, 0, 16, plaintext, (int) offset, (int) offset + 16)) {
                                seen.set(true);
                            }
                        }
                    }
                }, "plaintext-watcher");
                AtomicBoolean left = new AtomicBoolean();
                Segments.watch = new Segments.Watch() {
                    @Override
                    public void after(long offset, long segmentLength) {
                        int run = (int) Math.min(16, segmentLength);
                        byte[] written = output.asSlice(offset, run).toArray(ValueLayout.JAVA_BYTE);
                        if (Arrays.equals(written, 0, run, plaintext, (int) offset, (int) offset + run)) {
                            left.set(true);
                        }
                    }
                };
                watcher.start();
                try {
                    assertThrows(AEADBadTagException.class, () -> cipher.decryptWithIv(NONCE, input, output, AAD));
                } finally {
                    Segments.watch = null;
                    stop.set(true);
                    watcher.join();
                }
                String what = backend + " " + length;
                assertFalse(left.get(), what + ": a segment left plaintext in the output");
                assertFalse(seen.get(), what + ": plaintext was in the output during the call");
                byte[] after = output.toArray(ValueLayout.JAVA_BYTE);
                assertFalse(sharesARun(after, plaintext), what + ": a 16-byte run of plaintext in the output");
                int changed = -1;
                for (int i = 0; i < after.length && changed < 0; i++) {
                    if (after[i] != (i < length ? 0 : SENTINEL)) {
                        changed = i;
                    }
                }
                assertEquals(-1, changed, what + ": the body zeroed, the rest untouched (first wrong byte)");

                // In place, the ciphertext is all that is ever there.
                MemorySegment buffer = arena.allocateFrom(ValueLayout.JAVA_BYTE, forged);
                assertThrows(AEADBadTagException.class, () -> cipher.decryptWithIv(NONCE, buffer, buffer, AAD));
                assertFalse(sharesARun(buffer.toArray(ValueLayout.JAVA_BYTE), plaintext), what + " in place");
            }
        }
    }

    /** Genuine GCM messages through the two rounds give what the one-thread backend gives. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("javaBackends")
    void genuine_gcm_messages_equal_seq(Backend backend) throws Exception {
        SplittableRandom random = new SplittableRandom(32);
        byte[] key = Support.bytes(random, 32);
        try (Cipher seq = Parcrypt.cipher("aes-256-gcm", key, null, Backend.seq());
                Cipher cipher = Parcrypt.cipher("aes-256-gcm", key, null, backend);
                Arena arena = Arena.ofConfined()) {
            for (int length : new int[] {0, 1, 15, 16, 17, 1000, (1 << 20) + 3}) {
                byte[] plaintext = Support.bytes(random, length);
                byte[] sealed = seq.encryptWithIv(NONCE, plaintext, AAD);
                String what = backend + " " + length;
                assertArrayEquals(sealed, cipher.encryptWithIv(NONCE, plaintext, AAD), what + " encrypt");
                assertArrayEquals(plaintext, cipher.decryptWithIv(NONCE, sealed, AAD), what + " decrypt");
                assertArrayEquals(seq.decryptWithIv(NONCE, sealed, AAD), plaintext, what + " seq");
                MemorySegment buffer = arena.allocateFrom(ValueLayout.JAVA_BYTE, sealed);
                long written = cipher.decryptWithIv(NONCE, buffer, buffer, AAD);
                assertEquals(length, written, what);
                assertArrayEquals(plaintext, buffer.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE),
                        what + " in place");
            }
        }
    }

    static Stream<Backend> twoSegmentBackends() {
        return Stream.of(Backend.javaThreads(2), Backend.forkJoin(new ForkJoinPool(2), 4096));
    }

    /**
     * Issue 31 finding 7: when one segment fails, the call returns only after every other
     * segment has ended. The first segment waits until the second has begun, then fails;
     * the second is still running (it takes 300 ms) when the failure could be reported.
     * Before the fix ForkJoin's {@code invokeAll} rethrew the first failure at once, and the
     * caller zeroed the output and freed the native message under the running second half.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("twoSegmentBackends")
    void a_failed_segment_waits_for_its_siblings(Backend backend) throws Exception {
        CountDownLatch secondBegun = new CountDownLatch(1);
        AtomicBoolean secondEnded = new AtomicBoolean();
        Segments.watch = new Segments.Watch() {
            @Override
            public void before(long offset) {
                if (offset == 0) {
                    try {
                        secondBegun.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    throw new IllegalStateException("the first segment fails");
                }
                secondBegun.countDown();
                try {
                    Thread.sleep(300);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                secondEnded.set(true);
                // It fails too, so that code which does not wait never reaches a freed message.
                throw new IllegalStateException("the second segment fails");
            }
        };
        try (Cipher cipher = Parcrypt.cipher("aes-128-ctr", new byte[16], null, backend)) {
            byte[] input = new byte[8192];
            IllegalStateException failure = assertThrows(IllegalStateException.class,
                    () -> cipher.decryptWithIv(new byte[16], input, null));
            boolean endedBeforeReturn = secondEnded.get();
            assertEquals(0, secondBegun.getCount(), "the second segment ran at the same time");
            assertTrue(endedBeforeReturn, backend + ": the call returned while a segment still ran");
            assertTrue(failure.getMessage().contains("segment fails"), failure.getMessage());
        } finally {
            Segments.watch = null;
        }
    }

    /** Two longs: 16 bytes of an array read at any offset. */
    private record Run(long low, long high) {
        static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

        static Run at(byte[] bytes, int offset) {
            return new Run((long) LONGS.get(bytes, offset), (long) LONGS.get(bytes, offset + 8));
        }
    }

    /**
     * Whether {@code output} holds any 16 bytes of {@code plaintext} in a row, anywhere: the
     * output's distinct runs (few, in a wiped buffer) against every run of the plaintext.
     */
    static boolean sharesARun(byte[] output, byte[] plaintext) {
        Set<Run> runs = new HashSet<>();
        for (int i = 0; i + 16 <= output.length; i++) {
            runs.add(Run.at(output, i));
        }
        for (int i = 0; i + 16 <= plaintext.length; i++) {
            if (runs.contains(Run.at(plaintext, i))) {
                return true;
            }
        }
        return false;
    }
}
