package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * parcrypt against javax.crypto (the JDK's own provider) for AES ECB, CBC, CTR and GCM, on
 * random keys of every length, sizes around the block and segment edges, every CPU
 * backend (JavaThreads and ForkJoin included), and every kind of memory: byte[], heap and
 * direct ByteBuffers, native MemorySegments, in place.
 */
class DifferentialTest {
    static final int[] SIZES = {0, 1, 15, 16, 17, 31, 33, 100, 1000, 4095, 4096, 4097, 65_537, 300_007, (1 << 20) + 5};

    static Stream<Backend> backends() {
        return Support.backends().stream();
    }

    /** What javax.crypto makes of the message (GCM: ciphertext then tag, as parcrypt). */
    static byte[] jce(String mode, byte[] key, byte[] iv, byte[] aad, byte[] input, boolean encrypt) throws Exception {
        String transformation = switch (mode) {
            case "ecb" -> "AES/ECB/PKCS5Padding";
            case "cbc" -> "AES/CBC/PKCS5Padding";
            case "ctr" -> "AES/CTR/NoPadding";
            default -> "AES/GCM/NoPadding";
        };
        javax.crypto.Cipher cipher = javax.crypto.Cipher.getInstance(transformation);
        int operation = encrypt ? javax.crypto.Cipher.ENCRYPT_MODE : javax.crypto.Cipher.DECRYPT_MODE;
        SecretKeySpec secret = new SecretKeySpec(key, "AES");
        switch (mode) {
            case "ecb" -> cipher.init(operation, secret);
            case "gcm" -> cipher.init(operation, secret, new GCMParameterSpec(128, iv));
            default -> cipher.init(operation, secret, new IvParameterSpec(iv));
        }
        if (aad != null) {
            cipher.updateAAD(aad);
        }
        return cipher.doFinal(input);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void matches_javax_crypto(Backend backend) throws Exception {
        SplittableRandom random = new SplittableRandom(backend.toString().hashCode());
        int compared = 0;
        for (String mode : new String[] {"ecb", "cbc", "ctr", "gcm"}) {
            for (int keyLength : new int[] {16, 24, 32}) {
                byte[] key = Support.bytes(random, keyLength);
                String name = "aes-" + keyLength * 8 + "-" + mode;
                for (int size : SIZES) {
                    byte[] iv = switch (mode) {
                        case "ecb" -> null;
                        case "gcm" -> Support.bytes(random, size % 3 == 0 ? 12 : 1 + random.nextInt(40));
                        default -> Support.bytes(random, 16);
                    };
                    if (mode.equals("ctr") && size % 2 == 1) {
                        // A counter about to wrap: it must carry across segments as it does in one.
                        iv = Support.HEX.parseHex("ffffffffffffffffffffffffffffff" + "f0");
                    }
                    byte[] aad = mode.equals("gcm") && size % 2 == 0 ? Support.bytes(random, random.nextInt(70)) : null;
                    byte[] plaintext = Support.bytes(random, size);
                    byte[] expected = jce(mode, key, iv, aad, plaintext, true);
                    String what = name + " " + size + " bytes on " + backend;
                    // GCM IVs of 1 to 40 bytes, as javax.crypto takes them: short ones asked for.
                    try (Cipher cipher = Parcrypt.cipherAllowingShortGcmIv(name, key, iv, backend)) {
                        assertArrayEquals(expected, cipher.encrypt(plaintext, aad), "byte[] encrypt " + what);
                        assertArrayEquals(plaintext, cipher.decrypt(expected, aad), "byte[] decrypt " + what);
                        assertArrayEquals(plaintext, jce(mode, key, iv, aad, expected, false), "javax.crypto " + what);
                        // The cipher's own IV has encrypted its one message: the same IV per call.
                        checkBuffers(cipher, iv, plaintext, expected, aad, what);
                        checkSegments(cipher, iv, plaintext, expected, aad, what);
                    }
                    compared++;
                }
            }
        }
        assertEquals(4 * 3 * SIZES.length, compared);
    }

    /** Direct and heap ByteBuffers, positions moved as javax.crypto moves them. */
    static void checkBuffers(Cipher cipher, byte[] iv, byte[] plaintext, byte[] expected, byte[] aad, String what)
            throws Exception {
        ByteBuffer input = ByteBuffer.allocateDirect(plaintext.length + 3);
        input.position(3);
        input.put(plaintext).flip().position(3);
        ByteBuffer output = ByteBuffer.allocateDirect(expected.length + 7);
        output.position(5);
        int written = cipher.encryptWithIv(iv, input, output, aad);
        assertEquals(expected.length, written, what);
        assertEquals(input.limit(), input.position(), what);
        assertEquals(5 + expected.length, output.position(), what);
        byte[] got = new byte[expected.length];
        output.get(5, got);
        assertArrayEquals(expected, got, "direct ByteBuffer encrypt " + what);

        ByteBuffer heapInput = ByteBuffer.wrap(expected);
        ByteBuffer heapOutput = ByteBuffer.allocate(expected.length + 16);
        int opened = cipher.decryptWithIv(null, heapInput, heapOutput, aad);
        assertEquals(plaintext.length, opened, what);
        assertArrayEquals(plaintext, Arrays.copyOf(heapOutput.array(), opened), "heap ByteBuffer decrypt " + what);
    }

    /** Native memory out of place, then in place (the output is the input). */
    static void checkSegments(Cipher cipher, byte[] iv, byte[] plaintext, byte[] expected, byte[] aad, String what)
            throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment input = arena.allocateFrom(ValueLayout.JAVA_BYTE, plaintext);
            MemorySegment output = arena.allocate(expected.length + 32);
            long written = cipher.encryptWithIv(iv, input, output, aad);
            assertArrayEquals(expected, output.asSlice(0, written).toArray(ValueLayout.JAVA_BYTE),
                    "MemorySegment encrypt " + what);

            MemorySegment buffer = arena.allocate(Math.max(expected.length, plaintext.length) + 32);
            MemorySegment.copy(MemorySegment.ofArray(plaintext), 0, buffer, 0, plaintext.length);
            long sealed = cipher.encryptWithIv(iv, buffer.asSlice(0, plaintext.length),
                    buffer.asSlice(0, buffer.byteSize()), aad);
            assertArrayEquals(expected, buffer.asSlice(0, sealed).toArray(ValueLayout.JAVA_BYTE),
                    "in place encrypt " + what);
            long opened = cipher.decryptWithIv(null, buffer.asSlice(0, sealed), buffer, aad);
            assertArrayEquals(plaintext, buffer.asSlice(0, opened).toArray(ValueLayout.JAVA_BYTE),
                    "in place decrypt " + what);
        }
    }
}
