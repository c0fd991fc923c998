package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Published vectors (tests/vectors: NIST SP 800-38A for ECB, CBC and CTR; the GCM
 * specification's test cases 1-18) on every CPU backend, the Java strategies included.
 */
class VectorsTest {
    static Stream<Backend> backends() {
        return Support.backends().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void sp800_38a_ecb_cbc_ctr(Backend backend) throws Exception {
        int checked = 0;
        for (Support.Vector vector : Support.vectors("aes_sp800_38a.txt")) {
            String[] parts = vector.section().split("-");
            String mode = parts[0];
            String name = parts[1].replace("aes", "aes-") + "-" + mode;
            byte[] iv = mode.equals("ecb") ? null : vector.get("iv");
            try (Cipher cipher = Parcrypt.cipher(name, vector.get("key"), iv, backend, false)) {
                byte[] plaintext = vector.get("plaintext");
                assertArrayEquals(vector.get("ciphertext"), cipher.encrypt(plaintext), vector.section() + " on " + backend);
                assertArrayEquals(plaintext, cipher.decrypt(vector.get("ciphertext")), vector.section() + " on " + backend);
            }
            checked++;
        }
        assertEquals(9, checked);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    void gcm_specification_cases(Backend backend) throws IOException, Exception {
        int checked = 0;
        for (Support.Vector vector : Support.vectors("aes_gcm_spec.txt")) {
            byte[] key = vector.get("key");
            String name = "aes-" + key.length * 8 + "-gcm";
            byte[] aad = vector.get("aad");
            byte[] expected = concat(vector.get("ciphertext"), vector.get("tag"));
            // Cases 5, 11 and 17 use 8-byte IVs, refused unless asked for (issue 31 finding 3).
            try (Cipher cipher = Parcrypt.cipherAllowingShortGcmIv(name, key, vector.get("iv"), backend)) {
                assertArrayEquals(expected, cipher.encrypt(vector.get("plaintext"), aad), vector.section());
                assertArrayEquals(vector.get("plaintext"), cipher.decrypt(expected, aad), vector.section());
            }
            checked++;
        }
        assertEquals(18, checked);
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
