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
    /** The AES-128 key of every message. */
    static final byte[] KEY = {0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

    static Stream<Backend> backends() {
        return Stream.of(Backend.seq(), Backend.pool(2), Backend.auto(), Backend.javaThreads(3),
                Backend.forkJoin(Support.POOL, 1024));
    }

    /** Message {@code index}'s nonce, plaintext and expected output from the one-thread cipher. */
    record Case(byte[] nonce, byte[] plaintext, byte[] sealed) {}

    static List<Case> cases() throws Exception {
        SplittableRandom random = new SplittableRandom(11);
        List<Case> cases = new ArrayList<>();
        try (Cipher reference = Parcrypt.cipher("aes-128-gcm", KEY, null, Backend.seq())) {
            for (int i = 0; i < MESSAGES; i++) {
                byte[] nonce = ByteBuffer.allocate(12).putInt(8, i).array();
                byte[] plaintext = Support.bytes(random, random.nextInt(i % 10 == 0 ? 200_000 : 5_000));
                cases.add(new Case(nonce, plaintext, reference.encryptWithIv(nonce, plaintext, null)));
            }
        }
        return cases;
    }

    /** Seals and opens every {@code step}th case from {@code first} with {@code cipher}, counting each. */
    static void checkCases(Cipher cipher, List<Case> cases, int first, int step, AtomicInteger checked)
            throws Exception {
        for (int i = first; i < cases.size(); i += step) {
            Case c = cases.get(i);
            assertArrayEquals(c.sealed(), cipher.encryptWithIv(c.nonce(), c.plaintext(), null));
            assertArrayEquals(c.plaintext(), cipher.decryptWithIv(c.nonce(), c.sealed(), null));
            checked.incrementAndGet();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void threads_share_one_cipher(Backend backend) throws Exception {
        List<Case> cases = cases();
        AtomicInteger checked = new AtomicInteger();
        try (Cipher shared = Parcrypt.cipher("aes-128-gcm", KEY, null, backend)) {
            Support.onThreads(THREADS, thread -> {
                for (int round = 0; round < 3; round++) {
                    checkCases(shared, cases, thread % 2, 2, checked);
                }
            });
        }
        assertEquals(3 * THREADS * MESSAGES / 2, checked.get());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void threads_with_their_own_ciphers(Backend backend) throws Exception {
        List<Case> cases = cases();
        AtomicInteger checked = new AtomicInteger();
        Support.onThreads(THREADS, thread -> {
            try (Cipher own = Parcrypt.cipher("aes-128-gcm", KEY, null, backend)) {
                checkCases(own, cases, thread % 3, 3, checked);
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
}
