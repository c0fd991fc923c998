package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Many threads sharing one cipher, or each with its own, get what one thread gets. */
class ConcurrencyTest {
    static final int THREADS = 8;
    static final int MESSAGES = 60;

    static Stream<Backend> backends() {
        return Stream.of(Backend.seq(), Backend.pool(2), Backend.auto(), Backend.javaThreads(3),
                Backend.forkJoin(Support.POOL, 1024));
    }

    /** Message {@code index}'s nonce, plaintext and expected output from the one-thread cipher. */
    record Case(byte[] nonce, byte[] plaintext, byte[] sealed) {}

    static List<Case> cases(byte[] key) throws Exception {
        SplittableRandom random = new SplittableRandom(11);
        List<Case> cases = new ArrayList<>();
        try (Cipher reference = Parcrypt.cipher("aes-128-gcm", key, null, Backend.seq())) {
            for (int i = 0; i < MESSAGES; i++) {
                byte[] nonce = ByteBuffer.allocate(12).putInt(8, i).array();
                byte[] plaintext = Support.bytes(random, random.nextInt(i % 10 == 0 ? 200_000 : 5_000));
                cases.add(new Case(nonce, plaintext, reference.encryptWithIv(nonce, plaintext, null)));
            }
        }
        return cases;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void threads_share_one_cipher(Backend backend) throws Exception {
        byte[] key = new byte[16];
        key[3] = 9;
        List<Case> cases = cases(key);
        AtomicInteger checked = new AtomicInteger();
        try (Cipher shared = Parcrypt.cipher("aes-128-gcm", key, null, backend)) {
            runOnThreads(thread -> {
                for (int round = 0; round < 3; round++) {
                    for (int i = thread % 2; i < cases.size(); i += 2) {
                        Case c = cases.get(i);
                        assertArrayEquals(c.sealed(), shared.encryptWithIv(c.nonce(), c.plaintext(), null));
                        assertArrayEquals(c.plaintext(), shared.decryptWithIv(c.nonce(), c.sealed(), null));
                        checked.incrementAndGet();
                    }
                }
            });
        }
        assertEquals(3 * THREADS * MESSAGES / 2, checked.get());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void threads_with_their_own_ciphers(Backend backend) throws Exception {
        byte[] key = new byte[16];
        key[5] = 1;
        List<Case> cases = cases(key);
        AtomicInteger checked = new AtomicInteger();
        runOnThreads(thread -> {
            try (Cipher own = Parcrypt.cipher("aes-128-gcm", key, null, backend)) {
                for (int i = thread % 3; i < cases.size(); i += 3) {
                    Case c = cases.get(i);
                    assertArrayEquals(c.sealed(), own.encryptWithIv(c.nonce(), c.plaintext(), null));
                    assertArrayEquals(c.plaintext(), own.decryptWithIv(c.nonce(), c.sealed(), null));
                    checked.incrementAndGet();
                }
            }
        });
        assertEquals(THREADS * MESSAGES / 3, checked.get());
    }

    /** Closing a cipher while other threads call it: they get IllegalStateException, the JVM lives. */
    @Test
    void closing_under_load_is_safe() throws Exception {
        byte[] message = new byte[64 << 10];
        for (int attempt = 0; attempt < 20; attempt++) {
            // An IV per message: a cipher's own IV encrypts one message (issue 31 finding 3).
            Cipher cipher = Parcrypt.cipher("aes-128-ctr", new byte[16], null, Backend.pool(2));
            byte[] iv = new byte[16];
            AtomicBoolean refused = new AtomicBoolean();
            ExecutorService executor = Executors.newFixedThreadPool(4);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                futures.add(executor.submit(() -> {
                    try {
                        while (true) {
                            assertEquals(message.length, cipher.encryptWithIv(iv, message, null).length);
                        }
                    } catch (IllegalStateException closed) {
                        refused.set(true);
                    }
                }));
            }
            Thread.sleep(2);
            cipher.close();
            for (Future<?> future : futures) {
                future.get();
            }
            executor.shutdown();
            assertTrue(refused.get());
        }
    }

    interface Body {
        void run(int thread) throws Exception;
    }

    static void runOnThreads(Body body) throws Exception {
        ExecutorService executor = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                futures.add(executor.submit(() -> {
                    body.run(thread);
                    return null;
                }));
            }
            for (Future<?> future : futures) {
                future.get();
            }
        } finally {
            executor.shutdown();
        }
    }
}
