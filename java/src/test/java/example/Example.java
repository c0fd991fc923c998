package example;

import dev.parcrypt.Backend;
import dev.parcrypt.Cipher;
import dev.parcrypt.Parcrypt;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import javax.crypto.AEADBadTagException;

/** The Java guide's example (docs/JAVA.md), compiled and run by the tests so that it cannot rot. */
public final class Example {
    private Example() {}

    public static void main(String[] args) throws Exception {
        SecureRandom random = new SecureRandom();
        byte[] key = new byte[16];
        byte[] nonce = new byte[12];
        random.nextBytes(key);
        random.nextBytes(nonce);
        byte[] message = "attack at dawn".getBytes(StandardCharsets.UTF_8);

        // One message: AES-128-GCM, ciphertext followed by the 16-byte tag.
        try (Cipher cipher = Parcrypt.cipher("aes-128-gcm", key, nonce, Backend.pool())) {
            byte[] sealed = cipher.encrypt(message);
            byte[] opened = cipher.decrypt(sealed);
            System.out.println(new String(opened, StandardCharsets.UTF_8));
            sealed[0] ^= 1;
            try {
                cipher.decrypt(sealed);
            } catch (AEADBadTagException e) {
                System.out.println("refused: " + e.getMessage());
            }
        }

        // A file, as `parcrypt encrypt --key HEX` writes it, streamed in and out.
        Path folder = Files.createTempDirectory("parcrypt-example");
        Path file = folder.resolve("notes.pc");
        try (OutputStream out = Parcrypt.newEncryptingStream(file, key)) {
            out.write(message);
        }
        try (InputStream in = Parcrypt.newDecryptingStream(file, key)) {
            System.out.println(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        Files.delete(file);
        Files.delete(folder);
    }
}
