package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.crypto.AEADBadTagException;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Aead}: AES-GCM under a fresh random nonce per message, checked against
 * javax.crypto; and the rules that keep a {@link Cipher}'s IV from being reused by accident
 * (issue 31 finding 3).
 */
class AeadTest {
    static final int[] SIZES = {0, 1, 15, 16, 17, 1000, (1 << 20) + 3};

    static Stream<String> suites() {
        return Stream.of("aes-128-gcm", "aes-192-gcm", "aes-256-gcm");
    }

    /** The JDK's AES-GCM opening {@code nonce || ciphertext || tag}. */
    static byte[] jceOpen(byte[] key, byte[] sealed, byte[] aad) throws Exception {
        javax.crypto.Cipher jce = javax.crypto.Cipher.getInstance("AES/GCM/NoPadding");
        jce.init(javax.crypto.Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"),
                new GCMParameterSpec(128, sealed, 0, Aead.NONCE_BYTES));
        if (aad != null) {
            jce.updateAAD(aad);
        }
        return jce.doFinal(sealed, Aead.NONCE_BYTES, sealed.length - Aead.NONCE_BYTES);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("suites")
    void round_trips_and_the_jdk_opens_what_it_seals(String suite) throws Exception {
        byte[] key = Aead.generateKey(suite);
        assertEquals(Integer.parseInt(suite.substring(4, 7)) / 8, key.length);
        SplittableRandom random = new SplittableRandom(3);
        byte[] aad = {1, 2, 3};
        try (Aead aead = Parcrypt.aead(suite, key)) {
            for (int size : SIZES) {
                byte[] plaintext = Support.bytes(random, size);
                byte[] sealed = aead.seal(plaintext, aad);
                assertEquals(size + Aead.OVERHEAD, sealed.length);
                assertArrayEquals(plaintext, aead.open(sealed, aad), suite + " " + size);
                assertArrayEquals(plaintext, jceOpen(key, sealed, aad), "the JDK opens " + size);
            }
        }
    }

    @Test
    void two_seals_of_one_message_differ() {
        try (Aead aead = Parcrypt.aead("aes-128-gcm", Aead.generateKey("aes-128-gcm"))) {
            byte[] first = aead.seal(new byte[32], null);
            byte[] second = aead.seal(new byte[32], null);
            assertFalse(Arrays.equals(Arrays.copyOf(first, 12), Arrays.copyOf(second, 12)));
            assertFalse(Arrays.equals(first, second));
            Set<String> nonces = new HashSet<>();
            for (int i = 0; i < 1000; i++) {
                nonces.add(Arrays.toString(Arrays.copyOf(aead.seal(new byte[0], null), 12)));
            }
            assertEquals(1000, nonces.size());
        }
    }

    @Test
    void forgeries_truncation_and_wrong_aad_are_refused() throws Exception {
        byte[] key = Aead.generateKey("aes-256-gcm");
        byte[] aad = {9};
        try (Aead aead = Parcrypt.aead("aes-256-gcm", key, Backend.seq())) {
            byte[] sealed = aead.seal("sixteen bytes!!!".getBytes(), aad);
            for (int position : new int[] {0, 11, 12, 27, sealed.length - 1}) {
                byte[] forged = sealed.clone();
                forged[position] ^= (byte) 0x80;
                assertThrows(AEADBadTagException.class, () -> aead.open(forged, aad), "byte " + position);
            }
            assertThrows(AEADBadTagException.class, () -> aead.open(sealed, new byte[] {8}));
            assertThrows(AEADBadTagException.class, () -> aead.open(sealed, null));
            for (int length = 0; length < sealed.length; length++) {
                byte[] cut = Arrays.copyOf(sealed, length);
                AEADBadTagException refused = assertThrows(AEADBadTagException.class, () -> aead.open(cut, aad));
                if (length < Aead.OVERHEAD) {
                    assertTrue(refused.getMessage().contains("too short"), refused.getMessage());
                }
            }
            assertArrayEquals("sixteen bytes!!!".getBytes(), jceOpen(key, sealed, aad));
        }
    }

    @Test
    void bad_arguments_and_threads() throws Exception {
        assertThrows(IllegalArgumentException.class, () -> Parcrypt.aead("aes-128-ctr", new byte[16]));
        assertThrows(IllegalArgumentException.class, () -> Parcrypt.aead("aes-128-gcm", new byte[15]));
        assertThrows(IllegalArgumentException.class, () -> Aead.generateKey("bf-cbc"));
        Aead aead = Parcrypt.aead("aes-128-gcm", new byte[16]);
        AtomicInteger opened = new AtomicInteger();
        Support.onThreads(4, thread -> {
            for (int i = 0; i < 50; i++) {
                if (Arrays.equals(aead.open(aead.seal(new byte[] {7}, null), null), new byte[] {7})) {
                    opened.incrementAndGet();
                }
            }
        });
        assertEquals(200, opened.get());
        aead.close();
        assertThrows(IllegalStateException.class, () -> aead.seal(new byte[1], null));
    }

    /**
     * Issue 31 finding 3: a cipher made with an IV encrypted every message under it (two CTR
     * or GCM messages then XOR to the XOR of their plaintexts). Now it encrypts one.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("creationIvSuites")
    void a_cipher_iv_encrypts_one_message(String suite, int ivLength) throws Exception {
        byte[] key = new byte[16];
        try (Cipher cipher = Parcrypt.cipher(suite, key, new byte[ivLength])) {
            byte[] first = cipher.encrypt(new byte[32]);
            ParcryptException again = assertThrows(ParcryptException.class, () -> cipher.encrypt(new byte[32]));
            assertEquals(Status.STATE, again.status());
            assertTrue(again.getMessage().contains("IV of its own"), again.getMessage());
            assertArrayEquals(new byte[32], cipher.decrypt(first));
            assertArrayEquals(new byte[32], cipher.decrypt(first));
            byte[] other = new byte[ivLength];
            other[0] = 1;
            assertArrayEquals(new byte[32], cipher.decryptWithIv(other, cipher.encryptWithIv(other, new byte[32], null), null));
        }
    }

    static Stream<Arguments> creationIvSuites() {
        return Stream.of(
                Arguments.of("aes-128-gcm", 12),
                Arguments.of("aes-128-ctr", 16),
                Arguments.of("bf-cbc", 8));
    }

    /** Issue 31 finding 3: of eight threads racing under one creation IV, exactly one encrypts. */
    @Test
    void threads_racing_for_the_iv_let_exactly_one_encrypt() throws Exception {
        for (int trial = 0; trial < 10; trial++) {
            try (Cipher cipher = Parcrypt.cipher("aes-128-gcm", new byte[16], new byte[12])) {
                CyclicBarrier barrier = new CyclicBarrier(8);
                AtomicInteger encrypted = new AtomicInteger();
                AtomicInteger refused = new AtomicInteger();
                Support.onThreads(8, thread -> {
                    barrier.await();
                    try {
                        cipher.encrypt(new byte[4096]);
                        encrypted.incrementAndGet();
                    } catch (ParcryptException e) {
                        refused.incrementAndGet();
                    }
                });
                assertEquals(1, encrypted.get());
                assertEquals(7, refused.get());
            }
        }
    }

    /** Issue 31 finding 3: a 1-byte GCM IV was accepted; IVs under 12 bytes are refused now. */
    @Test
    void short_gcm_ivs_are_refused() {
        for (int length : new int[] {1, 8, 11}) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.cipher("aes-128-gcm", new byte[16], new byte[length]));
            assertTrue(refused.getMessage().contains("GCM IV is refused"), refused.getMessage());
            try (Cipher cipher = Parcrypt.cipher("aes-128-gcm", new byte[16])) {
                assertThrows(IllegalArgumentException.class,
                        () -> cipher.encryptWithIv(new byte[length], new byte[4], null));
            }
        }
    }

    @Test
    void short_gcm_ivs_when_asked_for_match_the_jdk() throws Exception {
        byte[] key = new byte[16];
        byte[] iv = {1, 2, 3, 4, 5, 6, 7, 8};
        try (Cipher cipher = Parcrypt.cipherAllowingShortGcmIv("aes-128-gcm", key, iv, Backend.seq())) {
            byte[] sealed = cipher.encrypt(new byte[20]);
            javax.crypto.Cipher jce = javax.crypto.Cipher.getInstance("AES/GCM/NoPadding");
            jce.init(javax.crypto.Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, iv));
            assertArrayEquals(jce.doFinal(new byte[20]), sealed);
            assertEquals(24, cipher.encryptWithIv(new byte[1], new byte[8], null).length);
        }
    }
}
