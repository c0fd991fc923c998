package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 31 finding 1, the Java readers: a file cut after whole chunks and given 16 junk
 * bytes (a fake empty final chunk, which the parts planner once took for the message's end)
 * is refused by the whole-file call (nothing left behind), by the stream read to its end,
 * and by the channel read at, measured to or positioned past the length the size claims.
 */
class TruncationTest {
    static final int CHUNK = 16 << 10;
    static final int SEALED_CHUNK = CHUNK + 16;

    @TempDir
    Path folder;

    @Test
    void a_cut_file_with_a_fake_final_chunk_is_refused_by_every_reader() throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(31), 3 * CHUNK + 100);
        byte[] key = new byte[16];
        Arrays.fill(key, (byte) 0x31);
        Path plain = folder.resolve("plain");
        Files.write(plain, plaintext);
        Path sealed = folder.resolve("sealed.pc");
        Parcrypt.encryptFile(plain, sealed, key);
        byte[] bytes = Files.readAllBytes(sealed);
        int envelope = bytes.length - (3 * SEALED_CHUNK + 100 + 16);

        for (int kept = 0; kept <= 3; kept++) {
            byte[] cut = Arrays.copyOf(bytes, envelope + kept * SEALED_CHUNK + 16);
            Arrays.fill(cut, envelope + kept * SEALED_CHUNK, cut.length, (byte) 0xa5);
            Path file = folder.resolve("cut-" + kept);
            Files.write(file, cut);
            long claimed = (long) kept * CHUNK;
            String name = "cut after " + kept + " chunks";

            Path out = folder.resolve("out");
            ParcryptFileException whole = assertThrows(ParcryptFileException.class,
                    () -> Parcrypt.decryptFile(file, out, key), name);
            assertEquals(Status.AUTHENTICATION_FAILED, whole.status(), name);
            assertFalse(Files.exists(out), name + ": nothing left behind");

            // The stream hands out the genuine chunks, then fails instead of ending.
            ByteArrayOutputStream released = new ByteArrayOutputStream();
            try (InputStream stream = Parcrypt.newDecryptingStream(file, key)) {
                byte[] buffer = new byte[10_000];
                IOException failed = assertThrows(IOException.class, () -> {
                    for (int read; (read = stream.read(buffer)) != -1; ) {
                        released.write(buffer, 0, read);
                    }
                }, name + ": the stream ended cleanly");
                assertTrue(failed instanceof ParcryptFileException, name + ": " + failed);
            }
            byte[] got = released.toByteArray();
            assertTrue(got.length <= claimed, name);
            assertArrayEquals(Arrays.copyOf(plaintext, got.length), got, name);

            try (DecryptingChannel channel = Parcrypt.openDecryptingChannel(file, key)) {
                assertThrows(ParcryptFileException.class, channel::size, name + ": size");
                channel.position(claimed);
                ByteBuffer buffer = ByteBuffer.allocate(100);
                assertThrows(ParcryptFileException.class, () -> channel.read(buffer), name + ": read at the end");
                assertEquals(0, buffer.position(), name);
            }
            try (DecryptingChannel channel = Parcrypt.openDecryptingChannel(file, key)) {
                channel.position(claimed + 5);
                assertThrows(ParcryptFileException.class, () -> channel.read(ByteBuffer.allocate(1)),
                        name + ": read past the end");
            }
        }
    }
}
