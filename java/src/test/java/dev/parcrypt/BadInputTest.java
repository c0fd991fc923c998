package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import javax.crypto.AEADBadTagException;
import javax.crypto.BadPaddingException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad input gets the library's one-line reason as a Java exception of the kind a JCE user
 * expects, and releases nothing: never a crash, never plaintext from a failed tag.
 */
class BadInputTest {
    static final byte[] KEY = new byte[16];
    static final byte[] NONCE = new byte[12];

    static Stream<Backend> backends() {
        return Support.backends().stream();
    }

    static void oneLine(String message) {
        assertFalse(message == null || message.isBlank(), "a message");
        assertFalse(message.contains("\n"), "one line: " + message);
        assertFalse(message.contains("Exception"), "a reason, not a stack trace: " + message);
    }

    @Test
    void wrong_key_iv_and_name_are_illegal_arguments() {
        IllegalArgumentException key = assertThrows(IllegalArgumentException.class,
                () -> Parcrypt.cipher("aes-128-ctr", new byte[15], new byte[16]));
        oneLine(key.getMessage());
        assertTrue(key.getMessage().contains("key"), key.getMessage());
        IllegalArgumentException iv = assertThrows(IllegalArgumentException.class,
                () -> Parcrypt.cipher("aes-128-cbc", KEY, new byte[8]));
        assertTrue(iv.getMessage().contains("IV"), iv.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Parcrypt.cipher("aes-128-ecb", KEY, new byte[16]));
        IllegalArgumentException name = assertThrows(IllegalArgumentException.class,
                () -> Parcrypt.cipher("aes-512-xts", KEY, null));
        oneLine(name.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Parcrypt.cipher("bf-gcm", KEY, NONCE));
        assertThrows(IllegalArgumentException.class, () -> Backend.javaThreads(0));
        assertThrows(IllegalArgumentException.class,
                () -> Parcrypt.cipher("aes-128-ctr", KEY, new byte[16], Backend.named("no-such-backend", 0)));
        try (Cipher cipher = Parcrypt.cipher("aes-128-ctr", KEY)) {
            IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                    () -> cipher.encrypt(new byte[5]));
            assertTrue(missing.getMessage().contains("IV"), missing.getMessage());
            assertEquals(5, cipher.encryptWithIv(new byte[16], new byte[5], null).length);
            assertThrows(IllegalArgumentException.class, () -> cipher.encryptWithIv(new byte[3], new byte[5], null));
            assertThrows(IllegalArgumentException.class, () -> cipher.encrypt(new byte[5], new byte[1]),
                    "AAD is only for GCM");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void tampered_gcm_releases_nothing(Backend backend) throws Exception {
        SplittableRandom random = new SplittableRandom(7);
        byte[] plaintext = Support.bytes(random, 100_003);
        try (Cipher cipher = Parcrypt.cipher("aes-256-gcm", Support.bytes(random, 32), NONCE, backend)) {
            byte[] sealed = cipher.encrypt(plaintext, new byte[] {1, 2});
            for (int position : new int[] {0, 50_000, sealed.length - 17, sealed.length - 1}) {
                byte[] bad = sealed.clone();
                bad[position] ^= 0x40;
                AEADBadTagException tag = assertThrows(AEADBadTagException.class,
                        () -> cipher.decrypt(bad, new byte[] {1, 2}));
                oneLine(tag.getMessage());
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment input = arena.allocateFrom(ValueLayout.JAVA_BYTE, bad);
                    MemorySegment output = arena.allocate(plaintext.length);
                    output.fill((byte) 0x55);
                    assertThrows(AEADBadTagException.class,
                            () -> cipher.decryptWithIv(null, input, output, new byte[] {1, 2}));
                    assertTrue(isZero(output), "a failed tag leaves no plaintext in the output");
                }
            }
            assertThrows(AEADBadTagException.class, () -> cipher.decrypt(sealed, new byte[] {1, 3}), "wrong AAD");
            assertThrows(AEADBadTagException.class, () -> cipher.decrypt(new byte[15]), "shorter than a tag");
            assertArrayEquals(plaintext, cipher.decrypt(sealed, new byte[] {1, 2}));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void bad_padding_and_partial_blocks(Backend backend) throws Exception {
        byte[] iv = new byte[16];
        try (Cipher cipher = Parcrypt.cipher("aes-128-cbc", KEY, iv, backend);
                Cipher other = Parcrypt.cipher("aes-128-cbc", new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, iv, backend)) {
            byte[] sealed = other.encrypt(new byte[40_000]);
            BadPaddingException padding = assertThrows(BadPaddingException.class, () -> cipher.decrypt(sealed));
            oneLine(padding.getMessage());
            assertThrows(IllegalArgumentException.class, () -> cipher.decrypt(new byte[17]), "not whole blocks");
            assertThrows(IllegalArgumentException.class, () -> cipher.decrypt(new byte[0]), "empty padded message");
        }
        try (Cipher unpadded = Parcrypt.cipher("aes-128-ecb", KEY, null, backend, false)) {
            IllegalArgumentException partial = assertThrows(IllegalArgumentException.class,
                    () -> unpadded.encrypt(new byte[33]));
            oneLine(partial.getMessage());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void bad_buffers(Backend backend) {
        try (Cipher cipher = Parcrypt.cipher("aes-128-gcm", KEY, NONCE, backend);
                Arena arena = Arena.ofConfined()) {
            MemorySegment input = arena.allocate(10_000);
            IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                    () -> cipher.encrypt(input, arena.allocate(10_000)));
            assertTrue(small.getMessage().contains("10016"), small.getMessage());
            assertThrows(IllegalArgumentException.class, () -> cipher.encrypt(input, input.asSlice(16)),
                    "overlapping, not in place");
            assertThrows(ReadOnlyBufferException.class,
                    () -> cipher.encrypt(ByteBuffer.allocate(10), ByteBuffer.allocate(64).asReadOnlyBuffer()));
            Arena closed = Arena.ofConfined();
            MemorySegment gone = closed.allocate(64);
            closed.close();
            assertThrows(IllegalStateException.class, () -> cipher.encrypt(gone, arena.allocate(100)));
        }
    }

    @Test
    void a_closed_cipher_refuses_calls() {
        Cipher cipher = Parcrypt.cipher("aes-128-ctr", KEY, new byte[16], Backend.seq());
        cipher.close();
        cipher.close();
        IllegalStateException closed = assertThrows(IllegalStateException.class, () -> cipher.encrypt(new byte[4]));
        assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
        assertTrue(cipher.toString().contains("closed"));
    }

    static boolean isZero(MemorySegment segment) {
        for (long i = 0; i < segment.byteSize(); i++) {
            if (segment.get(ValueLayout.JAVA_BYTE, i) != 0) {
                return false;
            }
        }
        return true;
    }
}
